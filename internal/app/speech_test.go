package app

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/speechtest"
	"switchboard/internal/speech/local"
)

// speechLog captures what NewSpeechEngines logs, at every level.
type speechLog struct{ buf bytes.Buffer }

func (l *speechLog) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(&l.buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lines decodes the captured JSON lines.
func (l *speechLog) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ln := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if ln == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", ln, err)
		}
		out = append(out, m)
	}
	return out
}

// noSecrets fails the test if any secret appears in the log.
func (l *speechLog) noSecrets(t *testing.T, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(l.buf.String(), s) {
			t.Errorf("the log holds the secret %q:\n%s", s, l.buf.String())
		}
	}
}

func newEngines(t *testing.T, c SpeechConfig) (*SpeechEngines, *speechLog) {
	t.Helper()
	var l speechLog
	e, err := NewSpeechEngines(c, l.logger())
	if err != nil {
		t.Fatalf("NewSpeechEngines(%+v): %v", c, err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("SpeechEngines.Close: %v", err)
		}
	})
	return e, &l
}

func containsSentence(list []string, prefix string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// TestSpeechEnginesDefault: with nothing configured the server runs the
// local engines this build and machine have (both, in the speech_native
// build CI runs) and says, per role, which cloud providers are off and how
// to turn them on.
func TestSpeechEnginesDefault(t *testing.T) {
	t.Parallel()
	e, l := newEngines(t, SpeechConfig{})
	tts, stt, why := local.Available()
	wantT, wantV := []string{}, []string{}
	if stt {
		wantT = []string{"local"}
	}
	if tts {
		wantV = []string{"local"}
	}
	if got := e.Transcribers(); !slices.Equal(got, wantT) {
		t.Errorf("Transcribers() = %q, want %q (local.Available: %s)", got, wantT, why)
	}
	if got := e.Synthesizers(); !slices.Equal(got, wantV) {
		t.Errorf("Synthesizers() = %q, want %q (local.Available: %s)", got, wantV, why)
	}
	if _, ok := e.Transcriber("local"); ok != stt {
		t.Errorf("Transcriber(local) ok = %v, want %v", ok, stt)
	}
	if s, ok := e.Synthesizer("local"); ok != tts || (ok && s.Name() != "local") {
		t.Errorf("Synthesizer(local) = %v, %v; want a local synthesizer: %v", s, ok, tts)
	}
	if _, ok := e.Synthesizer("deepgram"); ok {
		t.Errorf("Synthesizer(deepgram) ok with no Deepgram configured")
	}
	un := e.Unavailable()
	for _, want := range []string{
		"transcriber deepgram: not configured: set SWITCHBOARD_DEEPGRAM_API_KEY",
		"transcriber openai: not configured",
		"voice openai: not configured",
		"voice elevenlabs: not configured: set SWITCHBOARD_ELEVENLABS_API_KEY",
		"voice deepgram: not configured",
	} {
		if !containsSentence(un, want) {
			t.Errorf("Unavailable() = %q, want a sentence starting %q", un, want)
		}
	}
	if containsSentence(un, "transcriber local") == stt || containsSentence(un, "voice local") == tts {
		t.Errorf("Unavailable() = %q, want local listed exactly when local.Available says so (tts %v, stt %v)", un, tts, stt)
	}
	gotT, gotV := e.assistantProviders()
	if !slices.Equal(gotT, []string{"local"}) || !slices.Equal(gotV, []string{"local"}) {
		t.Errorf("assistantProviders() = %q, %q; want [local] [local] (local, or local kept as the default when a role has nothing)", gotT, gotV)
	}
	var found bool
	for _, ln := range l.lines(t) {
		if ln["msg"] == "speech providers" {
			found = true
			if ln["level"] != "INFO" {
				t.Errorf("speech providers line at level %v, want INFO", ln["level"])
			}
		}
	}
	if !found {
		t.Errorf("no \"speech providers\" line in the log:\n%s", l.buf.String())
	}
}

// TestSpeechEnginesDeepgram: a key and a base URL (here a fake Deepgram on
// loopback) enable both Deepgram roles, after local; the synthesizer talks
// to that URL with that key; the key never reaches the log.
func TestSpeechEnginesDeepgram(t *testing.T) {
	t.Parallel()
	fake := speechtest.NewDeepgramSpeak(t, speechtest.Speech{Duration: 200 * time.Millisecond})
	e, l := newEngines(t, SpeechConfig{DeepgramBaseURL: fake.URL, DeepgramKey: speechtest.APIKey})
	_, stt, _ := local.Available()
	wantT := []string{"deepgram"}
	if stt {
		wantT = []string{"local", "deepgram"}
	}
	if got := e.Transcribers(); !slices.Equal(got, wantT) {
		t.Errorf("Transcribers() = %q, want %q", got, wantT)
	}
	if got := e.Synthesizers(); !slices.Contains(got, "deepgram") || got[len(got)-1] != "deepgram" {
		t.Errorf("Synthesizers() = %q, want deepgram last", got)
	}
	if containsSentence(e.Unavailable(), "transcriber deepgram") || containsSentence(e.Unavailable(), "voice deepgram") {
		t.Errorf("Unavailable() = %q, want no deepgram sentence", e.Unavailable())
	}
	syn, ok := e.Synthesizer("deepgram")
	if !ok {
		t.Fatalf("Synthesizer(deepgram) missing")
	}
	var samples int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := syn.Synthesize(ctx, "Hello there.", speech.VoiceOptions{SampleRate: 16000}, func(pcm []int16) error {
		samples += len(pcm)
		return nil
	})
	if err != nil || samples == 0 {
		t.Errorf("deepgram Synthesize = %d samples, %v; want audio", samples, err)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Token "+speechtest.APIKey {
		t.Errorf("fake Deepgram got %d requests (want 1 carrying the configured key)", len(reqs))
	}
	l.noSecrets(t, speechtest.APIKey)
}

// TestSpeechEnginesOpenAI: which OpenAI-compatible roles a configuration
// enables, and when the model provider's key is reused.
func TestSpeechEnginesOpenAI(t *testing.T) {
	t.Parallel()
	const modelKey, speechKey = "sk-model-7c1e", "sk-speech-42aa"
	tests := []struct {
		name             string
		c                SpeechConfig
		modelURL         string
		modelKey         string
		wantSTT, wantTTS bool
		wantKey          string
	}{
		{name: "nothing", wantKey: ""},
		{name: "model at OpenAI without a key", modelURL: DefaultOpenAIBaseURL, wantKey: ""},
		{name: "model key at OpenAI is reused", modelURL: DefaultOpenAIBaseURL, modelKey: modelKey, wantSTT: true, wantTTS: true, wantKey: modelKey},
		{name: "model key, default model URL left empty", modelKey: modelKey, wantSTT: true, wantTTS: true, wantKey: modelKey},
		{name: "model at Ollama: not reused", modelURL: "http://127.0.0.1:11434/v1", modelKey: modelKey, wantKey: ""},
		{name: "speech key wins", c: SpeechConfig{OpenAIKey: speechKey}, modelKey: modelKey, wantSTT: true, wantTTS: true, wantKey: speechKey},
		{name: "whisper.cpp STT only, model key not sent there", c: SpeechConfig{OpenAISTTBaseURL: "http://127.0.0.1:8081/v1"}, modelKey: modelKey, wantSTT: true, wantKey: ""},
		{name: "TTS server only", c: SpeechConfig{OpenAITTSBaseURL: "http://127.0.0.1:8880/v1", OpenAIKey: speechKey}, modelKey: modelKey, wantTTS: true, wantKey: speechKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.c.inheritOpenAI(tt.modelURL, tt.modelKey)
			if c.OpenAIKey != tt.wantKey {
				t.Errorf("inheritOpenAI(%q, %q): OpenAIKey = %q, want %q", tt.modelURL, tt.modelKey, c.OpenAIKey, tt.wantKey)
			}
			e, l := newEngines(t, c)
			if _, ok := e.Transcriber("openai"); ok != tt.wantSTT {
				t.Errorf("Transcriber(openai) ok = %v, want %v", ok, tt.wantSTT)
			}
			if _, ok := e.Synthesizer("openai"); ok != tt.wantTTS {
				t.Errorf("Synthesizer(openai) ok = %v, want %v", ok, tt.wantTTS)
			}
			if got := containsSentence(e.Unavailable(), "voice openai"); got == tt.wantTTS {
				t.Errorf("Unavailable() = %q: voice openai listed %v, want %v", e.Unavailable(), got, !tt.wantTTS)
			}
			l.noSecrets(t, modelKey, speechKey)
		})
	}
}

// TestSpeechEnginesLocalMissing: a server whose local engines are missing
// (here: a program and a model directory that do not exist) still builds,
// warns once per missing engine saying why, and keeps local out of the
// lists unless a role has nothing else.
func TestSpeechEnginesLocalMissing(t *testing.T) {
	t.Parallel()
	missing := SpeechConfig{EspeakProgram: filepath.Join(t.TempDir(), "no-espeak-ng"), LocalSTTModelDir: t.TempDir()}
	e, l := newEngines(t, missing)
	if len(e.Transcribers()) != 0 || len(e.Synthesizers()) != 0 {
		t.Errorf("Transcribers, Synthesizers = %q, %q; want none", e.Transcribers(), e.Synthesizers())
	}
	un := e.Unavailable()
	for _, want := range []string{"transcriber local: ", "voice local: "} {
		if !containsSentence(un, want) {
			t.Errorf("Unavailable() = %q, want a sentence starting %q", un, want)
		}
	}
	warned := map[string]bool{}
	for _, ln := range l.lines(t) {
		if ln["level"] == "WARN" && ln["provider"] == "local" {
			role, _ := ln["role"].(string)
			warned[role] = true
			if r, _ := ln["reason"].(string); r == "" {
				t.Errorf("warning %v gives no reason", ln)
			}
		}
	}
	if !warned["transcriber"] || !warned["voice"] {
		t.Errorf("warnings for the missing local engines: %v, want transcriber and voice\n%s", warned, l.buf.String())
	}
	gotT, gotV := e.assistantProviders()
	if !slices.Equal(gotT, []string{"local"}) || !slices.Equal(gotV, []string{"local"}) {
		t.Errorf("assistantProviders() with no engine = %q, %q; want local kept as the default", gotT, gotV)
	}

	withCloud := missing
	withCloud.ElevenLabsKey, withCloud.DeepgramKey = "el-key-0b9d", "dg-key-5e2f"
	e, l = newEngines(t, withCloud)
	gotT, gotV = e.assistantProviders()
	if !slices.Equal(gotT, []string{"deepgram"}) || !slices.Equal(gotV, []string{"elevenlabs", "deepgram"}) {
		t.Errorf("assistantProviders() without local but with Deepgram and ElevenLabs = %q, %q; want [deepgram] [elevenlabs deepgram]", gotT, gotV)
	}
	l.noSecrets(t, withCloud.ElevenLabsKey, withCloud.DeepgramKey)
}

// TestSpeechConfigCheck: a base URL no provider could use stops the server,
// naming the setting and never showing a password.
func TestSpeechConfigCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []SpeechConfig{
		{DeepgramBaseURL: "ftp://user:hunter2@example.com/v1"},
		{OpenAISTTBaseURL: "127.0.0.1:8081"},
		{OpenAITTSBaseURL: "http://user:hunter2@/v1"},
		{ElevenLabsBaseURL: "https://api.elevenlabs.io/v1?key=1"},
		{LocalSTTDecoders: -1},
	} {
		_, err := NewSpeechEngines(c, slog.New(slog.DiscardHandler))
		if err == nil {
			t.Errorf("NewSpeechEngines(%+v) = nil error, want a refusal", c)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("NewSpeechEngines(%+v) error %q shows the password", c, err)
		}
		if !strings.HasPrefix(err.Error(), "speech: ") {
			t.Errorf("NewSpeechEngines(%+v) error %q, want it to start with speech: and name the setting", c, err)
		}
	}
}

// TestStartSpeechProviders: Start validates assistants against the speech
// providers it runs: without a local voice but with ElevenLabs, a new
// assistant speaks with ElevenLabs and asking for local is a 400 naming
// voice.provider.
func TestStartSpeechProviders(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + filepath.Join(t.TempDir(), "sb.db"))
	cfg.Speech = SpeechConfig{EspeakProgram: filepath.Join(t.TempDir(), "no-espeak-ng"), ElevenLabsKey: "el-key-19ab"}
	b := start(t, cfg)
	r := b.req("POST", "/v1/assistants", b.key, map[string]any{"name": "Voice"})
	if r.Status != 201 {
		t.Fatalf("POST /v1/assistants = %d %s, want 201", r.Status, r.Raw)
	}
	if v, _ := r.data()["voice"].(map[string]any); v["provider"] != "elevenlabs" {
		t.Errorf("new assistant's voice = %v, want provider elevenlabs (local is missing)", v)
	}
	r = b.req("POST", "/v1/assistants", b.key, map[string]any{"name": "Voice", "voice": map[string]any{"provider": "local"}})
	if r.Status != 400 || !slices.Contains(r.fieldNames(), "voice.provider") {
		t.Errorf("POST /v1/assistants with voice local on a server without it = %d %s, want 400 naming voice.provider", r.Status, r.Raw)
	}
}
