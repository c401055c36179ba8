// Package catalog is the one table of the providers Switchboard knows, by
// role (an assistant's reply engine, its voice and its transcriber, and
// the telephony providers calls and numbers go through), and of how a
// server is started to run each: the flags of `switchboard serve` and the
// environment variables that enable it. The two refusals every role
// shares are written here from that table, so that they read alike
// wherever a provider is named: "unknown provider" is only for a name no
// build knows (a typo: the known names are listed), and "not configured on
// this server" is for a known one this server does not run, naming what
// enables it.
package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// Role is what a provider is for.
type Role string

// Roles.
const (
	// Model is an assistant's reply engine (model.provider).
	Model Role = "model"
	// Voice is an assistant's text-to-speech (voice.provider).
	Voice Role = "voice"
	// Transcriber is an assistant's speech-to-text (transcriber.provider).
	Transcriber Role = "transcriber"
	// Telephony carries phone calls (a number's or a call's provider).
	Telephony Role = "telephony"
)

// Setting is one way of enabling a provider: a flag of `switchboard serve`
// and its environment variable.
type Setting struct {
	Flag, Env string
	// For says when this setting is the one to use ("OpenAI itself", "a
	// local OpenAI-compatible server such as Ollama"); empty when it is the
	// only one.
	For string
}

func (s Setting) String() string {
	if s.For == "" {
		return s.Flag + " / " + s.Env
	}
	return s.Flag + " / " + s.Env + " (" + s.For + ")"
}

// Provider is one provider a build knows in a role.
type Provider struct {
	Role Role
	Name string
	// Enable are the settings that enable it, any one of them; none for a
	// provider every server has or one that needs no setting (Needs).
	Enable []Setting
	// Needs says what else a server needs to run it, when no setting
	// enables it (the local speech engines: packages and a build tag).
	Needs string
}

// The table, in each role's order of preference (the order errors list
// the known names in, and the order of the documentation).
var table = []Provider{
	{Role: Model, Name: "flow"},
	{Role: Model, Name: "openai", Enable: []Setting{
		{"--openai-api-key", "SWITCHBOARD_OPENAI_API_KEY", "OpenAI itself"},
		{"--openai-base-url", "SWITCHBOARD_OPENAI_BASE_URL", "a local OpenAI-compatible server such as Ollama: http://127.0.0.1:11434/v1"},
	}},
	{Role: Model, Name: "anthropic", Enable: []Setting{{"--anthropic-api-key", "SWITCHBOARD_ANTHROPIC_API_KEY", ""}}},

	{Role: Voice, Name: "local", Needs: "espeak-ng: install the espeak-ng package (make run does)"},
	{Role: Voice, Name: "openai", Enable: []Setting{
		{"--speech-openai-api-key", "SWITCHBOARD_SPEECH_OPENAI_API_KEY", "OpenAI itself; its model key --openai-api-key also does when the model server is OpenAI"},
		{"--speech-openai-tts-base-url", "SWITCHBOARD_SPEECH_OPENAI_TTS_BASE_URL", "a compatible speech server"},
	}},
	{Role: Voice, Name: "elevenlabs", Enable: []Setting{{"--elevenlabs-api-key", "SWITCHBOARD_ELEVENLABS_API_KEY", ""}}},
	{Role: Voice, Name: "deepgram", Enable: []Setting{
		{"--deepgram-api-key", "SWITCHBOARD_DEEPGRAM_API_KEY", "Deepgram itself"},
		{"--deepgram-base-url", "SWITCHBOARD_DEEPGRAM_BASE_URL", "a self-hosted Deepgram"},
	}},

	{Role: Transcriber, Name: "local", Needs: "pocketsphinx: the packages libpocketsphinx-dev and pocketsphinx-en-us and a build with -tags speech_native (make run installs and builds them)"},
	{Role: Transcriber, Name: "deepgram", Enable: []Setting{
		{"--deepgram-api-key", "SWITCHBOARD_DEEPGRAM_API_KEY", "Deepgram itself"},
		{"--deepgram-base-url", "SWITCHBOARD_DEEPGRAM_BASE_URL", "a self-hosted Deepgram"},
	}},
	{Role: Transcriber, Name: "openai", Enable: []Setting{
		{"--speech-openai-api-key", "SWITCHBOARD_SPEECH_OPENAI_API_KEY", "OpenAI itself; its model key --openai-api-key also does when the model server is OpenAI"},
		{"--speech-openai-stt-base-url", "SWITCHBOARD_SPEECH_OPENAI_STT_BASE_URL", "a compatible transcription server: whisper.cpp, faster-whisper"},
	}},

	{Role: Telephony, Name: "sandbox"},
	{Role: Telephony, Name: "sip", Enable: []Setting{{"--sip-addr", "SWITCHBOARD_SIP_ADDR", "HOST:PORT, default port 5060 on --addr's host; off disables SIP"}}},
	// Twilio is in every server; each organization brings its account
	// as a connection, which the numbers service asks for by name.
	{Role: Telephony, Name: "twilio"},
}

// Known lists the names a build knows in role, in the table's order.
func Known(role Role) []string {
	var out []string
	for _, p := range table {
		if p.Role == role {
			out = append(out, p.Name)
		}
	}
	return out
}

// Lookup returns the provider name of role.
func Lookup(role Role, name string) (Provider, bool) {
	for _, p := range table {
		if p.Role == role && p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// All returns every provider of the table (for the documentation's and
// the flags' tests).
func All() []Provider { return slices.Clone(table) }

// HowToEnable says what makes a server run p: "start the server with
// --anthropic-api-key / SWITCHBOARD_ANTHROPIC_API_KEY"; "" for a provider
// every server has.
func (p Provider) HowToEnable() string {
	if len(p.Enable) == 0 {
		if p.Needs == "" {
			return ""
		}
		return "it needs " + p.Needs
	}
	parts := make([]string, len(p.Enable))
	for i, s := range p.Enable {
		parts[i] = s.String()
	}
	return "start the server with " + strings.Join(parts, ", or ")
}

// Check says what is wrong with naming name in role on a server that runs
// configured: "" when it is one of them; "unknown provider …; known
// providers: …" when no build knows it; otherwise that this server does
// not run it, what it runs, and how to enable it.
func Check(role Role, name string, configured []string) string {
	if slices.Contains(configured, name) {
		return ""
	}
	p, ok := Lookup(role, name)
	if !ok {
		return fmt.Sprintf("unknown provider %q; known providers: %s", name, strings.Join(Known(role), ", "))
	}
	return NotConfigured(p, configured)
}

// NotConfigured is the refusal of p, a known provider that a server
// running configured does not run.
func NotConfigured(p Provider, configured []string) string {
	has := "it has none"
	if len(configured) > 0 {
		has = "it has: " + strings.Join(configured, ", ")
	}
	verb := "configured"
	if len(p.Enable) == 0 {
		verb = "available"
	}
	msg := fmt.Sprintf("provider %q is not %s on this server (%s)", p.Name, verb, has)
	if how := p.HowToEnable(); how != "" {
		msg += "; " + how
	}
	return msg
}
