package app

import (
	"context"
	"log/slog"
	"net/http"
	"time"

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
	return throttle.Guard(refusals, proxies, h,
		func(status int) bool { return status == http.StatusForbidden },
		func(w http.ResponseWriter, _ time.Duration) {
			http.Error(w, "too many refused requests from this address; retry later", http.StatusTooManyRequests)
		})
}
