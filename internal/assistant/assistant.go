// Package assistant is the configuration of a voice assistant: what it says
// first, how it thinks (a model or a scripted flow), how it hears and speaks,
// when it hangs up and how its calls are analysed.
package assistant

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/audio/vad"
	"switchboard/internal/catalog"
	"switchboard/internal/phone"
	"switchboard/internal/vars"
)

// Assistant is one organization's assistant. The JSON form is the API's and
// the stored configuration's.
type Assistant struct {
	ID           string      `json:"id"`
	OrgID        string      `json:"-"`
	Name         string      `json:"name"`
	FirstMessage string      `json:"firstMessage"`
	SystemPrompt string      `json:"systemPrompt"`
	Language     string      `json:"language"`
	Voice        Voice       `json:"voice"`
	Transcriber  Transcriber `json:"transcriber"`
	// Endpointing says when the caller's turn is over (voice calls).
	Endpointing Endpointing `json:"endpointing"`
	// BargeIn says when the caller talking over the assistant interrupts it.
	BargeIn        BargeIn         `json:"bargeIn"`
	Model          Model           `json:"model"`
	Flow           json.RawMessage `json:"flow"`
	EndCallPhrases []string        `json:"endCallPhrases"`
	// OptOutPhrases are what a caller on a phone call says to be put on
	// the organization's do-not-call list (matched without case or
	// punctuation, as whole words); empty turns it off.
	OptOutPhrases         []string     `json:"optOutPhrases"`
	MaxDurationSeconds    int          `json:"maxDurationSeconds"`
	SilenceTimeoutSeconds int          `json:"silenceTimeoutSeconds"`
	AnalysisPlan          AnalysisPlan `json:"analysisPlan"`
	// Tools are HTTP tools a model (or a flow's tool node) may call.
	Tools []Tool `json:"tools"`
	// Transfer is where a call may be transferred (the built-in
	// transferCall tool and a flow's transfer node).
	Transfer Transfer `json:"transfer"`
	// Recording turns call recording on.
	Recording Recording `json:"recording"`
	// Voicemail is what an outbound call does when a machine answers.
	Voicemail Voicemail `json:"voicemail"`
	// ToolSecret signs tool requests (Standard Webhooks headers), so the
	// organization's server can check they come from Switchboard.
	ToolSecret string    `json:"toolSecret"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// Tool is an HTTP tool: the server POSTs the call's arguments (a JSON
// object) to URL and feeds the JSON answer back to the model or flow.
type Tool struct {
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	URL            string          `json:"url"`
	Parameters     json.RawMessage `json:"parameters"`
	TimeoutSeconds int             `json:"timeoutSeconds"`
}

// Voice is the text-to-speech choice.
type Voice struct {
	Provider string `json:"provider"`
	VoiceID  string `json:"voiceId"`
	// Fallback takes over when Provider fails (times out, errors, drops
	// its socket); nil means the call ends voice-failed instead.
	Fallback *VoiceFallback `json:"fallback"`
}

// VoiceFallback is a Voice without a fallback of its own.
type VoiceFallback struct {
	Provider string `json:"provider"`
	VoiceID  string `json:"voiceId"`
}

// Transcriber is the speech-to-text choice.
type Transcriber struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Language string `json:"language"`
	// Fallback takes over when Provider fails; nil means the call ends
	// transcriber-failed instead.
	Fallback *TranscriberFallback `json:"fallback"`
}

// TranscriberFallback is a Transcriber without a fallback of its own.
type TranscriberFallback struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Language string `json:"language"`
}

// Endpointing tunes when a caller's utterance is over. Zero fields take the
// defaults of internal/audio/vad (silence 500 ms, minimum speech 120 ms,
// maximum wait 2500 ms, fast silence 250 ms after a finished sentence).
type Endpointing struct {
	SilenceMs     int `json:"silenceMs"`
	MinSpeechMs   int `json:"minSpeechMs"`
	MaxWaitMs     int `json:"maxWaitMs"`
	FastSilenceMs int `json:"fastSilenceMs"`
}

// BargeIn tunes interruptions: caller speech over the assistant's audio for
// MinSpeechMs (default 300) that is not a backchannel ("uh-huh", "okay")
// stops the assistant. Disabled turns it off: the assistant always finishes.
type BargeIn struct {
	Disabled    bool `json:"disabled"`
	MinSpeechMs int  `json:"minSpeechMs"`
}

// Model is the reply engine: a language model, or "flow" for the assistant's scripted flow.
type Model struct {
	Provider    string   `json:"provider"`
	Model       string   `json:"model"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"maxTokens,omitempty"`
}

// AnalysisPlan says how a finished call is analysed.
type AnalysisPlan struct {
	SummaryPrompt           string          `json:"summaryPrompt"`
	SuccessEvaluationRubric string          `json:"successEvaluationRubric"`
	StructuredDataSchema    json.RawMessage `json:"structuredDataSchema"`
}

// Bounds and defaults of the numeric settings (Vapi's, so users meet no surprise).
const (
	DefaultMaxDuration    = 600
	MinMaxDuration        = 10
	MaxMaxDuration        = 43200
	DefaultSilenceTimeout = 30
	MinSilenceTimeout     = 5
	MaxSilenceTimeout     = 3600
	MaxNameLen            = 200
	MaxTextLen            = 20000
	MaxEndCallPhrases     = 50
	MaxOptOutPhrases      = 50
)

// DefaultOptOutPhrases are an assistant's opt-out phrases unless it sets
// its own (a new slice each time).
func DefaultOptOutPhrases() []string {
	return []string{"stop calling me", "take me off your list", "do not call me", "don't call me again", "remove me from your list"}
}

// Speech provider names. A voice or transcriber provider must be one the
// server knows (VoiceProviders, TranscriberProviders) and one it has
// configured (Providers): local needs nothing, the others an API key.
const (
	ProviderLocal      = "local"
	ProviderDeepgram   = "deepgram"
	ProviderOpenAI     = "openai"
	ProviderElevenLabs = "elevenlabs"
)

// ProviderFlow is the reply engine of an assistant without a language
// model: its scripted flow, or the note taker when it has none (Brain).
const ProviderFlow = "flow"

// VoiceProviders are the text-to-speech providers the server knows, whether
// or not it is configured for them.
func VoiceProviders() []string { return catalog.Known(catalog.Voice) }

// TranscriberProviders are the speech-to-text providers the server knows,
// whether or not it is configured for them.
func TranscriberProviders() []string { return catalog.Known(catalog.Transcriber) }

// Providers lists what the server has configured, by role. An assistant may
// only name providers listed here. The app lists the speech engines it
// runs: local, and the cloud providers it was given keys for; and the
// model providers it was given a key or a server for, after flow.
type Providers struct {
	Model       []string
	Voice       []string
	Transcriber []string
}

// DefaultProviders is what every server has: scripted flows and the local
// offline speech engines.
func DefaultProviders() Providers {
	return Providers{Model: []string{ProviderFlow}, Voice: []string{ProviderLocal}, Transcriber: []string{ProviderLocal}}
}

// Models are the language model providers among p.Model (all but flow).
func (p Providers) Models() []string {
	var out []string
	for _, m := range p.Model {
		if m != ProviderFlow {
			out = append(out, m)
		}
	}
	return out
}

// OnlyModel is the server's language model provider when it has exactly
// one, else "": that one is the default reply engine of an assistant
// without a flow (Defaults, DefaultModel).
func (p Providers) OnlyModel() string {
	if ms := p.Models(); len(ms) == 1 {
		return ms[0]
	}
	return ""
}

// DefaultModel is model.provider for an assistant that names none: with a
// flow, flow; without one, the server's only model provider (OnlyModel)
// when it has exactly one, else flow (the note taker).
func (p Providers) DefaultModel(hasFlow bool) string {
	if m := p.OnlyModel(); m != "" && !hasFlow {
		return m
	}
	return ProviderFlow
}

// Defaults returns a new assistant's settings before the request's fields apply.
func Defaults(p Providers) Assistant {
	return Assistant{
		Language:              "en-US",
		Voice:                 Voice{Provider: first(p.Voice)},
		Transcriber:           Transcriber{Provider: first(p.Transcriber)},
		Model:                 Model{Provider: p.DefaultModel(false)},
		EndCallPhrases:        []string{},
		OptOutPhrases:         DefaultOptOutPhrases(),
		Tools:                 []Tool{},
		Transfer:              Transfer{Destinations: []TransferDestination{}},
		Voicemail:             Voicemail{Action: VoicemailHangup},
		MaxDurationSeconds:    DefaultMaxDuration,
		SilenceTimeoutSeconds: DefaultSilenceTimeout,
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// Validate checks a, a new assistant (was nil) or was as a request
// changed it, against the bounds and against what the server runs (p).
// What depends on the server (a provider it is not configured for, a
// setting the assistant's brain would ignore) is refused only where the
// request changed it; a stored value is kept, and reported in the
// returned warnings with what the assistant does instead (checkServer).
// The warnings mean nothing when f holds errors.
func (a *Assistant) Validate(p Providers, was *Assistant, f *apperr.Fields) []Warning {
	if strings.TrimSpace(a.Name) == "" {
		f.Add("name", "is required and must not be blank")
	} else if len(a.Name) > MaxNameLen {
		f.Add("name", "must be at most %d bytes", MaxNameLen)
	}
	for field, v := range map[string]string{"firstMessage": a.FirstMessage, "systemPrompt": a.SystemPrompt} {
		if len(v) > MaxTextLen {
			f.Add(field, "must be at most %d bytes", MaxTextLen)
		}
	}
	a.checkTemplates(f)
	if a.Language == "" || len(a.Language) > 35 {
		f.Add("language", "must be a BCP 47 language tag such as en-US")
	}
	a.validateSpeech(f)
	if a.Model.Provider != ProviderFlow && a.Model.Provider != "" && a.Model.Model == "" {
		msg := fmt.Sprintf("is required for provider %q: the name of the model to ask (e.g. gpt-4o-mini at OpenAI, llama3.2 on Ollama)", a.Model.Provider)
		if a.Model.Provider == p.OnlyModel() && !a.HasFlow() {
			msg += fmt.Sprintf("; %q is this server's only model provider, the default of an assistant without a flow (model.provider %q with a flow runs the flow instead)", a.Model.Provider, ProviderFlow)
		}
		f.Add("model.model", "%s", msg)
	}
	if t := a.Model.Temperature; t != nil && (*t < 0 || *t > 2) {
		f.Add("model.temperature", "must be between 0 and 2")
	}
	if a.Model.MaxTokens < 0 {
		f.Add("model.maxTokens", "must not be negative")
	}
	if len(a.Flow) > 0 && string(a.Flow) != "null" && a.Flow[0] != '{' {
		f.Add("flow", "must be an object")
	}
	if len(a.EndCallPhrases) > MaxEndCallPhrases {
		f.Add("endCallPhrases", "must hold at most %d phrases", MaxEndCallPhrases)
	}
	for i, ph := range a.EndCallPhrases {
		if strings.TrimSpace(ph) == "" || len(ph) > 200 {
			f.Add("endCallPhrases["+itoa(i)+"]", "must be a non-blank phrase of at most 200 bytes")
		}
	}
	if len(a.OptOutPhrases) > MaxOptOutPhrases {
		f.Add("optOutPhrases", "must hold at most %d phrases", MaxOptOutPhrases)
	}
	for i, ph := range a.OptOutPhrases {
		if phone.NormalizePhrase(ph) == "" || len(ph) > 200 {
			f.Add("optOutPhrases["+itoa(i)+"]", "must be a phrase with at least one letter or digit, of at most 200 bytes")
		}
	}
	if a.MaxDurationSeconds < MinMaxDuration || a.MaxDurationSeconds > MaxMaxDuration {
		f.Add("maxDurationSeconds", "must be between %d and %d", MinMaxDuration, MaxMaxDuration)
	}
	if a.SilenceTimeoutSeconds < MinSilenceTimeout || a.SilenceTimeoutSeconds > MaxSilenceTimeout {
		f.Add("silenceTimeoutSeconds", "must be between %d and %d", MinSilenceTimeout, MaxSilenceTimeout)
	}
	if s := a.AnalysisPlan.StructuredDataSchema; len(s) > 0 && string(s) != "null" && s[0] != '{' {
		f.Add("analysisPlan.structuredDataSchema", "must be a JSON Schema object")
	}
	if len(a.Tools) > MaxTools {
		f.Add("tools", "must hold at most %d tools", MaxTools)
	}
	names := map[string]bool{}
	for i, t := range a.Tools {
		field := "tools[" + itoa(i) + "]."
		if !toolName.MatchString(t.Name) || slices.Contains(BuiltinTools, t.Name) {
			f.Add(field+"name", "must be 1-64 letters, digits, _ or -, starting with a letter, and not a built-in tool (%s)", strings.Join(BuiltinTools, ", "))
		} else if names[t.Name] {
			f.Add(field+"name", "repeats tool %q", t.Name)
		}
		names[t.Name] = true
		if !strings.HasPrefix(t.URL, "https://") && !strings.HasPrefix(t.URL, "http://") {
			f.Add(field+"url", "must be an http(s) URL")
		}
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" && t.Parameters[0] != '{' {
			f.Add(field+"parameters", "must be a JSON Schema object")
		}
		if t.TimeoutSeconds < 1 || t.TimeoutSeconds > 60 {
			f.Add(field+"timeoutSeconds", "must be between 1 and 60")
		}
	}
	a.validateTelephony(f)
	return a.checkServer(p, was, f)
}

// validateSpeech checks the voice and transcriber fallbacks, endpointing
// and barge-in (the providers themselves are the server's: checkServer):
// the bounds are internal/audio/vad's, which runs them, with the fields
// named as the API names them.
func (a *Assistant) validateSpeech(f *apperr.Fields) {
	if fb := a.Voice.Fallback; fb != nil && fb.Provider == a.Voice.Provider {
		f.Add("voice.fallback.provider", "must differ from voice.provider (%q): the fallback takes over when that provider fails", a.Voice.Provider)
	}
	if fb := a.Transcriber.Fallback; fb != nil && fb.Provider == a.Transcriber.Provider {
		f.Add("transcriber.fallback.provider", "must differ from transcriber.provider (%q): the fallback takes over when that provider fails", a.Transcriber.Provider)
	}
	e := a.Endpointing
	addPrefixed(f, "endpointing.", vad.Config{SilenceMs: e.SilenceMs, MinSpeechMs: e.MinSpeechMs, MaxWaitMs: e.MaxWaitMs, FastSilenceMs: e.FastSilenceMs}.Validate())
	addPrefixed(f, "bargeIn.", (&vad.BargeIn{MinSpeechMs: a.BargeIn.MinSpeechMs}).Validate())
}

// addPrefixed adds the field errors of err (an apperr of kind Invalid from
// a package that names fields without their place in the assistant).
func addPrefixed(f *apperr.Fields, prefix string, err error) {
	if err == nil {
		return
	}
	var e *apperr.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		f.Add(strings.TrimSuffix(prefix, "."), "%s", err.Error())
		return
	}
	for _, fe := range e.Fields {
		f.Add(prefix+fe.Field, "%s", fe.Message)
	}
}

// MaxTools bounds an assistant's tools.
const MaxTools = 20

// BuiltinTools are the names of the tools the conversation engine gives a
// model itself (internal/conversation); an HTTP tool may not take them.
var BuiltinTools = []string{"endCall", "sendDTMF", "transferCall"}

var toolName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// templated lists the assistant's texts that are {{…}} templates (package
// vars), by field; a flow's texts are its own (flow.Parse checks them).
func (a *Assistant) templated() map[string]*string {
	out := map[string]*string{
		"firstMessage":      &a.FirstMessage,
		"systemPrompt":      &a.SystemPrompt,
		"voicemail.message": &a.Voicemail.Message,
	}
	for i := range a.Transfer.Destinations {
		out["transfer.destinations["+itoa(i)+"].message"] = &a.Transfer.Destinations[i].Message
	}
	return out
}

// checkTemplates refuses a text whose {{…}} does not parse, naming the
// field and the byte.
func (a *Assistant) checkTemplates(f *apperr.Fields) {
	for field, p := range a.templated() {
		if err := vars.Check(*p); err != nil {
			f.Add(field, "template %v: write {{name}}, {{contact.name}} or {{name | fallback}} (docs/api.md, \"Variables\")", err)
		}
	}
}

// Render returns a copy of a with the call's variables filled into its
// templated texts (firstMessage, systemPrompt, the voicemail message and
// the transfer messages). A flow renders its own texts as it runs.
func (a Assistant) Render(v vars.Values) Assistant {
	a.Transfer.Destinations = slices.Clone(a.Transfer.Destinations)
	for _, p := range a.templated() {
		*p = vars.Render(*p, v, nil)
	}
	return a
}
