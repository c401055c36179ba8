package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"

	"switchboard/internal/lifecycle"
	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/deepgram"
	"switchboard/internal/speech/cloud/elevenlabs"
	cloudopenai "switchboard/internal/speech/cloud/openai"
	"switchboard/internal/speech/local"
)

// SpeechConfig says which speech providers the server runs. The local
// offline engines need nothing: they are used when this build and machine
// have them (local.Available). A cloud provider is enabled by its key, or
// by a base URL of its own (a self-hosted or compatible server that may
// need no key). Keys are never logged.
type SpeechConfig struct {
	// Deepgram: live transcription and Aura speech. Enabled by a key or a
	// base URL other than deepgram.DefaultBaseURL (self-hosted Deepgram).
	DeepgramBaseURL string
	DeepgramKey     string
	// OpenAI-compatible speech. OpenAISTTBaseURL enables the "openai"
	// transcriber at that server ({base}/audio/transcriptions: OpenAI,
	// whisper.cpp, faster-whisper), OpenAITTSBaseURL the "openai" voice
	// ({base}/audio/speech); OpenAIKey is sent to both. With neither URL
	// set, a key enables both roles at OpenAI itself. When the key is also
	// unset, the model provider's OpenAI key is reused, but only when that
	// model server is OpenAI itself (Config.OpenAIBaseURL empty or the
	// default): a key meant for OpenAI is never sent elsewhere, and an
	// Ollama or vLLM model server does not serve audio.
	OpenAISTTBaseURL string
	OpenAITTSBaseURL string
	OpenAIKey        string
	// ElevenLabs speech. Enabled by a key or a base URL other than
	// elevenlabs.DefaultBaseURL.
	ElevenLabsBaseURL string
	ElevenLabsKey     string
	// LocalSTTDecoders bounds the pocketsphinx decoders (utterances decoded
	// at once; ~100 MB each, created on first need). 0 means
	// 2×GOMAXPROCS, at least local.DefaultDecoders.
	LocalSTTDecoders int
	// LocalSTTModelDir is the pocketsphinx en-us model ("" = the
	// pocketsphinx-en-us package's).
	LocalSTTModelDir string
	// EspeakProgram makes the local voice run this espeak-ng program
	// instead of the library linked into a speech_native build ("" = the
	// library, else espeak-ng on PATH).
	EspeakProgram string
}

// inheritOpenAI applies the model provider's OpenAI settings as the
// SpeechConfig documents: the model's key is reused only when the speech
// settings name no server and no key of their own, and the model server
// is OpenAI itself.
func (c SpeechConfig) inheritOpenAI(modelBaseURL, modelKey string) SpeechConfig {
	if c.OpenAIKey == "" && c.OpenAISTTBaseURL == "" && c.OpenAITTSBaseURL == "" &&
		(modelBaseURL == "" || modelBaseURL == DefaultOpenAIBaseURL) {
		c.OpenAIKey = modelKey
	}
	return c
}

// Speech roles, as the assistant fields call them.
const (
	roleTranscriber = "transcriber"
	roleVoice       = "voice"
)

// SpeechEngines are the speech providers this server can run, by the names
// assistants use ("local", "deepgram", "openai", "elevenlabs"). The call
// pipeline looks an assistant's choice up here.
type SpeechEngines struct {
	transcribers map[string]speech.Transcriber
	synthesizers map[string]speech.Synthesizer
	// tNames and sNames keep the providers in preference order: local
	// first, then the cloud ones in a fixed order.
	tNames, sNames []string
	missing        []missingSpeech
	// transport carries the cloud providers' requests; Close drops its
	// idle connections.
	transport *http.Transport
}

// missingSpeech is one provider the server cannot run, and why.
type missingSpeech struct {
	role, name, why string
	// expected marks a provider that should have worked (the local
	// engines): its absence is a warning. An unconfigured cloud provider
	// is only information.
	expected bool
}

func (m missingSpeech) String() string { return m.role + " " + m.name + ": " + m.why }

// NewSpeechEngines builds every provider c enables, and the local engines
// when this build and machine have them. A provider whose parts are
// missing is left out and reported by Unavailable, so the server still
// starts; a malformed base URL is an error. log receives one line listing
// what is available and one per provider that is not.
func NewSpeechEngines(c SpeechConfig, log *slog.Logger) (*SpeechEngines, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	e := &SpeechEngines{transcribers: map[string]speech.Transcriber{}, synthesizers: map[string]speech.Synthesizer{},
		transport: http.DefaultTransport.(*http.Transport).Clone()}
	// No Timeout: a reply streams for as long as it speaks, and a live
	// transcription socket lasts the call; deadlines come from each
	// request's context.
	hc := &http.Client{Transport: e.transport}
	engineLog := log.With("provider", local.Name)

	// Local: espeak-ng and pocketsphinx.
	synth, err := local.NewSynthesizer(local.SynthesizerOptions{Program: c.EspeakProgram, Logger: engineLog})
	if err != nil {
		e.miss(roleVoice, local.Name, true, unavailableReason(err))
	} else {
		e.addSynthesizer(synth)
	}
	decoders := c.LocalSTTDecoders
	if decoders <= 0 {
		decoders = max(local.DefaultDecoders, 2*runtime.GOMAXPROCS(0))
	}
	trans, err := local.NewTranscriber(local.TranscriberOptions{Decoders: decoders, ModelDir: c.LocalSTTModelDir, Logger: engineLog})
	if err != nil {
		e.miss(roleTranscriber, local.Name, true, unavailableReason(err)+" (make run installs the packages and builds with them when it can)")
	} else {
		e.addTranscriber(trans)
	}

	// Deepgram: one account serves both roles.
	if c.DeepgramKey != "" || nonDefault(c.DeepgramBaseURL, deepgram.DefaultBaseURL) {
		e.addTranscriber(deepgram.NewTranscriber(c.DeepgramBaseURL, c.DeepgramKey, hc))
		e.addSynthesizer(deepgram.NewSynthesizer(c.DeepgramBaseURL, c.DeepgramKey, hc))
	} else {
		why := "not configured: set SWITCHBOARD_DEEPGRAM_API_KEY (or SWITCHBOARD_DEEPGRAM_BASE_URL for a self-hosted Deepgram)"
		e.miss(roleTranscriber, deepgram.Provider, false, why)
		e.miss(roleVoice, deepgram.Provider, false, why)
	}

	// OpenAI-compatible: each role at its own server, or both at OpenAI.
	sttURL, ttsURL := c.OpenAISTTBaseURL, c.OpenAITTSBaseURL
	if sttURL == "" && ttsURL == "" && c.OpenAIKey != "" {
		sttURL, ttsURL = cloudopenai.DefaultBaseURL, cloudopenai.DefaultBaseURL
	}
	const openaiHow = "not configured: set SWITCHBOARD_SPEECH_OPENAI_API_KEY (or SWITCHBOARD_OPENAI_API_KEY for OpenAI itself), or %s for a compatible server"
	if sttURL != "" {
		e.addTranscriber(cloudopenai.NewTranscriber(sttURL, c.OpenAIKey, hc))
	} else {
		e.miss(roleTranscriber, cloudopenai.Provider, false, fmt.Sprintf(openaiHow, "SWITCHBOARD_SPEECH_OPENAI_STT_BASE_URL"))
	}

	// ElevenLabs: speech only.
	if c.ElevenLabsKey != "" || nonDefault(c.ElevenLabsBaseURL, elevenlabs.DefaultBaseURL) {
		e.addSynthesizer(elevenlabs.NewSynthesizer(c.ElevenLabsBaseURL, c.ElevenLabsKey, hc))
	} else {
		e.miss(roleVoice, elevenlabs.Provider, false, "not configured: set SWITCHBOARD_ELEVENLABS_API_KEY")
	}
	if ttsURL != "" {
		e.addSynthesizer(cloudopenai.NewSynthesizer(ttsURL, c.OpenAIKey, hc))
	} else {
		e.miss(roleVoice, cloudopenai.Provider, false, fmt.Sprintf(openaiHow, "SWITCHBOARD_SPEECH_OPENAI_TTS_BASE_URL"))
	}
	e.sortNames()
	e.logStartup(log, c, sttURL, ttsURL)
	return e, nil
}

// Preference order of the providers within a role: local first (the
// default of a new assistant), then the cloud providers in the order the
// assistant documentation lists them.
var (
	transcriberOrder = []string{local.Name, deepgram.Provider, cloudopenai.Provider}
	voiceOrder       = []string{local.Name, cloudopenai.Provider, elevenlabs.Provider, deepgram.Provider}
)

func (e *SpeechEngines) sortNames() {
	byOrder := func(order []string) func(a, b string) int {
		return func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) }
	}
	slices.SortStableFunc(e.tNames, byOrder(transcriberOrder))
	slices.SortStableFunc(e.sNames, byOrder(voiceOrder))
	slices.SortStableFunc(e.missing, func(a, b missingSpeech) int {
		if a.role != b.role {
			return strings.Compare(a.role, b.role)
		}
		order := voiceOrder
		if a.role == roleTranscriber {
			order = transcriberOrder
		}
		return slices.Index(order, a.name) - slices.Index(order, b.name)
	})
}

func (e *SpeechEngines) addTranscriber(t speech.Transcriber) {
	e.transcribers[t.Name()] = t
	e.tNames = append(e.tNames, t.Name())
}

func (e *SpeechEngines) addSynthesizer(s speech.Synthesizer) {
	e.synthesizers[s.Name()] = s
	e.sNames = append(e.sNames, s.Name())
}

func (e *SpeechEngines) miss(role, name string, expected bool, why string) {
	e.missing = append(e.missing, missingSpeech{role: role, name: name, why: why, expected: expected})
}

// logStartup writes what the engines are: base URLs with any user info
// redacted, never a key.
func (e *SpeechEngines) logStartup(log *slog.Logger, c SpeechConfig, sttURL, ttsURL string) {
	attrs := []any{"transcribers", e.Transcribers(), "voices", e.Synthesizers()}
	if c.EspeakProgram == "" && c.LocalSTTModelDir == "" {
		_, _, why := local.Available() // describes the default engines only
		attrs = append(attrs, "local", why)
	}
	endpoints := map[string]string{}
	if _, ok := e.transcribers[deepgram.Provider]; ok {
		endpoints["deepgram"] = redactURL(cmpOr(c.DeepgramBaseURL, deepgram.DefaultBaseURL))
	}
	if _, ok := e.transcribers[cloudopenai.Provider]; ok {
		endpoints["openai_stt"] = redactURL(sttURL)
	}
	if _, ok := e.synthesizers[cloudopenai.Provider]; ok {
		endpoints["openai_tts"] = redactURL(ttsURL)
	}
	if _, ok := e.synthesizers[elevenlabs.Provider]; ok {
		endpoints["elevenlabs"] = redactURL(cmpOr(c.ElevenLabsBaseURL, elevenlabs.DefaultBaseURL))
	}
	if len(endpoints) > 0 {
		attrs = append(attrs, "endpoints", endpoints)
	}
	log.Info("speech providers", attrs...)
	for _, m := range e.missing {
		if m.expected {
			log.Warn("speech provider unavailable", "role", m.role, "provider", m.name, "reason", m.why)
		}
	}
	var off []string
	for _, m := range e.missing {
		if !m.expected {
			off = append(off, m.role+" "+m.name)
		}
	}
	if len(off) > 0 {
		log.Info("speech providers not configured (README, Configuration)", "providers", off)
	}
	for _, role := range []string{roleTranscriber, roleVoice} {
		if len(e.names(role)) == 0 {
			log.Warn("no speech provider for this role: assistants keep the default local, which this server lacks; text calls work, audio calls fail until a provider is configured",
				"role", role)
		}
	}
}

// Transcriber returns the transcriber named name, if this server runs it.
func (e *SpeechEngines) Transcriber(name string) (speech.Transcriber, bool) {
	t, ok := e.transcribers[name]
	return t, ok
}

// Synthesizer returns the voice (synthesizer) named name, if this server runs it.
func (e *SpeechEngines) Synthesizer(name string) (speech.Synthesizer, bool) {
	s, ok := e.synthesizers[name]
	return s, ok
}

// Transcribers lists the transcribers this server runs, local first.
func (e *SpeechEngines) Transcribers() []string { return append([]string{}, e.tNames...) }

// Synthesizers lists the voices this server runs, local first.
func (e *SpeechEngines) Synthesizers() []string { return append([]string{}, e.sNames...) }

func (e *SpeechEngines) names(role string) []string {
	if role == roleTranscriber {
		return e.tNames
	}
	return e.sNames
}

// Unavailable says, one sentence per role and provider, what this server
// cannot run and what would enable it: "transcriber local: built without
// speech_native; …", "voice elevenlabs: not configured: set …".
func (e *SpeechEngines) Unavailable() []string {
	out := make([]string, len(e.missing))
	for i, m := range e.missing {
		out[i] = m.String()
	}
	return out
}

// assistantProviders are the speech provider lists assistants are
// validated against, the first being a new assistant's default: the
// providers this server runs, local first. A role with none keeps "local"
// so that assistants can still be created (text calls need no speech, and
// "local" works as soon as the server is built with it); a call that needs
// the missing engine then fails with the transcriber or voice error.
func (e *SpeechEngines) assistantProviders() (transcribers, voices []string) {
	transcribers, voices = e.Transcribers(), e.Synthesizers()
	if len(transcribers) == 0 {
		transcribers = []string{local.Name}
	}
	if len(voices) == 0 {
		voices = []string{local.Name}
	}
	return transcribers, voices
}

// Start does nothing: the engines are ready once built. It makes them a
// part of the list, stopped after the conversations that use them.
func (e *SpeechEngines) Start(context.Context) error { return nil }

// Stop is Close.
func (e *SpeechEngines) Stop(context.Context) error { return e.Close() }

var _ lifecycle.Service = (*SpeechEngines)(nil)

// Close frees the engines' resources (the local decoders). Safe on nil
// and to call twice.
func (e *SpeechEngines) Close() error {
	if e == nil {
		return nil
	}
	var errs []error
	for _, name := range e.tNames {
		if c, ok := e.transcribers[name].(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	for _, name := range e.sNames {
		if c, ok := e.synthesizers[name].(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	e.transport.CloseIdleConnections()
	return errors.Join(errs...)
}

// check rejects base URLs the providers could never use, naming the setting.
func (c SpeechConfig) check() error {
	for _, u := range []struct{ field, v string }{
		{"DeepgramBaseURL", c.DeepgramBaseURL},
		{"OpenAISTTBaseURL", c.OpenAISTTBaseURL},
		{"OpenAITTSBaseURL", c.OpenAITTSBaseURL},
		{"ElevenLabsBaseURL", c.ElevenLabsBaseURL},
	} {
		if u.v == "" {
			continue
		}
		p, err := url.Parse(u.v)
		switch {
		case err != nil:
			return fmt.Errorf("speech: %s: %q is not a URL", u.field, redactURL(u.v))
		case p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "ws" && p.Scheme != "wss":
			return fmt.Errorf("speech: %s: %q must be an http or https URL", u.field, redactURL(u.v))
		case p.Host == "":
			return fmt.Errorf("speech: %s: %q has no host", u.field, redactURL(u.v))
		case p.RawQuery != "" || p.Fragment != "":
			return fmt.Errorf("speech: %s: %q must have no query or fragment", u.field, redactURL(u.v))
		}
	}
	if c.LocalSTTDecoders < 0 {
		return fmt.Errorf("speech: LocalSTTDecoders is %d, want 0 (the default) or more", c.LocalSTTDecoders)
	}
	return nil
}

// nonDefault reports whether base names a server other than def.
func nonDefault(base, def string) bool {
	return base != "" && strings.TrimRight(base, "/") != def
}

// redactURL hides a password in a URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// unavailableReason is an engine's ErrUnavailable error without its
// generic prefix: what is missing and how to get it.
func unavailableReason(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, speech.ErrUnavailable.Error()+": ")
	return strings.TrimPrefix(s, local.Name+": ")
}
