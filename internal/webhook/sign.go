package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks specification. Receivers read them
// case-insensitively, as HTTP requires.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix marks a serialized signing secret, so that people and secret
// scanners can recognise one and receivers know which scheme it belongs to.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock, in either direction. The reference libraries use 5
// minutes: wide enough for clock skew and slow networks, narrow enough that a
// captured delivery cannot be replayed later.
const DefaultTolerance = 5 * time.Minute

// Key sizes the specification allows for HMAC secrets (192 to 512 bits).
// Refusing anything shorter keeps an empty or truncated secret from silently
// producing signatures anyone could forge.
const (
	minKeyLen = 24
	maxKeyLen = 64
)

// Errors returned by Verify, one per reason a delivery is refused, so that a
// receiver can log (or count) why without parsing messages. All of them mean
// "do not process this request"; only ErrInvalidSecret is the receiver's own
// configuration fault rather than the request's.
var (
	// ErrMissingHeaders means webhook-id, webhook-timestamp or webhook-signature is absent.
	ErrMissingHeaders = errors.New("webhook: missing signature headers")
	// ErrInvalidTimestamp means webhook-timestamp is not an integer number of Unix seconds.
	ErrInvalidTimestamp = errors.New("webhook: invalid timestamp header")
	// ErrStale means the timestamp is older than the tolerance: possibly a replay.
	ErrStale = errors.New("webhook: timestamp too old")
	// ErrFuture means the timestamp is further ahead than the tolerance: a
	// sender with a wrong clock, or a delivery forged to outlive the window.
	ErrFuture = errors.New("webhook: timestamp too far in the future")
	// ErrNoMatch means no v1 signature in the header matches any of the secrets.
	ErrNoMatch = errors.New("webhook: no matching signature")
	// ErrInvalidSecret means a configured secret is not "whsec_" + base64 of
	// 24 to 64 bytes, or no secret was given at all.
	ErrInvalidSecret = errors.New("webhook: invalid signing secret")
)

var b64 = base64.StdEncoding

// NewSecret returns a fresh endpoint signing secret: "whsec_" + base64 of 32
// random bytes. Each endpoint gets its own, so a leaked secret exposes one
// endpoint only.
func NewSecret() string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic("webhook: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return SecretPrefix + b64.EncodeToString(key)
}

// decodeSecret returns the HMAC key of a serialized secret. Like the
// reference libraries it also accepts the base64 part without its prefix,
// since people paste it either way. The error never contains the secret.
func decodeSecret(secret string) ([]byte, error) {
	key, err := b64.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return nil, fmt.Errorf("%w: not %s followed by standard base64", ErrInvalidSecret, SecretPrefix)
	}
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return nil, fmt.Errorf("%w: key is %d bytes, want %d to %d", ErrInvalidSecret, len(key), minKeyLen, maxKeyLen)
	}
	return key, nil
}

func decodeSecrets(secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no secret configured", ErrInvalidSecret)
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		k, err := decodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i+1, err)
		}
		keys[i] = k
	}
	return keys, nil
}

// mac is HMAC-SHA256 over "{id}.{ts}.{body}", written piecewise so the body
// is never copied.
func mac(key []byte, msgID, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msgID))
	h.Write([]byte{'.'})
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// checkMsgID refuses ids that would make the signed content ambiguous: the
// specification warns that an id containing "." could shift bytes between
// the id, the timestamp and the body.
func checkMsgID(msgID string) error {
	if msgID == "" || strings.Contains(msgID, ".") {
		return fmt.Errorf("webhook: message id %q must be non-empty and contain no '.'", msgID)
	}
	return nil
}

// Sign returns the Standard Webhooks signature "v1,<base64>" of one delivery
// attempt. ts is the attempt's time (it becomes the webhook-timestamp
// header), not the event's, so each retry gets a fresh signature that passes
// the receiver's replay window.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	return SignAll([]string{secret}, msgID, ts, body)
}

// SignAll signs with every active secret and joins the signatures with
// spaces, as the specification allows. During a rotation the endpoint has
// both its old and its new secret, and a receiver that knows either accepts
// the delivery, so secrets change without a moment of failed verification.
func SignAll(secrets []string, msgID string, ts time.Time, body []byte) (string, error) {
	if err := checkMsgID(msgID); err != nil {
		return "", err
	}
	keys, err := decodeSecrets(secrets)
	if err != nil {
		return "", err
	}
	tsText := strconv.FormatInt(ts.Unix(), 10)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(b64.EncodeToString(mac(k, msgID, tsText, body)))
	}
	return b.String(), nil
}

// Verify checks a received delivery against any of the receiver's secrets,
// the way the specification asks every receiver to: all three headers
// present, a timestamp within tolerance of now (tolerance <= 0 means
// DefaultTolerance), and at least one v1 signature in webhook-signature
// equal, in constant time, to the HMAC of the raw body under one of the
// secrets. Accepting any listed signature under any secret is what lets both
// sides rotate secrets with an overlap. It is Switchboard's own verifier, for
// tests and for integrators writing Go; it returns nil or one of the Err
// values above (wrapped with detail, so use errors.Is). Receivers should
// still dedupe on webhook-id, since a delivery may arrive more than once.
func Verify(secrets []string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	keys, err := decodeSecrets(secrets)
	if err != nil {
		return err
	}
	msgID := first(headerValues(h, HeaderID))
	tsText := first(headerValues(h, HeaderTimestamp))
	sigs := strings.Join(headerValues(h, HeaderSignature), " ")
	var missing []string
	for _, hv := range []struct{ name, value string }{
		{HeaderID, msgID}, {HeaderTimestamp, tsText}, {HeaderSignature, sigs},
	} {
		if strings.TrimSpace(hv.value) == "" {
			missing = append(missing, hv.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrMissingHeaders, strings.Join(missing, ", "))
	}

	// Digits only: ParseInt alone would also accept "+1614265330" and "-5".
	if len(tsText) > 18 || strings.Trim(tsText, "0123456789") != "" {
		return fmt.Errorf("%w: %q is not Unix seconds", ErrInvalidTimestamp, tsText)
	}
	secs, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not Unix seconds", ErrInvalidTimestamp, tsText)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	sent := time.Unix(secs, 0)
	if age := now.Sub(sent); age > tolerance {
		return fmt.Errorf("%w: sent %s ago, tolerance %s", ErrStale, age.Truncate(time.Second), tolerance)
	}
	if ahead := sent.Sub(now); ahead > tolerance {
		return fmt.Errorf("%w: %s ahead, tolerance %s", ErrFuture, ahead.Truncate(time.Second), tolerance)
	}

	// The signed timestamp is the header text as received, so this checks
	// exactly what the sender signed.
	want := make([][]byte, len(keys))
	for i, k := range keys {
		want[i] = mac(k, msgID, tsText, body)
	}
	for _, entry := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue // other schemes (v1a) and garbage are not ours to judge
		}
		got, err := b64.DecodeString(sig)
		if err != nil {
			continue
		}
		for _, w := range want {
			if hmac.Equal(got, w) {
				return nil
			}
		}
	}
	return ErrNoMatch
}

// headerValues is h.Values(name), falling back to a case-insensitive scan
// for headers built by hand or by frameworks that keep the wire's lowercase
// names (serverless events, for one), which h.Values would not find.
func headerValues(h http.Header, name string) []string {
	if v := h.Values(name); len(v) > 0 {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
