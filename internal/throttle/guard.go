package throttle

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// Guard puts h behind l, the budget of refusals per client address, for
// the handlers outside the REST API's own middleware (a provider's
// signed callbacks, the metrics token): a client that has spent its
// budget is answered by blocked (with the wait before it may try again)
// before h runs, so a flood of bad requests costs no lookup and no HMAC;
// otherwise h answers, and an answer whose status refused reports spends
// the budget (a success gives the admission back). A nil l guards nothing.
// The writer h gets can be hijacked (a websocket upgrade).
func Guard(l *Limiter, proxies Proxies, h http.Handler, refused func(status int) bool, blocked func(w http.ResponseWriter, wait time.Duration)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l == nil {
			h.ServeHTTP(w, r)
			return
		}
		adm := l.Admit(proxies.Client(r))
		if adm.Blocked {
			w.Header().Set("Retry-After", RetryAfter(adm.Wait))
			blocked(w, adm.Wait)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		l.Done(adm, refused(sw.status))
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

// Hijack hands over the connection (net/http's Hijacker), for a
// handler that upgrades it.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap gives http.ResponseController the writer underneath (Flush,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
