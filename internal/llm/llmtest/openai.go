package llmtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/vendorapi/vendorapitest"
)

// NewOpenAI starts a fake OpenAI Chat Completions server; its URL ends in
// /v1, like https://api.openai.com/v1. Each request consumes the next turn
// of script; a request past the end of the script fails the test.
func NewOpenAI(t testing.TB, script ...Turn) *Server {
	t.Helper()
	s := newServer(t, script, func(s *Server) http.Handler { return &openAIFake{s: s} })
	s.URL += "/v1"
	return s
}

type openAIFake struct{ s *Server }

func (f *openAIFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := f.s
	n, body, err := s.receive(r)
	if err != nil {
		s.t.Errorf("llmtest: openai request %d: reading body: %v", n, err)
		openAIError(w, http.StatusBadRequest, "")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("llmtest: openai request %d: %s %s, want POST /v1/chat/completions", n, r.Method, r.URL.Path)
		openAIError(w, http.StatusNotFound, "")
		return
	}
	auth := r.Header.Get("Authorization")
	if auth != "Bearer "+APIKey {
		openAIAuthError(w, auth)
		return
	}
	req, probs := checkOpenAI(r, body)
	if len(probs) > 0 {
		s.t.Errorf("llmtest: openai request %d is malformed:\n  %s", n, strings.Join(probs, "\n  "))
		openAIError(w, http.StatusBadRequest, "")
		return
	}
	turn, ok := s.take(body)
	if !ok {
		s.t.Errorf("llmtest: openai request %d: the script has no turn left", n)
		openAIError(w, http.StatusInternalServerError, "")
		return
	}
	if !s.fake.Wait(r.Context(), turn.Delay) {
		return
	}
	if turn.Status != 0 {
		if turn.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.RetryAfter)
		}
		openAIError(w, turn.Status, "")
		return
	}
	f.stream(w, r, n, turn, req, body)
}

// stream writes the turn as OpenAI does: a first chunk with the role, one
// chunk per text piece, per tool call a chunk with id and name then its
// arguments in pieces, a chunk with finish_reason, the usage chunk (empty
// choices) when stream_options.include_usage asked for it, then [DONE].
func (f *openAIFake) stream(w http.ResponseWriter, r *http.Request, n int, turn Turn, req *oaRequest, body []byte) {
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage != nil && *req.StreamOptions.IncludeUsage
	base := oaChunk{
		ID:                fmt.Sprintf("chatcmpl-llmtest%d", n),
		Object:            "chat.completion.chunk",
		Created:           1_750_000_000 + int64(n),
		Model:             req.Model,
		SystemFingerprint: "fp_llmtest",
	}
	if includeUsage {
		base.Usage = json.RawMessage("null")
	}
	ctx := r.Context()
	ew := f.s.startStream(w, turn)
	send := func(d oaDelta, finish *string) bool {
		c := base
		c.Choices = []oaChoice{{Delta: d, Logprobs: json.RawMessage("null"), FinishReason: finish}}
		return ew.event(ctx, "", c)
	}
	first := oaDelta{Role: "assistant", Content: json.RawMessage(`""`), Refusal: json.RawMessage("null")}
	if len(turn.Text) == 0 && len(turn.ToolCalls) > 0 {
		first.Content = json.RawMessage("null")
	}
	if !send(first, nil) {
		return
	}
	sent := 0
	for i, text := range turn.Text {
		if turn.MidStreamError && i == midpoint(turn) {
			break
		}
		c, _ := json.Marshal(text)
		if !send(oaDelta{Content: c}, nil) {
			return
		}
		sent++
	}
	if turn.MidStreamError {
		ew.event(ctx, "", `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)
		return
	}
	for i, tc := range turn.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_llmtest%d_%d", n, i)
		}
		if !send(oaDelta{ToolCalls: []oaToolDelta{{Index: i, ID: id, Type: "function", Function: oaFunction{Name: tc.Name, Arguments: ""}}}}, nil) {
			return
		}
		for _, p := range pieces(compactArgs(tc.Arguments), argPiece) {
			if !send(oaDelta{ToolCalls: []oaToolDelta{{Index: i, Function: oaFunction{Arguments: p}}}}, nil) {
				return
			}
			sent++
		}
	}
	if turn.Hang {
		f.s.fake.Hang(r.Context())
		return
	}
	if turn.Truncate {
		return
	}
	finish := "stop"
	switch {
	case turn.MaxTokens:
		finish = "length"
	case len(turn.ToolCalls) > 0:
		finish = "tool_calls"
	}
	if !send(oaDelta{}, &finish) {
		return
	}
	if includeUsage {
		in, out := usageFor(turn, body, sent)
		c := base
		c.Choices = []oaChoice{}
		c.Usage, _ = json.Marshal(struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		}{in, out, in + out})
		if !ew.event(ctx, "", c) {
			return
		}
	}
	ew.event(ctx, "", "[DONE]")
}

type oaChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []oaChoice      `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

type oaChoice struct {
	Index        int             `json:"index"`
	Delta        oaDelta         `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type oaDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Refusal   json.RawMessage `json:"refusal,omitempty"`
	ToolCalls []oaToolDelta   `json:"tool_calls,omitempty"`
}

type oaToolDelta struct {
	Index    int        `json:"index"`
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// openAIErrors is the error body the fake sends for each status.
var openAIErrors = map[int]struct{ typ, code, msg string }{
	400: {"invalid_request_error", "", "Invalid request: see the test log for what the fake refused."},
	401: {"invalid_request_error", "invalid_api_key", "Incorrect API key provided."},
	403: {"invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported"},
	404: {"invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."},
	429: {"requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."},
	500: {"server_error", "", "The server had an error while processing your request. Sorry about that!"},
	503: {"server_error", "", "The engine is currently overloaded, please try again later"},
}

func openAIError(w http.ResponseWriter, status int, msg string) {
	e, ok := openAIErrors[status]
	if !ok {
		e.typ, e.msg = "invalid_request_error", http.StatusText(status)
		if status >= 500 {
			e.typ = "server_error"
		}
	}
	if msg != "" {
		e.msg = msg
	}
	var code *string
	if e.code != "" {
		code = &e.code
	}
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	vendorapitest.WriteJSON(w, status, struct {
		Error body `json:"error"`
	}{body{Message: e.msg, Type: e.typ, Code: code}})
}

// openAIAuthError answers a missing or wrong key as OpenAI does, showing
// only the ends of the key it was given.
func openAIAuthError(w http.ResponseWriter, auth string) {
	key, ok := strings.CutPrefix(auth, "Bearer ")
	switch {
	case !ok || key == "":
		openAIError(w, http.StatusUnauthorized, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
	default:
		masked := key
		if len(key) > 8 {
			masked = key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
		}
		openAIError(w, http.StatusUnauthorized, "Incorrect API key provided: "+masked+". You can find your API key at https://platform.openai.com/account/api-keys.")
	}
}

// oaRequest is the part of the Chat Completions request the fake accepts.
// Unknown fields are refused, as OpenAI refuses unrecognized arguments.
type oaRequest struct {
	Model               string           `json:"model"`
	Messages            []oaMessage      `json:"messages"`
	Tools               []oaTool         `json:"tools"`
	ToolChoice          json.RawMessage  `json:"tool_choice"`
	ParallelToolCalls   *bool            `json:"parallel_tool_calls"`
	Temperature         *float64         `json:"temperature"`
	TopP                *float64         `json:"top_p"`
	MaxTokens           *int             `json:"max_tokens"`
	MaxCompletionTokens *int             `json:"max_completion_tokens"`
	Stop                json.RawMessage  `json:"stop"`
	Seed                *int             `json:"seed"`
	User                string           `json:"user"`
	Stream              *bool            `json:"stream"`
	StreamOptions       *oaStreamOptions `json:"stream_options"`
}

type oaStreamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
}

type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []oaToolCall    `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// checkOpenAI validates a request as the API would and lists what is wrong.
func checkOpenAI(r *http.Request, body []byte) (*oaRequest, vendorapitest.Problems) {
	var p vendorapitest.Problems
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		p.Add("Content-Type is %q, want application/json", ct)
	}
	var req oaRequest
	if err := vendorapitest.StrictDecode(body, &req); err != nil {
		p.Add("body: %v", err)
		return &req, p
	}
	if req.Model == "" {
		p.Add("model: required")
	}
	if req.Stream == nil || !*req.Stream {
		p.Add(`stream: must be true (the fake only streams)`)
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2) {
		p.Add("temperature: %v is outside [0, 2]", *req.Temperature)
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		p.Add("max_tokens: %d, want at least 1", *req.MaxTokens)
	}
	if len(req.Messages) == 0 {
		p.Add("messages: at least one message is required")
	}
	// open holds the tool call ids of the last assistant message that the
	// following tool messages have not answered yet.
	open := map[string]bool{}
	for i, m := range req.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		if m.Role != "tool" && len(open) > 0 {
			p.Add("%s: an assistant message with tool_calls must be followed by tool messages answering each tool_call_id; unanswered: %s", field, keys(open))
			clear(open)
		}
		var text string
		isString := json.Unmarshal(m.Content, &text) == nil
		isNull := len(m.Content) == 0 || string(m.Content) == "null"
		switch m.Role {
		case "system", "developer", "user":
			if !isString && !isArray(m.Content) {
				p.Add("%s.content: must be a string or an array of content parts", field)
			}
		case "assistant":
			if isNull && len(m.ToolCalls) == 0 {
				p.Add("%s.content: required unless tool_calls is set", field)
			}
			if !isNull && !isString && !isArray(m.Content) {
				p.Add("%s.content: must be a string, an array or null", field)
			}
			for j, tc := range m.ToolCalls {
				f := fmt.Sprintf("%s.tool_calls[%d]", field, j)
				if tc.ID == "" {
					p.Add("%s.id: required", f)
				}
				if tc.Type != "function" {
					p.Add("%s.type: %q, want \"function\"", f, tc.Type)
				}
				if tc.Function.Name == "" {
					p.Add("%s.function.name: required", f)
				}
				var args string
				if json.Unmarshal(tc.Function.Arguments, &args) != nil {
					p.Add("%s.function.arguments: must be a string of JSON", f)
				} else if !json.Valid([]byte(args)) {
					p.Add("%s.function.arguments: %q is not JSON", f, args)
				}
				open[tc.ID] = true
			}
		case "tool":
			if !isString {
				p.Add("%s.content: must be a string", field)
			}
			switch {
			case m.ToolCallID == "":
				p.Add("%s.tool_call_id: required", field)
			case !open[m.ToolCallID]:
				p.Add("%s.tool_call_id: %q answers no tool call of the preceding assistant message", field, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			p.Add("%s.role: %q is not system, developer, user, assistant or tool", field, m.Role)
		}
		if m.Role != "assistant" && len(m.ToolCalls) > 0 {
			p.Add("%s.tool_calls: only assistant messages have tool calls", field)
		}
	}
	if len(open) > 0 {
		p.Add("messages: tool calls never answered: %s", keys(open))
	}
	for i, t := range req.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			p.Add("%s.type: %q, want \"function\"", field, t.Type)
		}
		if !validToolName(t.Function.Name) {
			p.Add("%s.function.name: %q does not match ^[a-zA-Z0-9_-]{1,64}$", field, t.Function.Name)
		}
		if len(t.Function.Parameters) > 0 && !isObject(t.Function.Parameters) {
			p.Add("%s.function.parameters: must be a JSON Schema object", field)
		}
	}
	if req.StreamOptions != nil && (req.Stream == nil || !*req.Stream) {
		p.Add("stream_options: only allowed when stream is true")
	}
	return &req, p
}

func isArray(raw json.RawMessage) bool {
	var a []json.RawMessage
	return json.Unmarshal(raw, &a) == nil && a != nil
}

func keys(m map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}
