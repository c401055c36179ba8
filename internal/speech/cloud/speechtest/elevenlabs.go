package speechtest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"switchboard/internal/vendorapi/vendorapitest"
)

// elevenLabsRates are the output_format=pcm_<rate> values the fake serves.
var elevenLabsRates = []int{8000, 16000, 22050, 24000, 44100, 48000}

// NewElevenLabs starts a fake ElevenLabs serving POST
// /v1/text-to-speech/{voice_id}/stream; each request consumes the next
// turn of the script. Voice ids are ElevenLabs' 20 letters and digits; any
// other answers 404 voice_not_found, as the real API does.
func NewElevenLabs(t testing.TB, script ...Speech) *Server {
	t.Helper()
	s := newServer(t, func(s *Server) http.Handler { return http.HandlerFunc(s.serveElevenLabs) })
	s.speech = script
	return s
}

var voiceID = regexp.MustCompile(`^[A-Za-z0-9]{20}$`)

// elevenLabsError writes ElevenLabs' {"detail": {"status", "message"}}.
func elevenLabsError(w http.ResponseWriter, status int, code, msg string) {
	vendorapitest.WriteJSON(w, status, map[string]any{"detail": map[string]string{"status": code, "message": msg}})
}

// elevenLabsBody lists the body fields the fake knows.
type elevenLabsBody struct {
	Text          string          `json:"text"`
	ModelID       string          `json:"model_id"`
	VoiceSettings json.RawMessage `json:"voice_settings"`
	LanguageCode  string          `json:"language_code"`
	Seed          *int            `json:"seed"`
	PreviousText  string          `json:"previous_text"`
	NextText      string          `json:"next_text"`
}

func (s *Server) serveElevenLabs(w http.ResponseWriter, r *http.Request) {
	i, body, err := s.record(r)
	if err != nil {
		s.t.Errorf("speechtest: elevenlabs request %d: reading body: %v", i+1, err)
		elevenLabsError(w, http.StatusBadRequest, "invalid_request", "unreadable body")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/text-to-speech/")
	voice, ok2 := strings.CutSuffix(rest, "/stream")
	if r.Method != http.MethodPost || !ok || !ok2 || voice == "" || strings.Contains(voice, "/") {
		s.t.Errorf("speechtest: elevenlabs request %d: %s %s, want POST /v1/text-to-speech/{voice_id}/stream", i+1, r.Method, r.URL.Path)
		elevenLabsError(w, http.StatusNotFound, "not_found", "Not Found")
		return
	}
	if key := r.Header.Get("xi-api-key"); key != APIKey {
		// The fake echoes the key, to prove the client removes it.
		elevenLabsError(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key: "+key)
		return
	}
	q := r.URL.Query()
	var probs vendorapitest.Problems
	for k := range q {
		if !slices.Contains([]string{"output_format", "optimize_streaming_latency", "enable_logging"}, k) {
			probs.Add("unknown query parameter %q", k)
		}
	}
	f := q.Get("output_format")
	rate, err := strconv.Atoi(strings.TrimPrefix(f, "pcm_"))
	if !strings.HasPrefix(f, "pcm_") || err != nil || !slices.Contains(elevenLabsRates, rate) {
		probs.Add("output_format=%q, want pcm_<rate> with rate in %v (raw PCM)", f, elevenLabsRates)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		probs.Add("Content-Type %q, want application/json", ct)
	}
	var req elevenLabsBody
	if err := vendorapitest.StrictDecode(body, &req); err != nil {
		probs.Add("body: %v", err)
	} else if strings.TrimSpace(req.Text) == "" {
		probs.Add("text is empty")
	}
	if len(probs) > 0 {
		s.t.Errorf("speechtest: elevenlabs request %d is malformed:\n  %s", i+1, strings.Join(probs, "\n  "))
		vendorapitest.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{"loc": []string{"body"}, "msg": strings.Join(probs, "; "), "type": "value_error"}}})
		return
	}
	if !voiceID.MatchString(voice) {
		elevenLabsError(w, http.StatusNotFound, "voice_not_found", "A voice with the voice_id "+voice+" was not found.")
		return
	}
	turn, ok := s.takeSpeech()
	if !ok {
		s.t.Errorf("speechtest: elevenlabs request %d: the script has no turn left", i+1)
		elevenLabsError(w, http.StatusInternalServerError, "internal_error", "no turn scripted")
		return
	}
	s.update(i, func(r *Request) { r.Rate = rate })
	if turn.Status != 0 {
		if turn.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.RetryAfter)
		}
		code := "internal_error"
		switch {
		case turn.Status == http.StatusTooManyRequests:
			code = "too_many_concurrent_requests"
		case turn.Status < 500:
			code = "invalid_request"
		}
		elevenLabsError(w, turn.Status, code, http.StatusText(turn.Status))
		return
	}
	s.streamSpeech(w, r, turn, rate, "application/octet-stream")
}
