package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"switchboard/internal/id"
)

// Delivery limits.
const (
	// DefaultTimeout bounds one attempt, from connecting to reading the
	// answer, so a hung receiver costs a worker at most this long.
	DefaultTimeout = 10 * time.Second
	// UserAgent identifies Switchboard's deliveries in receivers' logs and
	// firewalls; the version changes only if the wire format does.
	UserAgent = "Switchboard-Webhooks/1"
)

// Message is one event to deliver to one endpoint. ID and Body stay the same
// on every attempt, so the receiver can dedupe on webhook-id; only the
// signing time changes.
type Message struct {
	// ID is "msg_…", unique per event, sent as webhook-id; it contains no '.'.
	ID string
	// Type is the event type, such as "call.ended".
	Type string
	// Timestamp is when the event happened (the payload's "timestamp").
	Timestamp time.Time
	// Body is the JSON payload, exactly the bytes that are signed and sent.
	Body []byte
}

// payload is the body's shape, documented in the package comment.
type payload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// NewMessage builds a Message with a fresh id and the standard payload
// {"type", "timestamp", "data"}, so every event has the same envelope and the
// body is serialized once, before the first attempt, and never again.
// eventType is full-stop delimited identifiers of [A-Za-z0-9_], as the
// specification recommends, so receivers can route on it safely.
func NewMessage(eventType string, at time.Time, data any) (Message, error) {
	if !validEventType(eventType) {
		return Message{}, fmt.Errorf("webhook: event type %q must be dot-separated words of letters, digits and _, such as call.ended", eventType)
	}
	at = at.UTC()
	body, err := json.Marshal(payload{Type: eventType, Timestamp: at, Data: data})
	if err != nil {
		return Message{}, fmt.Errorf("webhook: encoding %s payload: %w", eventType, err)
	}
	return Message{ID: id.New(id.Message), Type: eventType, Timestamp: at, Body: body}, nil
}

func validEventType(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for _, c := range part {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Result is what one attempt did, for the delivery log shown to the user and
// for deciding whether to retry.
type Result struct {
	// Status is the HTTP status answered, 0 if none was.
	Status int
	// Body is the answer as the delivery log shows it (see excerpt): its
	// first 2 KiB as printable text, a summary of a binary answer, or a note
	// on an encoding that could not be decoded. Like Err, it is valid UTF-8
	// with no control characters but newline and tab, whatever the receiver
	// sent, so it can be stored and shown as it is.
	Body string
	// Duration is from sending the request to reading the answer.
	Duration time.Duration
	// Err says why the attempt failed; it is empty exactly when it succeeded.
	Err string
}

// OK reports whether the attempt succeeded: a 2xx answer within the timeout.
func (r Result) OK() bool { return r.Err == "" }

// Sender makes delivery attempts. The zero Sender is ready and safe: it
// delivers through a client built on Guard{}.Transport().
type Sender struct {
	// Client sends the requests; nil means a shared client whose transport
	// is Guard{}.Transport(). A caller-supplied client is responsible for
	// its own SSRF protection (use a Guard's Transport). Its redirect policy
	// is ignored: Deliver never follows redirects.
	Client *http.Client
	// Timeout bounds each attempt; 0 means DefaultTimeout.
	Timeout time.Duration
}

var defaultClient = sync.OnceValue(func() *http.Client {
	return &http.Client{Transport: Guard{}.Transport()}
})

// Deliver makes one attempt to POST m to endpoint, signed with every active
// secret and timestamped now. Success is a 2xx answer: a redirect is a
// failure and is not followed (the specification's advice: following it
// would reach a URL no one vetted, and the user should fix the endpoint), as
// is any other status, a timeout, or a refused or failed connection. Deliver
// never retries; the caller records the Result and asks Backoff when to try
// again.
func (s *Sender) Deliver(ctx context.Context, endpoint string, secrets []string, m Message) Result {
	r := s.deliver(ctx, endpoint, secrets, m)
	// The status line, a Location header and some transport errors quote
	// the receiver.
	r.Err = printable(r.Err, maxErrKept)
	return r
}

// Headers returns the headers of one attempt to deliver m at at, signed
// with every active secret: Content-Type, User-Agent, webhook-id,
// webhook-timestamp and webhook-signature. An HTTP delivery sends them
// with its POST, a listener's stream in its frame (Listener), so both are
// verified the same way.
func Headers(secrets []string, m Message, at time.Time) (http.Header, error) {
	sig, err := SignAll(secrets, m.ID, at, m.Body)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(HeaderID, m.ID)
	h.Set(HeaderTimestamp, fmt.Sprint(at.Unix()))
	h.Set(HeaderSignature, sig)
	return h, nil
}

func (s *Sender) deliver(ctx context.Context, endpoint string, secrets []string, m Message) Result {
	start := time.Now()
	headers, err := Headers(secrets, m, start)
	if err != nil {
		return Result{Err: err.Error()}
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(m.Body))
	if err != nil {
		return Result{Err: "invalid endpoint URL: " + unwrapURLError(err).Error()}
	}
	req.Header = headers
	// Only an excerpt of the answer is kept: compression saves nothing, and
	// setting the header keeps the transport from decoding on its own
	// (readAnswer decodes a gzip answer sent anyway, bounded).
	req.Header.Set("Accept-Encoding", "identity")

	client := defaultClient()
	if s.Client != nil {
		client = s.Client
	}
	noRedirect := *client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	resp, err := noRedirect.Do(req)
	if err != nil {
		return Result{Duration: time.Since(start), Err: describe(ctx, err, timeout)}
	}
	defer resp.Body.Close()
	answer, readErr := readAnswer(resp)
	r := Result{Status: resp.StatusCode, Body: answer, Duration: time.Since(start)}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		// The receiver has accepted the message; a body cut short does not
		// change that.
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		r.Err = fmt.Sprintf(`endpoint answered %s redirecting to "%s"; redirects are not followed, update the endpoint URL`,
			resp.Status, printable(resp.Header.Get("Location"), 512))
	default:
		r.Err = "endpoint answered " + resp.Status
		if readErr != nil {
			r.Err += "; reading the answer: " + describe(ctx, readErr, timeout)
		}
	}
	return r
}

// describe turns a transport error into a sentence for the delivery log.
func describe(ctx context.Context, err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, ErrUnsafeURL):
		var u *unsafeError
		if errors.As(err, &u) {
			return "refused: " + u.msg
		}
		return "refused: " + err.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("timed out after %s", timeout)
	case errors.Is(ctx.Err(), context.Canceled):
		return "canceled before the endpoint answered"
	}
	return unwrapURLError(err).Error()
}

// unwrapURLError drops url.Error's "Post \"https://…\":" prefix, which
// repeats the endpoint the log already shows.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
