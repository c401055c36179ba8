package app

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"

	"switchboard/internal/secret"
	"switchboard/internal/store"
	"switchboard/internal/throttle"
	"switchboard/internal/twilio"
)

// newTwilio makes the Twilio provider: organizations' Twilio accounts are
// their connections (auth tokens opened with the server's key), Twilio
// reaches this server at cfg.PublicURL, and the stream tokens are signed
// with a key derived from the secret key, so that any node (and a
// restarted one) accepts them.
func newTwilio(cfg Config, db store.Connections, sealer *secret.Sealer, log *slog.Logger) (*twilio.Provider, error) {
	tc := cfg.Twilio
	tc.PublicURL = cfg.PublicURL
	tc.Log = log
	if sealer != nil {
		tc.TokenKey = sealer.Digest([]byte("twilio media stream tokens"))
	}
	accounts := twilio.NewAccounts(nil, sealer)
	tc.Accounts = func(ctx context.Context, connID string) (twilio.Account, error) {
		conn, err := db.GetConnectionAnyOrg(ctx, connID)
		if err != nil {
			return twilio.Account{}, err
		}
		return accounts.Account(conn)
	}
	return twilio.New(tc)
}

// refusalBudget puts a provider's callbacks (Twilio's webhooks and media
// streams) behind the shared budget of refusals per client address: a
// client whose requests keep failing the signature check (403) gets 429
// before the connection lookup and the HMAC a forged request costs.
func refusalBudget(h http.Handler, refusals *throttle.Limiter, proxies throttle.Proxies) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var adm throttle.Admission
		if refusals != nil {
			adm = refusals.Admit(proxies.Client(r))
		}
		if adm.Blocked {
			w.Header().Set("Retry-After", throttle.RetryAfter(adm.Wait))
			http.Error(w, "too many refused requests from this address; retry later", http.StatusTooManyRequests)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		refusals.Done(adm, sw.status == http.StatusForbidden)
	})
}

// statusWriter keeps the status a handler answered; it can be hijacked
// (a media stream's websocket upgrade).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
