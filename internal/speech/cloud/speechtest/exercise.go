package speechtest

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud"
	"switchboard/internal/vendorapi/vendorapitest"
)

// SynthProvider binds a Synthesizer to the fake speaking its protocol.
type SynthProvider struct {
	// Name is the synthesizer's Name and its cloud.Error.Provider.
	Name string
	// NewServer starts the fake (NewOpenAISpeech, NewElevenLabs,
	// NewDeepgramSpeak).
	NewServer func(t testing.TB, script ...Speech) *Server
	// NewSynthesizer builds the synthesizer under test.
	NewSynthesizer func(baseURL, apiKey string, hc *http.Client) speech.Synthesizer
}

// ExerciseSynthesizer runs the behaviour every cloud Synthesizer must have
// against its fake: audio streamed to out before the reply ends, exact
// samples at the provider's rate and the right length and pitch at every
// other, the classification of every failure (Retry-After, a wrong key
// kept out of the error), a bad reply refused, cancellation that returns
// promptly without leaking goroutines, and out's own error returned.
//
// Call it from a test that is not parallel: its first subtest counts the
// process's goroutines. The others run in parallel.
func ExerciseSynthesizer(t *testing.T, p SynthProvider) {
	t.Helper()

	type testBundle struct {
		srv   *Server
		synth speech.Synthesizer
	}
	setup := func(t *testing.T, script ...Speech) *testBundle {
		t.Helper()
		srv := p.NewServer(t, script...)
		return &testBundle{srv: srv, synth: p.NewSynthesizer(srv.URL, APIKey, srv.Client())}
	}
	const text = "Your table for four is booked at half past seven."

	t.Run("CancelNoLeak", func(t *testing.T) {
		LeakCheck(t)
		bundle := setup(t, Speech{Hang: true})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var canceledAt time.Time
		err := bundle.synth.Synthesize(ctx, text, speech.VoiceOptions{SampleRate: 16000}, func([]int16) error {
			if canceledAt.IsZero() {
				canceledAt = time.Now()
				cancel() // barge-in while the reply is still streaming
			}
			return nil
		})
		if canceledAt.IsZero() {
			t.Fatalf("Synthesize: out was never called (err %v)", err)
		}
		if d := time.Since(canceledAt); d > time.Second {
			t.Errorf("Synthesize returned %v after the cancel, want promptly", d)
		}
		ce := vendorapitest.AsError(t, err)
		if !errors.Is(err, context.Canceled) || ce.Retryable || ce.Code != cloud.CodeCanceled {
			t.Errorf("Synthesize after cancel = %v (code %q, retryable %v), want context.Canceled, %q, not retryable", err, ce.Code, ce.Retryable, cloud.CodeCanceled)
		}
	})

	t.Run("Streams", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		bundle := setup(t, Speech{Gate: gate, Chunks: 4})
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		var once sync.Once
		calls := 0
		err := bundle.synth.Synthesize(ctx, text, speech.VoiceOptions{SampleRate: 24000}, func(pcm []int16) error {
			if len(pcm) == 0 {
				t.Errorf("out called with no audio")
			}
			calls++
			once.Do(func() { close(gate) }) // the fake holds the rest of the body until now
			return nil
		})
		if err != nil {
			t.Fatalf("Synthesize with the reply held after its first piece: %v; want audio delivered before the body ends", err)
		}
		if calls < 2 {
			t.Errorf("out called %d times for a reply in 4 pieces, want several", calls)
		}
	})

	t.Run("ExactAtProviderRate", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Speech{Chunks: 7})
		got, err := collect(t.Context(), bundle.synth, text, 24000)
		if err != nil {
			t.Fatalf("Synthesize: %v", err)
		}
		reqs := bundle.srv.Requests()
		if len(reqs) != 1 || reqs[0].Rate != 24000 {
			t.Fatalf("requests = %+v, want one at 24000 Hz", reqs)
		}
		want := Tone(24000, DefaultDuration)
		if !slices.Equal(got, want) {
			t.Errorf("Synthesize at the provider's rate: %d samples, want the %d sent, unchanged (pieces cut mid-sample)", len(got), len(want))
		}
	})

	for _, rate := range []int{8000, 16000, 22050, 44100, 48000} {
		t.Run("Rate"+strconv.Itoa(rate), func(t *testing.T) {
			t.Parallel()
			bundle := setup(t, Speech{Duration: time.Second})
			got, err := collect(t.Context(), bundle.synth, text, rate)
			if err != nil {
				t.Fatalf("Synthesize at %d Hz: %v", rate, err)
			}
			src := bundle.srv.Requests()[0].Rate
			n := len(Tone(src, time.Second))
			if want := (n*rate + src - 1) / src; len(got) != want {
				t.Errorf("Synthesize at %d Hz from %d Hz: %d samples, want %d", rate, src, len(got), want)
			}
			checkTone(t, got, rate)
		})
	}

	vendorapitest.ExerciseClassification(t, p.Name, func(t *testing.T, status int, retryAfter string) error {
		bundle := setup(t, Speech{Status: status, RetryAfter: retryAfter})
		_, err := collect(t.Context(), bundle.synth, text, 16000)
		return err
	})

	t.Run("WrongKey", func(t *testing.T) {
		t.Parallel()
		srv := p.NewServer(t)
		const secret = "sk-wrong-4b1d9e77c0ffee"
		synth := p.NewSynthesizer(srv.URL, secret, srv.Client())
		_, err := collect(t.Context(), synth, text, 16000)
		ce := vendorapitest.AsError(t, err)
		if ce.Status != http.StatusUnauthorized || ce.Retryable {
			t.Errorf("Synthesize with a wrong key: %+v, want 401, not retryable", ce)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(ce.Message, secret) {
			t.Errorf("Synthesize with a wrong key: error %q contains the key", err)
		}
	})

	t.Run("Aborted", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Speech{Abort: true, Chunks: 6})
		_, err := collect(t.Context(), bundle.synth, text, 16000)
		ce := vendorapitest.AsError(t, err)
		if !ce.Retryable || ce.Code != cloud.CodeNetwork {
			t.Errorf("Synthesize with the connection cut mid-reply: %+v, want a retryable %q", ce, cloud.CodeNetwork)
		}
	})

	t.Run("NotPCM", func(t *testing.T) {
		t.Parallel()
		for _, ct := range []string{"audio/mpeg", "application/json"} {
			bundle := setup(t, Speech{ContentType: ct})
			_, err := collect(t.Context(), bundle.synth, text, 16000)
			ce := vendorapitest.AsError(t, err)
			if ce.Retryable || ce.Code != cloud.CodeBadResponse {
				t.Errorf("Synthesize answered %s: %+v, want a non-retryable %q", ct, ce, cloud.CodeBadResponse)
			}
		}
	})

	t.Run("OutFails", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Speech{Chunks: 6})
		boom := errors.New("transport gone")
		calls := 0
		err := bundle.synth.Synthesize(t.Context(), text, speech.VoiceOptions{SampleRate: 16000}, func([]int16) error {
			calls++
			return boom
		})
		if !errors.Is(err, boom) || calls != 1 {
			t.Errorf("Synthesize with out failing: err %v after %d calls, want out's error after 1", err, calls)
		}
	})

	t.Run("NothingToSay", func(t *testing.T) {
		t.Parallel()
		srv := p.NewServer(t)
		synth := p.NewSynthesizer(srv.URL, APIKey, srv.Client())
		if err := synth.Synthesize(t.Context(), " \n", speech.VoiceOptions{SampleRate: 16000}, nil); err != nil {
			t.Errorf("Synthesize(blank) = %v, want nil", err)
		}
		err := synth.Synthesize(t.Context(), text, speech.VoiceOptions{}, nil)
		if ce := vendorapitest.AsError(t, err); ce.Code != cloud.CodeInvalidRequest || !strings.Contains(ce.Message, "sampleRate") {
			t.Errorf("Synthesize without a sample rate = %v, want %q naming sampleRate", err, cloud.CodeInvalidRequest)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("server received %d requests, want none", n)
		}
	})

	t.Run("Name", func(t *testing.T) {
		t.Parallel()
		if got := p.NewSynthesizer("", "", nil).Name(); got != p.Name {
			t.Errorf("Name() = %q, want %q", got, p.Name)
		}
	})
}

// collect synthesizes text at rate and returns all the audio.
func collect(ctx context.Context, s speech.Synthesizer, text string, rate int) ([]int16, error) {
	var all []int16
	err := s.Synthesize(ctx, text, speech.VoiceOptions{SampleRate: rate}, func(pcm []int16) error {
		all = append(all, pcm...)
		return nil
	})
	return all, err
}

// checkTone checks that pcm at rate is still the fakes' 440 Hz tone at
// amplitude 8000: its pitch by zero crossings and its level by RMS, away
// from the edges.
func checkTone(t *testing.T, pcm []int16, rate int) {
	t.Helper()
	mid := pcm[len(pcm)/5 : len(pcm)*4/5]
	var sum float64
	crossings := 0
	for i, v := range mid {
		sum += float64(v) * float64(v)
		if i > 0 && (mid[i-1] < 0) != (v < 0) {
			crossings++
		}
	}
	rms := math.Sqrt(sum / float64(len(mid)))
	freq := float64(crossings) / 2 / (float64(len(mid)) / float64(rate))
	if want := 8000 / math.Sqrt2; math.Abs(rms-want) > want*0.05 {
		t.Errorf("tone at %d Hz has RMS %.0f, want %.0f ± 5%%", rate, rms, want)
	}
	if math.Abs(freq-440) > 440*0.02 {
		t.Errorf("tone at %d Hz has pitch %.1f Hz, want 440 ± 2%%", rate, freq)
	}
}
