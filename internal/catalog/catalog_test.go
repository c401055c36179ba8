package catalog

import (
	"os"
	"strings"
	"testing"
)

// TestCheck: a name no build knows is "unknown" with the known names
// listed; a known one this server does not run is "not configured" (or
// "not available", when no setting enables it) with what the server has
// and the flags and environment variables that enable it.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		role       Role
		name       string
		configured []string
		want       []string // parts of the message; none: no message
	}{
		{Model, "flow", []string{"flow"}, nil},
		{Model, "openai", []string{"flow", "openai"}, nil},
		{Model, "gpt", []string{"flow"}, []string{`unknown provider "gpt"; known providers: flow, openai, anthropic`}},
		{Model, "openai", []string{"flow"}, []string{
			`provider "openai" is not configured on this server (it has: flow); start the server with `,
			"--openai-api-key / SWITCHBOARD_OPENAI_API_KEY (OpenAI itself), or ",
			"--openai-base-url / SWITCHBOARD_OPENAI_BASE_URL (a local OpenAI-compatible server such as Ollama: http://127.0.0.1:11434/v1)",
		}},
		{Model, "anthropic", []string{"flow", "openai"}, []string{`provider "anthropic" is not configured on this server (it has: flow, openai); start the server with --anthropic-api-key / SWITCHBOARD_ANTHROPIC_API_KEY`}},
		{Voice, "polly", []string{"local"}, []string{`unknown provider "polly"; known providers: local, openai, elevenlabs, deepgram`}},
		{Voice, "elevenlabs", []string{"local"}, []string{"not configured on this server (it has: local); start the server with --elevenlabs-api-key / SWITCHBOARD_ELEVENLABS_API_KEY"}},
		{Transcriber, "elevenlabs", []string{"local"}, []string{`unknown provider "elevenlabs"; known providers: local, deepgram, openai`}},
		{Transcriber, "openai", nil, []string{"(it has none)", "--speech-openai-stt-base-url / SWITCHBOARD_SPEECH_OPENAI_STT_BASE_URL"}},
		{Transcriber, "local", []string{"deepgram"}, []string{`provider "local" is not available on this server (it has: deepgram); it needs pocketsphinx`, "-tags speech_native"}},
		{Telephony, "sip", []string{"sandbox", "twilio"}, []string{`provider "sip" is not configured on this server (it has: sandbox, twilio); start the server with --sip-addr / SWITCHBOARD_SIP_ADDR (HOST:PORT`}},
		{Telephony, "skype", []string{"sandbox"}, []string{`unknown provider "skype"; known providers: sandbox, sip, twilio`}},
	} {
		got := Check(tc.role, tc.name, tc.configured)
		if len(tc.want) == 0 {
			if got != "" {
				t.Errorf("Check(%s, %q, %v) = %q; want none", tc.role, tc.name, tc.configured, got)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("Check(%s, %q, %v) = %q; want it to contain %q", tc.role, tc.name, tc.configured, got, w)
			}
		}
	}
}

// TestTable: every provider but those every server has says how it is
// enabled, and every setting names a flag and its SWITCHBOARD_ variable.
func TestTable(t *testing.T) {
	always := map[string]bool{"model flow": true, "telephony sandbox": true, "telephony twilio": true}
	for _, p := range All() {
		key := string(p.Role) + " " + p.Name
		if (p.HowToEnable() == "") != always[key] {
			t.Errorf("%s: HowToEnable() = %q; want it empty only for a provider every server has", key, p.HowToEnable())
		}
		for _, s := range p.Enable {
			if !strings.HasPrefix(s.Flag, "--") || !strings.HasPrefix(s.Env, "SWITCHBOARD_") {
				t.Errorf("%s: setting %+v; want a --flag and a SWITCHBOARD_ variable", key, s)
			}
		}
	}
}

// TestDocumented: docs/api.md's table of what enables each provider names
// every setting of this table, as `--flag` / `ENV`.
func TestDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range All() {
		for _, s := range p.Enable {
			if want := "`" + s.Flag + "` / `" + s.Env + "`"; !strings.Contains(string(b), want) {
				t.Errorf("docs/api.md does not name %s of %s %s", want, p.Role, p.Name)
			}
		}
	}
}
