package app

import (
	"log/slog"
	"net/http"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/catalog"
	"switchboard/internal/llm"
	"switchboard/internal/llm/anthropic"
	"switchboard/internal/llm/openai"
)

// newModels builds the language model providers cfg enables, by the names
// assistants use: "openai" (any OpenAI-compatible server: a key, or a base
// URL other than OpenAI's, such as Ollama's, which needs none) and
// "anthropic" (a key, or a base URL of its own). names lists them after
// "flow", which every server has: assistant.Providers.Model. log receives
// one line naming them and, for the others, what enables them (never a
// key).
func newModels(cfg Config, log *slog.Logger) (clients map[string]llm.Client, names []string) {
	clients = map[string]llm.Client{}
	names = []string{assistant.ProviderFlow}
	hc := &http.Client{Timeout: 2 * time.Minute}
	if cfg.OpenAIKey != "" || nonDefault(cfg.OpenAIBaseURL, DefaultOpenAIBaseURL) {
		clients["openai"] = openai.New(cmpOr(cfg.OpenAIBaseURL, DefaultOpenAIBaseURL), cfg.OpenAIKey, hc)
	}
	if cfg.AnthropicKey != "" || nonDefault(cfg.AnthropicBaseURL, DefaultAnthropicBaseURL) {
		clients["anthropic"] = anthropic.New(cmpOr(cfg.AnthropicBaseURL, DefaultAnthropicBaseURL), cfg.AnthropicKey, hc)
	}
	var off []string
	for _, name := range catalog.Known(catalog.Model) {
		if _, ok := clients[name]; ok {
			names = append(names, name)
		} else if p, _ := catalog.Lookup(catalog.Model, name); len(p.Enable) > 0 {
			off = append(off, name+": "+p.HowToEnable())
		}
	}
	attrs := []any{"providers", names}
	if u := cfg.OpenAIBaseURL; clients["openai"] != nil {
		attrs = append(attrs, "openai_base_url", redactURL(cmpOr(u, DefaultOpenAIBaseURL)))
	}
	if len(off) > 0 {
		attrs = append(attrs, "not_configured", off)
	}
	if len(names) == 1 {
		log.Info("model providers: none but flow; assistants reply with their flows (or take a message without one)", attrs...)
	} else {
		log.Info("model providers", attrs...)
	}
	return clients, names
}
