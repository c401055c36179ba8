package speechtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"switchboard/internal/vendorapi/vendorapitest"
)

// Transcription scripts the answer to one upload to the fake
// /v1/audio/transcriptions.
type Transcription struct {
	// Text is the transcript answered as {"text": Text}.
	Text string
	// Status, when set, answers with that status and OpenAI's error body;
	// RetryAfter is sent verbatim as the Retry-After header.
	Status     int
	RetryAfter string
	// Delay is waited before answering.
	Delay time.Duration
	// Hang never answers: the client must give up (its timeout, its context).
	Hang bool
}

// NewOpenAITranscription starts a fake OpenAI-compatible transcription
// server (OpenAI, whisper.cpp's server, faster-whisper's); each upload
// consumes the next turn of the script.
func NewOpenAITranscription(t testing.TB, script ...Transcription) *Server {
	t.Helper()
	s := newServer(t, func(s *Server) http.Handler { return http.HandlerFunc(s.serveTranscription) })
	s.trans = script
	return s
}

// NewOpenAISpeech starts a fake OpenAI-compatible /v1/audio/speech that
// streams raw PCM16 mono at 24 kHz; each request consumes the next turn of
// the script.
func NewOpenAISpeech(t testing.TB, script ...Speech) *Server {
	t.Helper()
	s := newServer(t, func(s *Server) http.Handler { return http.HandlerFunc(s.serveOpenAISpeech) })
	s.speech = script
	return s
}

// AllowNoKey makes an OpenAI fake accept requests without an Authorization
// header, as local servers (whisper.cpp, faster-whisper) do; a wrong key is
// still refused.
func (s *Server) AllowNoKey() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noKey = true
}

// openAIError writes OpenAI's error envelope.
func openAIError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	body := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		body["code"] = code
	}
	if param != "" {
		body["param"] = param
	}
	vendorapitest.WriteJSON(w, status, map[string]any{"error": body})
}

func openAIStatusError(w http.ResponseWriter, status int, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	switch {
	case status == http.StatusTooManyRequests:
		openAIError(w, status, "requests", "rate_limit_exceeded", "", "Rate limit reached for requests. Please try again later.")
	case status >= 500:
		openAIError(w, status, "server_error", "", "", "The server had an error while processing your request. Sorry about that!")
	default:
		openAIError(w, status, "invalid_request_error", "", "", http.StatusText(status))
	}
}

// openAIAuth checks the bearer key and answers 401 if it is wrong.
func (s *Server) openAIAuth(w http.ResponseWriter, r *http.Request) bool {
	auth, ok := r.Header["Authorization"]
	s.mu.Lock()
	noKey := s.noKey
	s.mu.Unlock()
	if !ok && noKey {
		return true
	}
	if ok && len(auth) == 1 && auth[0] == "Bearer "+APIKey {
		return true
	}
	key := strings.TrimPrefix(strings.Join(auth, ","), "Bearer ")
	if !ok {
		openAIError(w, http.StatusUnauthorized, "invalid_request_error", "", "",
			"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
		return false
	}
	// OpenAI masks most of the key; the fake echoes it whole, to prove the
	// client removes it from its errors.
	openAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
		"Incorrect API key provided: "+key+". You can find your API key at https://platform.openai.com/account/api-keys.")
	return false
}

var iso6391 = regexp.MustCompile(`^[a-z]{2}$`)

// transcriptionFields are the form fields the fake knows.
var transcriptionFields = map[string]bool{
	"file": true, "model": true, "language": true, "prompt": true, "response_format": true, "temperature": true,
}

func (s *Server) serveTranscription(w http.ResponseWriter, r *http.Request) {
	i, body, err := s.record(r)
	if err != nil {
		s.t.Errorf("speechtest: openai transcription request %d: reading body: %v", i+1, err)
		openAIStatusError(w, http.StatusBadRequest, "")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
		s.t.Errorf("speechtest: openai transcription request %d: %s %s, want POST /v1/audio/transcriptions", i+1, r.Method, r.URL.Path)
		openAIStatusError(w, http.StatusNotFound, "")
		return
	}
	if !s.openAIAuth(w, r) {
		return
	}
	fields, audio, rate, probs := parseUpload(r.Header.Get("Content-Type"), body)
	s.update(i, func(req *Request) { req.Fields, req.Audio, req.SampleRate = fields, audio, rate })
	if len(probs) > 0 {
		s.t.Errorf("speechtest: openai transcription request %d is malformed:\n  %s", i+1, strings.Join(probs, "\n  "))
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "", strings.Join(probs, "; "))
		return
	}
	if len(audio) < rate/10 {
		s.t.Errorf("speechtest: openai transcription request %d: %d samples at %d Hz, under OpenAI's 0.1 s minimum", i+1, len(audio), rate)
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "audio_too_short", "file",
			"Audio file is too short. Minimum audio length is 0.1 seconds.")
		return
	}
	s.mu.Lock()
	var turn Transcription
	ok := s.next < len(s.trans)
	if ok {
		turn = s.trans[s.next]
		s.next++
	}
	s.mu.Unlock()
	if !ok {
		s.t.Errorf("speechtest: openai transcription request %d: the script has no turn left", i+1)
		openAIStatusError(w, http.StatusInternalServerError, "")
		return
	}
	if turn.Hang {
		s.fake.Hang(r.Context())
		return
	}
	if !s.fake.Wait(r.Context(), turn.Delay) {
		return
	}
	if turn.Status != 0 {
		openAIStatusError(w, turn.Status, turn.RetryAfter)
		return
	}
	if fields["response_format"] == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, turn.Text+"\n") // a client that left gets nothing
		return
	}
	vendorapitest.WriteJSON(w, http.StatusOK, map[string]string{"text": turn.Text})
}

// parseUpload reads a transcription upload as strictly as OpenAI: a
// multipart/form-data body with one part per field, a WAV file part and a
// model.
func parseUpload(contentType string, body []byte) (fields map[string]string, audio []int16, rate int, probs vendorapitest.Problems) {
	fields = map[string]string{}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		probs.Add("Content-Type %q, want multipart/form-data with a boundary", contentType)
		return fields, nil, 0, probs
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	sawFile := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			probs.Add("multipart body: %v", err)
			return fields, audio, rate, probs
		}
		name := part.FormName()
		data, err := io.ReadAll(part)
		if err != nil {
			probs.Add("part %q: %v", name, err)
			return fields, audio, rate, probs
		}
		switch {
		case name == "":
			probs.Add("a part without a form-data name")
			continue
		case !transcriptionFields[name]:
			probs.Add("unknown field %q", name)
		case name == "file" && sawFile, name != "file" && fields[name] != "":
			probs.Add("field %q sent twice", name)
		}
		if name != "file" {
			if part.FileName() != "" {
				probs.Add("field %q sent as a file", name)
			}
			if !utf8.Valid(data) {
				probs.Add("field %q is not UTF-8", name)
			}
			fields[name] = string(data)
			continue
		}
		sawFile = true
		fn := part.FileName()
		if !strings.HasSuffix(strings.ToLower(fn), ".wav") {
			probs.Add("file name %q: OpenAI derives the format from the extension; want .wav", fn)
		}
		switch ct := part.Header.Get("Content-Type"); ct {
		case "", "audio/wav", "audio/x-wav", "audio/wave", "application/octet-stream":
		default:
			probs.Add("file Content-Type %q, want audio/wav", ct)
		}
		audio, rate, err = parseWAV(data)
		if err != nil {
			probs.Add("file: %v", err)
		}
	}
	if !sawFile {
		probs.Add("no file part")
	}
	if fields["model"] == "" {
		probs.Add("model is required")
	}
	if l, ok := fields["language"]; ok && !iso6391.MatchString(l) {
		probs.Add("language %q, want ISO-639-1 (two lowercase letters, en not en-US)", l)
	}
	switch f := fields["response_format"]; f {
	case "", "json", "text":
	default:
		probs.Add("response_format %q: the fake answers json or text", f)
	}
	if v, ok := fields["temperature"]; ok {
		if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 || f > 1 {
			probs.Add("temperature %q, want 0..1", v)
		}
	}
	return fields, audio, rate, probs
}

// parseWAV decodes a canonical PCM16 mono WAV file and checks every header
// field against the data.
func parseWAV(b []byte) ([]int16, int, error) {
	if len(b) < 44 {
		return nil, 0, fmt.Errorf("WAV of %d bytes, shorter than its 44-byte header", len(b))
	}
	le := binary.LittleEndian
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, 0, errors.New("not a RIFF/WAVE file")
	}
	if n := le.Uint32(b[4:]); int(n) != len(b)-8 {
		bad("RIFF size %d, want %d (file size - 8)", n, len(b)-8)
	}
	if string(b[12:16]) != "fmt " || le.Uint32(b[16:]) != 16 {
		bad("want a 16-byte fmt chunk first, got %q of %d bytes", b[12:16], le.Uint32(b[16:]))
	}
	format, channels := le.Uint16(b[20:]), le.Uint16(b[22:])
	rate, byteRate := le.Uint32(b[24:]), le.Uint32(b[28:])
	align, bits := le.Uint16(b[32:]), le.Uint16(b[34:])
	if format != 1 || channels != 1 || bits != 16 {
		bad("format %d, %d channels, %d bits; want PCM (1), mono, 16-bit", format, channels, bits)
	}
	if rate < 8000 || rate > 48000 {
		bad("sample rate %d, want 8000..48000", rate)
	}
	if byteRate != rate*2 || align != 2 {
		bad("byte rate %d and block align %d, want %d and 2", byteRate, align, rate*2)
	}
	if string(b[36:40]) != "data" {
		bad("chunk %q after fmt, want data", b[36:40])
	}
	data := b[44:]
	if n := le.Uint32(b[40:]); int(n) != len(data) {
		bad("data size %d, want %d (the bytes that follow)", n, len(data))
	}
	if len(data)%2 != 0 {
		bad("odd data size %d", len(data))
	}
	if len(errs) > 0 {
		return nil, 0, errors.New(strings.Join(errs, "; "))
	}
	samples := make([]int16, len(data)/2)
	for i := range samples {
		samples[i] = int16(le.Uint16(data[2*i:]))
	}
	return samples, int(rate), nil
}

// openAISpeechRequest is the body of /v1/audio/speech.
type openAISpeechRequest struct {
	Model          string   `json:"model"`
	Input          string   `json:"input"`
	Voice          string   `json:"voice"`
	ResponseFormat string   `json:"response_format"`
	Speed          *float64 `json:"speed"`
	Instructions   string   `json:"instructions"`
}

func (s *Server) serveOpenAISpeech(w http.ResponseWriter, r *http.Request) {
	i, body, err := s.record(r)
	if err != nil {
		s.t.Errorf("speechtest: openai speech request %d: reading body: %v", i+1, err)
		openAIStatusError(w, http.StatusBadRequest, "")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/speech" {
		s.t.Errorf("speechtest: openai speech request %d: %s %s, want POST /v1/audio/speech", i+1, r.Method, r.URL.Path)
		openAIStatusError(w, http.StatusNotFound, "")
		return
	}
	if !s.openAIAuth(w, r) {
		return
	}
	var req openAISpeechRequest
	var probs vendorapitest.Problems
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		probs.Add("Content-Type %q, want application/json", ct)
	}
	if err := vendorapitest.StrictDecode(body, &req); err != nil {
		probs.Add("body: %v", err)
	} else {
		if req.Model == "" {
			probs.Add("model is required")
		}
		if req.Voice == "" {
			probs.Add("voice is required")
		}
		if strings.TrimSpace(req.Input) == "" || utf8.RuneCountInString(req.Input) > 4096 {
			probs.Add("input of %d characters, want 1..4096", utf8.RuneCountInString(req.Input))
		}
		if req.ResponseFormat != "pcm" {
			probs.Add("response_format %q: the fake streams pcm only", req.ResponseFormat)
		}
		if req.Speed != nil && (*req.Speed < 0.25 || *req.Speed > 4) {
			probs.Add("speed %v, want 0.25..4", *req.Speed)
		}
	}
	if len(probs) > 0 {
		s.t.Errorf("speechtest: openai speech request %d is malformed:\n  %s", i+1, strings.Join(probs, "\n  "))
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "", strings.Join(probs, "; "))
		return
	}
	turn, ok := s.takeSpeech()
	if !ok {
		s.t.Errorf("speechtest: openai speech request %d: the script has no turn left", i+1)
		openAIStatusError(w, http.StatusInternalServerError, "")
		return
	}
	s.update(i, func(r *Request) { r.Rate = 24000 })
	if turn.Status != 0 {
		openAIStatusError(w, turn.Status, turn.RetryAfter)
		return
	}
	s.streamSpeech(w, r, turn, 24000, "application/octet-stream")
}
