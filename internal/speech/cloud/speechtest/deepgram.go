package speechtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/vendorapi/vendorapitest"
)

// Session scripts one connection to the fake Deepgram /v1/listen. The fake
// transcribes nothing: it reveals the script's words as audio arrives, one
// word per WordAudio of audio, in interim results, and finalizes them as
// Deepgram does (speech_final on endpointing, from_finalize on Finalize,
// UtteranceEnd, or the rest on CloseStream).
type Session struct {
	// Status, when set, refuses the handshake with that status, Deepgram's
	// dg-error header and error body; RetryAfter is sent verbatim.
	Status     int
	RetryAfter string
	// Utterances are recognized in order.
	Utterances []Utterance
	// WordAudio is the audio that reveals one word (0 means 100 ms).
	WordAudio time.Duration
	// IdleTimeout is how long the fake waits for audio or a KeepAlive
	// before it closes with 1011 "NET-0001", as Deepgram does after 10 s
	// (0 means 10 s).
	IdleTimeout time.Duration
	// DropAfter, when positive, cuts the connection without a close frame
	// after that many audio frames.
	DropAfter int
	// StallAfter, when positive, stops reading after that many audio
	// frames (a stuck server: the client's writes back up) until the
	// server closes.
	StallAfter int
	// CloseAfter, when positive, closes the socket with CloseCode and
	// CloseReason after that many audio frames.
	CloseAfter  int
	CloseCode   websocket.StatusCode
	CloseReason string
}

// Utterance is one thing the caller says.
type Utterance struct {
	// Text is revealed a word at a time.
	Text string
	// Confidence of every result (0 means 0.98).
	Confidence float64
	// SplitAt, when positive, finalizes the first SplitAt words as their own
	// is_final segment (without speech_final) once they are revealed, as
	// Deepgram does on a pause inside an utterance.
	SplitAt int
	// Endpoint ends the utterance when its last word is revealed with
	// is_final and speech_final (Deepgram's endpointing); UtteranceEnd ends
	// it with is_final then an UtteranceEnd message. With neither, the
	// utterance waits for Finalize.
	Endpoint     bool
	UtteranceEnd bool
}

// LiveSession is what the fake saw on one connection.
type LiveSession struct {
	Header       http.Header
	Query        map[string][]string
	Frames       int // binary audio frames
	AudioBytes   int
	KeepAlives   int
	Finalizes    int
	CloseStreams int
	// Messages are the client's text messages, in order.
	Messages []string
	// Sent are the messages the fake sent, in order.
	Sent []string
	// Ended says how the session ended: "CloseStream", "idle", "drop",
	// "stall", "close", "client" (the client went away) or "server".
	Ended string
}

// NewDeepgramLive starts a fake Deepgram serving /v1/listen; each
// connection consumes the next session of the script.
func NewDeepgramLive(t testing.TB, sessions ...Session) *Server {
	t.Helper()
	s := newServer(t, func(s *Server) http.Handler { return http.HandlerFunc(s.serveListen) })
	s.sessions = sessions
	return s
}

// Sessions returns what each connection saw so far.
func (s *Server) Sessions() []LiveSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]LiveSession, len(s.live))
	for i, l := range s.live {
		out[i] = *l
		out[i].Messages = slices.Clone(l.Messages)
		out[i].Sent = slices.Clone(l.Sent)
	}
	return out
}

// deepgramError writes Deepgram's refusal of a request or handshake.
func deepgramError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("dg-request-id", "speechtest-request")
	w.Header().Set("dg-error", msg)
	vendorapitest.WriteJSON(w, status, map[string]string{"err_code": code, "err_msg": msg, "request_id": "speechtest-request"})
}

// deepgramAuth checks "Authorization: Token <key>" and answers 401 if not.
func deepgramAuth(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	if auth == "Token "+APIKey {
		return true
	}
	// Deepgram does not echo the key; the fake does, to prove the client
	// removes it from its errors.
	deepgramError(w, http.StatusUnauthorized, "INVALID_AUTH", "Invalid credentials: "+auth)
	return false
}

// listenParams are the query parameters the fake knows; any other fails
// the test, as a typo would go unnoticed by the real API.
var listenParams = []string{
	"model", "encoding", "sample_rate", "channels", "interim_results", "punctuate", "utterance_end_ms",
	"language", "keyterm", "keywords", "smart_format", "endpointing", "vad_events",
}

func (s *Server) serveListen(w http.ResponseWriter, r *http.Request) {
	i, _, _ := s.record(r)
	if r.URL.Path != "/v1/listen" || r.Method != http.MethodGet {
		s.t.Errorf("speechtest: deepgram: %s %s, want GET /v1/listen", r.Method, r.URL.Path)
		deepgramError(w, http.StatusNotFound, "NOT_FOUND", "not found")
		return
	}
	if !deepgramAuth(w, r) {
		return
	}
	q := r.URL.Query()
	var probs vendorapitest.Problems
	for k := range q {
		if !slices.Contains(listenParams, k) {
			probs.Add("unknown query parameter %q", k)
		}
	}
	if q.Get("encoding") != "linear16" {
		probs.Add("encoding=%q, want linear16 (raw PCM16)", q.Get("encoding"))
	}
	rate, err := strconv.Atoi(q.Get("sample_rate"))
	if err != nil || rate <= 0 {
		probs.Add("sample_rate=%q, want a positive integer (required with encoding)", q.Get("sample_rate"))
	}
	if q.Get("channels") != "1" {
		probs.Add("channels=%q, want 1", q.Get("channels"))
	}
	for _, k := range []string{"interim_results", "punctuate", "smart_format", "vad_events"} {
		if v := q.Get(k); v != "" && v != "true" && v != "false" {
			probs.Add("%s=%q, want true or false", k, v)
		}
	}
	if v := q.Get("utterance_end_ms"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1000 || q.Get("interim_results") != "true" {
			probs.Add("utterance_end_ms=%q needs interim_results=true and at least 1000", v)
		}
	}
	if len(q["keyterm"]) > 0 && !strings.HasPrefix(q.Get("model"), "nova-3") {
		probs.Add("keyterm is only compatible with Nova-3, model is %q", q.Get("model"))
	}
	if len(probs) > 0 {
		s.t.Errorf("speechtest: deepgram: connection %d is malformed:\n  %s", i+1, strings.Join(probs, "\n  "))
		deepgramError(w, http.StatusBadRequest, "Bad Request", strings.Join(probs, "; "))
		return
	}
	s.mu.Lock()
	if s.next >= len(s.sessions) {
		s.mu.Unlock()
		s.t.Errorf("speechtest: deepgram: connection %d: the script has no session left", i+1)
		deepgramError(w, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", "no session scripted")
		return
	}
	sess := s.sessions[s.next]
	s.next++
	s.mu.Unlock()
	if sess.Status != 0 {
		if sess.RetryAfter != "" {
			w.Header().Set("Retry-After", sess.RetryAfter)
		}
		code := map[int]string{429: "TOO_MANY_REQUESTS", 402: "ASR_PAYMENT_REQUIRED", 403: "INSUFFICIENT_PERMISSIONS"}[sess.Status]
		if code == "" {
			code = strings.ToUpper(strings.ReplaceAll(http.StatusText(sess.Status), " ", "_"))
		}
		deepgramError(w, sess.Status, code, http.StatusText(sess.Status))
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.t.Errorf("speechtest: deepgram: upgrading connection %d: %v", i+1, err)
		return
	}
	conn.SetReadLimit(1 << 20) // Deepgram documents no frame limit; a second of 48 kHz audio fits
	rec := &LiveSession{Header: r.Header.Clone(), Query: q}
	s.mu.Lock()
	s.live = append(s.live, rec)
	s.mu.Unlock()
	l := &liveConn{s: s, conn: conn, sess: sess, rec: rec, rate: rate}
	l.run(r)
}

// liveConn plays one session. One goroutine reads frames into a channel;
// the handler's goroutine does everything else, so writes never race.
type liveConn struct {
	s    *Server
	conn *websocket.Conn
	sess Session
	rec  *LiveSession
	rate int

	utt      int // current utterance
	revealed int // its words revealed
	final    int // its words already sent in an is_final segment
	uttBytes int // audio received since the utterance began
	audioSec float64
	lastSent float64 // end of the audio already covered by a final
}

type frame struct {
	typ  websocket.MessageType
	data []byte
	err  error
}

func (l *liveConn) run(r *http.Request) {
	ctx := r.Context()
	frames := make(chan frame)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			typ, data, err := l.conn.Read(ctx)
			select {
			case frames <- frame{typ, data, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		l.conn.CloseNow()
		wg.Wait()
	}()

	idleTimeout := cmp(l.sess.IdleTimeout, 10*time.Second)
	idle := time.NewTimer(idleTimeout)
	defer idle.Stop()
	for {
		select {
		case <-l.s.fake.Done():
			l.end("server")
			return
		case <-idle.C:
			l.end("idle")
			l.conn.Close(websocket.StatusInternalError, "NET-0001")
			return
		case f := <-frames:
			if f.err != nil {
				l.end("client")
				return
			}
			switch f.typ {
			case websocket.MessageBinary:
				idle.Reset(idleTimeout)
				if !l.audio(f.data) {
					return
				}
			case websocket.MessageText:
				if !l.text(f.data, func() { idle.Reset(idleTimeout) }) {
					return
				}
			}
		}
	}
}

func (l *liveConn) end(how string) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.rec.Ended == "" {
		l.rec.Ended = how
	}
}

func (l *liveConn) words() []string {
	if l.utt >= len(l.sess.Utterances) {
		return nil
	}
	return strings.Fields(l.sess.Utterances[l.utt].Text)
}

// audio handles one binary frame; false ends the session.
func (l *liveConn) audio(data []byte) bool {
	if len(data) == 0 || len(data)%2 != 0 {
		l.s.t.Errorf("speechtest: deepgram: audio frame of %d bytes, want a non-empty, even number (linear16)", len(data))
	}
	l.s.mu.Lock()
	l.rec.Frames++
	l.rec.AudioBytes += len(data)
	frames := l.rec.Frames
	l.s.mu.Unlock()
	l.audioSec += float64(len(data)/2) / float64(l.rate)
	if l.sess.DropAfter > 0 && frames >= l.sess.DropAfter {
		l.end("drop")
		l.conn.CloseNow()
		return false
	}
	if l.sess.StallAfter > 0 && frames >= l.sess.StallAfter {
		l.end("stall")
		<-l.s.fake.Done()
		return false
	}
	if l.sess.CloseAfter > 0 && frames >= l.sess.CloseAfter {
		l.end("close")
		l.conn.Close(l.sess.CloseCode, l.sess.CloseReason)
		return false
	}
	words := l.words()
	if words == nil {
		return true // nothing more to recognize: silence
	}
	l.uttBytes += len(data)
	wordBytes := int(int64(2*l.rate) * int64(cmp(l.sess.WordAudio, 100*time.Millisecond)) / int64(time.Second))
	u := l.sess.Utterances[l.utt]
	for l.revealed < len(words) && l.uttBytes >= (l.revealed+1)*wordBytes {
		l.revealed++
		if !l.results(words[l.final:l.revealed], false, false, false) {
			return false
		}
		if u.SplitAt > 0 && l.revealed == u.SplitAt && l.final == 0 && u.SplitAt < len(words) {
			if !l.results(words[:u.SplitAt], true, false, false) {
				return false
			}
			l.final = u.SplitAt
		}
	}
	if l.revealed == len(words) && (u.Endpoint || u.UtteranceEnd) {
		if !l.results(words[l.final:], true, u.Endpoint, false) {
			return false
		}
		if u.UtteranceEnd && !l.send(map[string]any{"type": "UtteranceEnd", "channel": []int{0, 1}, "last_word_end": l.audioSec}) {
			return false
		}
		l.nextUtterance()
	}
	return true
}

func (l *liveConn) nextUtterance() {
	l.utt++
	l.revealed, l.final, l.uttBytes = 0, 0, 0
}

// text handles one control message; false ends the session.
func (l *liveConn) text(data []byte, keptAlive func()) bool {
	var msg struct {
		Type    string `json:"type"`
		Channel *int   `json:"channel"`
	}
	l.s.mu.Lock()
	l.rec.Messages = append(l.rec.Messages, string(data))
	l.s.mu.Unlock()
	if err := vendorapitest.StrictDecode(data, &msg); err != nil {
		l.s.t.Errorf("speechtest: deepgram: text message %q is not a control message: %v", data, err)
		return true
	}
	switch msg.Type {
	case "KeepAlive":
		keptAlive()
		l.count(&l.rec.KeepAlives)
	case "Finalize":
		l.count(&l.rec.Finalizes)
		// Deepgram answers only when it holds unfinalized audio.
		if l.uttBytes > 0 {
			words := l.words()
			if !l.results(words[l.final:l.revealed], true, false, true) {
				return false
			}
			l.nextUtterance()
		}
	case "CloseStream":
		l.count(&l.rec.CloseStreams)
		if l.uttBytes > 0 && l.revealed > l.final {
			if !l.results(l.words()[l.final:l.revealed], true, false, false) {
				return false
			}
		}
		l.send(map[string]any{
			"type": "Metadata", "transaction_key": "deprecated", "request_id": "speechtest-request",
			"sha256":  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			"created": "2026-11-21T10:00:00.000Z", "duration": l.audioSec, "channels": 1,
		})
		l.end("CloseStream")
		l.conn.Close(websocket.StatusNormalClosure, "")
		return false
	default:
		l.s.t.Errorf("speechtest: deepgram: unknown control message type %q", msg.Type)
	}
	return true
}

func (l *liveConn) count(n *int) {
	l.s.mu.Lock()
	*n++
	l.s.mu.Unlock()
}

// results sends a Results message for words, in Deepgram's shape.
func (l *liveConn) results(words []string, isFinal, speechFinal, fromFinalize bool) bool {
	conf := 0.98
	if l.utt < len(l.sess.Utterances) && l.sess.Utterances[l.utt].Confidence > 0 {
		conf = l.sess.Utterances[l.utt].Confidence
	}
	type word struct {
		Word           string  `json:"word"`
		Start          float64 `json:"start"`
		End            float64 `json:"end"`
		Confidence     float64 `json:"confidence"`
		PunctuatedWord string  `json:"punctuated_word"`
	}
	start := l.lastSent
	dur := max(0, l.audioSec-start)
	ws := make([]word, len(words))
	for i, w := range words {
		ws[i] = word{
			Word:           strings.ToLower(strings.Trim(w, ".,?!")),
			Start:          start + dur*float64(i)/float64(len(words)),
			End:            start + dur*float64(i+1)/float64(len(words)),
			Confidence:     conf,
			PunctuatedWord: w,
		}
	}
	msg := map[string]any{
		"type":          "Results",
		"channel_index": []int{0, 1},
		"duration":      dur,
		"start":         start,
		"is_final":      isFinal,
		"speech_final":  speechFinal,
		"from_finalize": fromFinalize,
		"channel": map[string]any{"alternatives": []map[string]any{{
			"transcript": strings.Join(words, " "), "confidence": conf, "words": ws,
		}}},
		"metadata": map[string]any{
			"request_id": "speechtest-request",
			"model_info": map[string]string{"name": "2-general-nova", "version": "2024-01-09.29447", "arch": "nova-3"},
			"model_uuid": "speechtest-model",
		},
	}
	if isFinal {
		l.lastSent = l.audioSec
	}
	return l.send(msg)
}

func (l *liveConn) send(msg any) bool {
	b, err := json.Marshal(msg)
	if err != nil {
		l.s.t.Errorf("speechtest: deepgram: encoding %v: %v", msg, err)
		return false
	}
	l.s.mu.Lock()
	l.rec.Sent = append(l.rec.Sent, string(b))
	l.s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.conn.Write(ctx, websocket.MessageText, b) == nil
}

// speakRates are the rates Aura produces linear16 at.
var speakRates = []int{8000, 16000, 24000, 32000, 48000}

// NewDeepgramSpeak starts a fake Deepgram serving Aura's POST /v1/speak;
// each request consumes the next turn of the script.
func NewDeepgramSpeak(t testing.TB, script ...Speech) *Server {
	t.Helper()
	s := newServer(t, func(s *Server) http.Handler { return http.HandlerFunc(s.serveSpeak) })
	s.speech = script
	return s
}

func (s *Server) serveSpeak(w http.ResponseWriter, r *http.Request) {
	i, body, err := s.record(r)
	if err != nil {
		s.t.Errorf("speechtest: deepgram speak request %d: reading body: %v", i+1, err)
		deepgramError(w, http.StatusBadRequest, "Bad Request", "unreadable body")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/speak" {
		s.t.Errorf("speechtest: deepgram speak request %d: %s %s, want POST /v1/speak", i+1, r.Method, r.URL.Path)
		deepgramError(w, http.StatusNotFound, "NOT_FOUND", "not found")
		return
	}
	if !deepgramAuth(w, r) {
		return
	}
	q := r.URL.Query()
	var probs vendorapitest.Problems
	for k := range q {
		if !slices.Contains([]string{"model", "encoding", "sample_rate", "container", "bit_rate", "callback", "callback_method", "mip_opt_out", "tag"}, k) {
			probs.Add("unknown query parameter %q", k)
		}
	}
	if !strings.HasPrefix(q.Get("model"), "aura-") {
		probs.Add("model=%q, want an Aura voice (aura-…)", q.Get("model"))
	}
	if q.Get("encoding") != "linear16" {
		probs.Add("encoding=%q, want linear16", q.Get("encoding"))
	}
	rate, err := strconv.Atoi(q.Get("sample_rate"))
	if err != nil || !slices.Contains(speakRates, rate) {
		probs.Add("sample_rate=%q, want one of %v for linear16", q.Get("sample_rate"), speakRates)
	}
	if q.Get("container") != "none" {
		probs.Add("container=%q, want none (raw PCM, no WAV header)", q.Get("container"))
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		probs.Add("Content-Type %q, want application/json", ct)
	}
	var req struct {
		Text string `json:"text"`
	}
	if err := vendorapitest.StrictDecode(body, &req); err != nil {
		probs.Add("body: %v", err)
	} else if strings.TrimSpace(req.Text) == "" {
		probs.Add("text is empty")
	}
	if len(probs) > 0 {
		s.t.Errorf("speechtest: deepgram speak request %d is malformed:\n  %s", i+1, strings.Join(probs, "\n  "))
		deepgramError(w, http.StatusBadRequest, "Bad Request", strings.Join(probs, "; "))
		return
	}
	turn, ok := s.takeSpeech()
	if !ok {
		s.t.Errorf("speechtest: deepgram speak request %d: the script has no turn left", i+1)
		deepgramError(w, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", "no turn scripted")
		return
	}
	s.update(i, func(r *Request) { r.Rate = rate })
	if turn.Status != 0 {
		if turn.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.RetryAfter)
		}
		deepgramError(w, turn.Status, fmt.Sprintf("HTTP_%d", turn.Status), http.StatusText(turn.Status))
		return
	}
	w.Header().Set("dg-request-id", "speechtest-request")
	s.streamSpeech(w, r, turn, rate, "application/octet-stream")
}
