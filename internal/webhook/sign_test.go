package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks reference vector, from the specification's own
// libraries (libraries/go/webhook_test.go in standard-webhooks/standard-webhooks).
// Matching it is what lets receivers verify our deliveries with any
// Standard Webhooks library.
const (
	vecSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTimestamp = 1614265330
	vecBody      = `{"test": 2432232314}`
	vecSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vecTime = time.Unix(vecTimestamp, 0)

func TestSignReferenceVector(t *testing.T) {
	t.Parallel()
	got, err := Sign(vecSecret, vecMsgID, vecTime, []byte(vecBody))
	if err != nil {
		t.Fatalf("Sign(vector) error = %v", err)
	}
	if got != vecSignature {
		t.Errorf("Sign(%q, %q, %d, %q) = %q, want %q", vecSecret, vecMsgID, vecTimestamp, vecBody, got, vecSignature)
	}
	// The unprefixed form of a secret is the same key.
	got, err = Sign(strings.TrimPrefix(vecSecret, SecretPrefix), vecMsgID, vecTime, []byte(vecBody))
	if err != nil || got != vecSignature {
		t.Errorf("Sign(unprefixed secret) = %q, %v; want %q, nil", got, err, vecSignature)
	}
}

func TestSignAllOneSignaturePerSecret(t *testing.T) {
	t.Parallel()
	other := NewSecret()
	got, err := SignAll([]string{vecSecret, other}, vecMsgID, vecTime, []byte(vecBody))
	if err != nil {
		t.Fatalf("SignAll error = %v", err)
	}
	second, err := Sign(other, vecMsgID, vecTime, []byte(vecBody))
	if err != nil {
		t.Fatalf("Sign(other) error = %v", err)
	}
	if want := vecSignature + " " + second; got != want {
		t.Errorf("SignAll([vector, other]) = %q, want %q", got, want)
	}
}

func TestSignRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secrets []string
		msgID   string
		want    error // nil: any error
	}{
		{"empty id", []string{vecSecret}, "", nil},
		{"id with a dot", []string{vecSecret}, "msg_a.1614265330", nil},
		{"no secrets", nil, vecMsgID, ErrInvalidSecret},
		{"not base64", []string{"whsec_not base64!"}, vecMsgID, ErrInvalidSecret},
		{"key too short", []string{"whsec_c2hvcnQ="}, vecMsgID, ErrInvalidSecret},
		{"empty secret", []string{""}, vecMsgID, ErrInvalidSecret},
		{"one bad among good", []string{vecSecret, "whsec_"}, vecMsgID, ErrInvalidSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := SignAll(tt.secrets, tt.msgID, vecTime, []byte(vecBody))
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("SignAll(%q, %q) = %q, %v; want error %v", tt.secrets, tt.msgID, got, err, tt.want)
			}
			for _, s := range tt.secrets {
				if len(s) > len(SecretPrefix) && err != nil && strings.Contains(err.Error(), s) {
					t.Errorf("SignAll error %q contains the secret", err)
				}
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := NewSecret(), NewSecret()
	if !strings.HasPrefix(a, SecretPrefix) {
		t.Errorf("NewSecret() = %q, want prefix %q", a, SecretPrefix)
	}
	key, err := decodeSecret(a)
	if err != nil || len(key) != 32 {
		t.Errorf("decodeSecret(NewSecret()) = %d bytes, %v; want 32 bytes, nil", len(key), err)
	}
	if a == b {
		t.Errorf("NewSecret() returned %q twice", a)
	}
}

func vecHeader() http.Header {
	h := http.Header{}
	h.Set(HeaderID, vecMsgID)
	h.Set(HeaderTimestamp, "1614265330")
	h.Set(HeaderSignature, vecSignature)
	return h
}

func TestVerify(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := NewSecret(), NewSecret()
	signed := func(secrets ...string) string {
		s, err := SignAll(secrets, vecMsgID, vecTime, []byte(vecBody))
		if err != nil {
			t.Fatalf("SignAll: %v", err)
		}
		return s
	}
	// flip changes one base64 character of the first signature.
	flip := func(sig string) string {
		b := []byte(sig)
		if b[3] == 'A' {
			b[3] = 'B'
		} else {
			b[3] = 'A'
		}
		return string(b)
	}

	tests := []struct {
		name      string
		secrets   []string
		edit      func(h http.Header)
		body      string
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{name: "reference vector", want: nil},
		{name: "unprefixed secret", secrets: []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, want: nil},
		{name: "body byte changed", body: `{"test": 2432232315}`, want: ErrNoMatch},
		{name: "body with trailing newline", body: vecBody + "\n", want: ErrNoMatch},
		{name: "signature byte changed", edit: func(h http.Header) { h.Set(HeaderSignature, flip(vecSignature)) }, want: ErrNoMatch},
		{name: "id changed", edit: func(h http.Header) { h.Set(HeaderID, "msg_other") }, want: ErrNoMatch},
		{name: "timestamp changed within tolerance", edit: func(h http.Header) { h.Set(HeaderTimestamp, "1614265331") }, want: ErrNoMatch},
		{name: "wrong secret", secrets: []string{newSecret}, want: ErrNoMatch},
		{name: "signature not base64", edit: func(h http.Header) { h.Set(HeaderSignature, "v1,%%%") }, want: ErrNoMatch},
		{name: "only other schemes", edit: func(h http.Header) { h.Set(HeaderSignature, "v1a,"+vecSignature[3:]+" v2,"+vecSignature[3:]) }, want: ErrNoMatch},
		{name: "valid among garbage and other schemes", edit: func(h http.Header) {
			h.Set(HeaderSignature, "garbage v1a,AAAA v1,"+flip(vecSignature)[3:]+"  "+vecSignature+" v1,")
		}, want: nil},
		{name: "signatures split over two header lines", edit: func(h http.Header) {
			h.Set(HeaderSignature, "v1,AAAA")
			h.Add(HeaderSignature, vecSignature)
		}, want: nil},
		{name: "stale by one second", now: vecTime.Add(DefaultTolerance + time.Second), want: ErrStale},
		{name: "stale a day", now: vecTime.Add(24 * time.Hour), want: ErrStale},
		{name: "at the tolerance edge, past", now: vecTime.Add(DefaultTolerance), want: nil},
		{name: "future by one second", now: vecTime.Add(-DefaultTolerance - time.Second), want: ErrFuture},
		{name: "at the tolerance edge, future", now: vecTime.Add(-DefaultTolerance), want: nil},
		{name: "custom tolerance", now: vecTime.Add(time.Minute + time.Second), tolerance: time.Minute, want: ErrStale},
		{name: "missing id", edit: func(h http.Header) { h.Del(HeaderID) }, want: ErrMissingHeaders},
		{name: "missing timestamp", edit: func(h http.Header) { h.Del(HeaderTimestamp) }, want: ErrMissingHeaders},
		{name: "missing signature", edit: func(h http.Header) { h.Del(HeaderSignature) }, want: ErrMissingHeaders},
		{name: "blank signature", edit: func(h http.Header) { h.Set(HeaderSignature, "  ") }, want: ErrMissingHeaders},
		{name: "no headers", edit: func(h http.Header) { clear(h) }, want: ErrMissingHeaders},
		{name: "lowercase keys set without canonicalizing", edit: func(h http.Header) {
			clear(h)
			h["webhook-id"] = []string{vecMsgID}
			h["webhook-timestamp"] = []string{"1614265330"}
			h["webhook-signature"] = []string{vecSignature}
		}, want: nil},
		{name: "timestamp not a number", edit: func(h http.Header) { h.Set(HeaderTimestamp, "yesterday") }, want: ErrInvalidTimestamp},
		{name: "timestamp with sign", edit: func(h http.Header) { h.Set(HeaderTimestamp, "+1614265330") }, want: ErrInvalidTimestamp},
		{name: "timestamp in milliseconds", now: vecTime, edit: func(h http.Header) { h.Set(HeaderTimestamp, "1614265330000") }, want: ErrFuture},
		{name: "timestamp fractional", edit: func(h http.Header) { h.Set(HeaderTimestamp, "1614265330.5") }, want: ErrInvalidTimestamp},
		{name: "timestamp huge", edit: func(h http.Header) { h.Set(HeaderTimestamp, strings.Repeat("9", 30)) }, want: ErrInvalidTimestamp},
		{name: "no secrets configured", secrets: []string{}, want: ErrInvalidSecret},
		{name: "bad secret configured", secrets: []string{"whsec_short"}, want: ErrInvalidSecret},

		// Rotation: during the overlap the sender signs with both secrets
		// and each receiver knows one or both.
		{name: "rotation: signed old, receiver knows new and old", secrets: []string{newSecret, oldSecret},
			edit: func(h http.Header) { h.Set(HeaderSignature, signed(oldSecret)) }, want: nil},
		{name: "rotation: signed new, receiver knows old and new", secrets: []string{oldSecret, newSecret},
			edit: func(h http.Header) { h.Set(HeaderSignature, signed(newSecret)) }, want: nil},
		{name: "rotation: signed both, receiver knows only new", secrets: []string{newSecret},
			edit: func(h http.Header) { h.Set(HeaderSignature, signed(oldSecret, newSecret)) }, want: nil},
		{name: "rotation: signed both, receiver knows only old", secrets: []string{oldSecret},
			edit: func(h http.Header) { h.Set(HeaderSignature, signed(oldSecret, newSecret)) }, want: nil},
		{name: "rotation: old retired, signed old only", secrets: []string{newSecret},
			edit: func(h http.Header) { h.Set(HeaderSignature, signed(oldSecret)) }, want: ErrNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secrets := tt.secrets
			if secrets == nil {
				secrets = []string{vecSecret}
			}
			h := vecHeader()
			if tt.edit != nil {
				tt.edit(h)
			}
			body := tt.body
			if body == "" {
				body = vecBody
			}
			now := tt.now
			if now.IsZero() {
				now = vecTime.Add(10 * time.Second)
			}
			err := Verify(secrets, h, []byte(body), now, tt.tolerance)
			if (tt.want == nil) != (err == nil) || !errors.Is(err, tt.want) {
				t.Errorf("Verify(headers %v, body %q, now %d) = %v, want %v", h, body, now.Unix(), err, tt.want)
			}
		})
	}
}

// FuzzVerify feeds arbitrary header values to the signature-header parser:
// it must never panic, and garbage must never verify.
func FuzzVerify(f *testing.F) {
	f.Add(vecMsgID, "1614265330", vecSignature, []byte(vecBody))
	f.Add("", "", "", []byte(nil))
	f.Add("msg_x", "-1", "v1,", []byte("{}"))
	f.Add("msg.x", "1614265330", "v1,,, v1a,x v1 ,x", []byte("{}"))
	f.Add("msg_x", "00001614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE", []byte("{}"))
	f.Fuzz(func(t *testing.T, msgID, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderID, msgID)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		err := Verify([]string{vecSecret}, h, body, vecTime, 0)
		if err == nil {
			if msgID != vecMsgID || ts != "1614265330" || string(body) != vecBody {
				t.Errorf("Verify(id %q, ts %q, sig %q, body %q) = nil for a delivery the secret never signed", msgID, ts, sig, body)
			}
		}
	})
}

// FuzzSignVerify checks that whatever Sign produces, Verify accepts.
func FuzzSignVerify(f *testing.F) {
	f.Add("msg_p5jXN8AQM9LWM0D4loKWxJek", int64(1614265330), []byte(vecBody))
	f.Add("x", int64(0), []byte(nil))
	f.Fuzz(func(t *testing.T, msgID string, unix int64, body []byte) {
		if unix < 0 || unix > 1<<40 {
			return
		}
		ts := time.Unix(unix, 0)
		sig, err := Sign(vecSecret, msgID, ts, body)
		if err != nil {
			return // ids Sign refuses
		}
		if strings.TrimSpace(msgID) == "" {
			return // Verify reads a blank header as missing
		}
		h := http.Header{}
		h.Set(HeaderID, msgID)
		h.Set(HeaderTimestamp, strconv.FormatInt(unix, 10))
		h.Set(HeaderSignature, sig)
		if err := Verify([]string{vecSecret}, h, body, ts, 0); err != nil {
			t.Errorf("Verify(Sign(id %q, ts %d, body %q)) = %v, want nil", msgID, unix, body, err)
		}
	})
}
