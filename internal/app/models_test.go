package app

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// TestNewModels: a provider is enabled by its key, or by a base URL of its
// own without a key (Ollama's: the README's line); the log names the
// providers, what enables the others, and never a key.
func TestNewModels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
		log  []string // parts of the log line
	}{
		{"nothing", Config{}, []string{"flow"}, []string{"none but flow", "SWITCHBOARD_OPENAI_BASE_URL", "SWITCHBOARD_ANTHROPIC_API_KEY"}},
		{"Ollama: a base URL, no key", Config{OpenAIBaseURL: "http://127.0.0.1:11434/v1"}, []string{"flow", "openai"}, []string{`"openai_base_url":"http://127.0.0.1:11434/v1"`}},
		{"OpenAI: a key", Config{OpenAIBaseURL: DefaultOpenAIBaseURL, OpenAIKey: "sk-secret-1"}, []string{"flow", "openai"}, []string{DefaultOpenAIBaseURL}},
		{"the default URL alone", Config{OpenAIBaseURL: DefaultOpenAIBaseURL + "/"}, []string{"flow"}, nil},
		{"both", Config{OpenAIKey: "sk-secret-1", AnthropicKey: "sk-ant-secret-2"}, []string{"flow", "openai", "anthropic"}, nil},
	} {
		var buf bytes.Buffer
		clients, names := newModels(tc.cfg, slog.New(slog.NewJSONHandler(&buf, nil)))
		if !slices.Equal(names, tc.want) || len(clients) != len(tc.want)-1 {
			t.Errorf("newModels(%s) = %v (%d clients); want %v", tc.name, names, len(clients), tc.want)
		}
		for _, part := range tc.log {
			if !strings.Contains(buf.String(), part) {
				t.Errorf("newModels(%s) logged %s; want it to contain %s", tc.name, buf.String(), part)
			}
		}
		if strings.Contains(buf.String(), "secret") {
			t.Errorf("newModels(%s) logged a key: %s", tc.name, buf.String())
		}
	}
}
