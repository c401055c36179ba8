package app

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/audio"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/speechtest"
	"switchboard/internal/speech/local"
)

// voiceClient is a web call's audio client in a test: it streams a
// microphone (silence, or queued speech) in real time, 20 ms a frame, and
// collects the server's events and audio.
type voiceClient struct {
	t    *testing.T
	conn *websocket.Conn

	events chan protocol.ServerEvent
	say    chan []byte // utterances for the microphone (PCM16, 16 kHz)

	mu         sync.Mutex
	audioBytes map[string]int // assistant audio received per turn
	current    string         // the turn whose audio is playing
	afterClear int            // binary frames received after an assistant.audio.clear
	cleared    bool
	stop       context.CancelFunc
	done       sync.WaitGroup
}

func newVoiceClient(t *testing.T, conn *websocket.Conn) *voiceClient {
	ctx, cancel := context.WithCancel(context.Background())
	c := &voiceClient{t: t, conn: conn, events: make(chan protocol.ServerEvent, 4096), say: make(chan []byte, 4),
		audioBytes: map[string]int{}, stop: cancel}
	c.done.Go(func() { c.read(ctx) })
	c.done.Go(func() { c.mic(ctx) })
	t.Cleanup(func() { cancel(); conn.CloseNow(); c.done.Wait() })
	return c
}

func (c *voiceClient) read(ctx context.Context) {
	defer close(c.events)
	for {
		typ, data, err := c.conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			c.mu.Lock()
			c.audioBytes[c.current] += len(data)
			if c.cleared {
				c.afterClear++
			}
			c.mu.Unlock()
			continue
		}
		ev, err := protocol.DecodeServer(data)
		if err != nil {
			c.t.Errorf("gateway sent an invalid event %s: %v", data, err)
			return
		}
		c.mu.Lock()
		switch e := ev.(type) {
		case protocol.AudioStart:
			c.current, c.cleared = e.TurnID, false
		case protocol.AudioClear:
			c.cleared = true
		}
		c.mu.Unlock()
		c.events <- ev
	}
}

// mic is the client's microphone: queued speech, else silence, in real time.
func (c *voiceClient) mic(ctx context.Context) {
	audio.RealTime(ctx, c.say, make([]byte, 2*audio.FrameSamples), func(frame []byte) error {
		return c.conn.Write(ctx, websocket.MessageBinary, frame)
	}, nil)
}

func (c *voiceClient) send(ev protocol.ClientEvent) {
	c.t.Helper()
	b, err := protocol.EncodeClient(ev)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatalf("writing to the gateway: %v", err)
	}
}

// until collects events until done says so, failing after within.
func (c *voiceClient) until(within time.Duration, what string, done func(protocol.ServerEvent) bool) []protocol.ServerEvent {
	c.t.Helper()
	var out []protocol.ServerEvent
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				c.t.Fatalf("the socket closed waiting for %s; events: %s", what, describe(out))
			}
			out = append(out, ev)
			if done(ev) {
				return out
			}
		case <-deadline:
			c.t.Fatalf("no %s within %s; events: %s", what, within, describe(out))
		}
	}
}

func describe(evs []protocol.ServerEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		j, _ := json.Marshal(ev)
		b.WriteString(ev.Type() + string(j) + "\n")
	}
	return b.String()
}

// speak synthesizes a caller's words with espeak-ng, PCM16 at 16 kHz.
func speak(t *testing.T, tts speech.Synthesizer, text string) []byte {
	t.Helper()
	var pcm []byte
	err := tts.Synthesize(context.Background(), text, speech.VoiceOptions{SampleRate: audio.PipelineRate}, func(p []int16) error {
		pcm = audio.EncodePCM16(pcm, p)
		return nil
	})
	if err != nil {
		t.Fatalf("synthesizing %q: %v", text, err)
	}
	return pcm
}

// localVoice is the caller's voice; without the local engines the server
// needs, the test stops as requireLocal says.
func localVoice(t *testing.T) speech.Synthesizer {
	t.Helper()
	requireLocal(t)
	tts, err := local.NewSynthesizer(local.SynthesizerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tts
}

// speechNativeBuild is set by speechnative_test.go in a build with the
// native speech engines (-tags speech_native, cgo): what make test runs.
var speechNativeBuild = false

// requireLocal stops a test that needs both local speech engines when they
// are missing: it fails in a speech_native build (make test installs them)
// and skips in the pure-Go build (make test-short), which has no local
// recognizer.
func requireLocal(t *testing.T) {
	t.Helper()
	tts, stt, why := local.Available()
	if tts && stt {
		return
	}
	if !speechNativeBuild {
		t.Skipf("the local speech engines are not in this build (%s); make test runs this test", why)
	}
	t.Fatalf("the local speech engines are not available (%s): make test installs them", why)
}

func isTurnDoneWith(s string) func(protocol.ServerEvent) bool {
	return func(ev protocol.ServerEvent) bool {
		d, ok := ev.(protocol.TurnDone)
		return ok && strings.Contains(d.Text, s)
	}
}

// TestVoiceWebCallBooking is the voice end-to-end test: a websocket client
// streams espeak-ng speech for a scripted caller at real-time pace to the
// booking flow on the local engines; the assistant's audio comes back, the
// transcript holds the recognized caller text and the assistant's text,
// and the analysis is ready.
func TestVoiceWebCallBooking(t *testing.T) { eachDB(t, voiceBooking) }

func voiceBooking(t *testing.T, dbURL string) {
	tts := localVoice(t)
	b := start(t, testConfig(dbURL))
	asst := b.bookingAssistant(b.key)
	callID, ws := b.dialWebCall(asst)
	c := newVoiceClient(t, ws.conn)
	c.send(protocol.SessionUpdate{TextOnly: new(false), Audio: &protocol.Audio{Encoding: protocol.PCM16, SampleRate: 16000}})
	c.until(30*time.Second, "the greeting", isTurnDoneWith("What day would suit you?"))

	evs := c.answer(tts, "I would like to book an appointment for tomorrow", isTurnDoneWith("is that right?"))
	var heard string
	var started, stopped, audioStart, audioDone bool
	for _, ev := range evs {
		switch e := ev.(type) {
		case protocol.SpeechStarted:
			started = true
		case protocol.SpeechStopped:
			stopped = true
		case protocol.Transcript:
			if e.Role == protocol.RoleUser && e.Final {
				heard = e.Text
			}
		case protocol.AudioStart:
			audioStart = true
		case protocol.AudioDone:
			audioDone = true
		case protocol.ErrorEvent:
			t.Errorf("error event: %+v", e)
		}
	}
	if !started || !stopped || !audioStart || !audioDone {
		t.Errorf("speech.started %v, speech.stopped %v, assistant.audio.start %v, assistant.audio.done %v; want all; events:\n%s",
			started, stopped, audioStart, audioDone, describe(evs))
	}
	if !strings.Contains(heard, "tomorrow") {
		t.Fatalf("recognized %q, want it to hold \"tomorrow\"", heard)
	}

	evs = c.answer(tts, "yes", isEnded)
	if e := evs[len(evs)-1].(protocol.CallEnded); e.EndedReason != "assistant-ended-call" {
		t.Errorf("call.ended = %+v", e)
	}
	c.mu.Lock()
	perTurn := c.audioBytes
	c.mu.Unlock()
	var spoken int
	for turn, n := range perTurn {
		if turn != "" && n > 0 {
			spoken++
		}
		if n%640 != 0 {
			t.Errorf("turn %s: %d bytes of audio, not whole 20 ms frames", turn, n)
		}
	}
	if spoken < 3 {
		t.Errorf("assistant audio per turn = %v, want the greeting, the confirmation and the goodbye spoken", perTurn)
	}

	b.checkBooked(callID, true)
	turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
	// The replies to the caller's speech (the confirmation, the goodbye)
	// carry the latency breakdown, and the call its p50/p95.
	replies := 0
	for i, tr := range turns {
		text := tr["text"].(string)
		if tr["role"] != "assistant" || (!strings.Contains(text, "is that right?") && !strings.Contains(text, "Goodbye")) {
			continue
		}
		replies++
		l, _ := tr["latency"].(map[string]any)
		if l == nil || l["totalMs"].(float64) <= 0 || l["transcriberMs"].(float64) <= 0 || l["voiceMs"].(float64) <= 0 {
			t.Errorf("turn %d (%q) latency = %v, want a breakdown", i+1, text, tr["latency"])
		}
		t.Logf("turn %d latency %v", i+1, l)
	}
	detail := b.must(200, "GET", "/v1/calls/"+callID, nil).data()
	if l, _ := detail["latency"].(map[string]any); l == nil || l["turns"].(float64) < float64(replies) || l["p95"] == nil {
		t.Errorf("call latency = %v, want p50/p95 over the %d replies at least", detail["latency"], replies)
	}
	m := b.metrics()
	for _, want := range []string{`switchboard_voice_turn_latency_seconds_count{stage="platform"} `, `switchboard_voice_calls_total 1`,
		`switchboard_voice_frames_dropped_total{direction="in"} `, `switchboard_voice_utterances_dropped_total `} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// answer says words into the microphone and collects events until done
// says so. When the assistant asks again instead — the recognizer lost the
// words (conversation.MissedPrompt) or misheard them (the flow's noMatch)
// — it says them again, as a caller would, at most three times.
func (c *voiceClient) answer(tts speech.Synthesizer, words string, done func(protocol.ServerEvent) bool) []protocol.ServerEvent {
	c.t.Helper()
	var all []protocol.ServerEvent
	for range 3 {
		c.say <- speak(c.t, tts, words)
		var again bool
		all = append(all, c.until(60*time.Second, "the answer to "+strconv.Quote(words), func(ev protocol.ServerEvent) bool {
			if d, ok := ev.(protocol.TurnDone); ok && (strings.Contains(d.Text, "didn't catch") || strings.HasPrefix(d.Text, "Sorry, which")) {
				again = true
				return true
			}
			return done(ev)
		})...)
		if !again {
			return all
		}
	}
	c.t.Fatalf("the assistant asked for %q three times; events: %s", words, describe(all))
	return nil
}

// TestSandboxVoiceCall: a sandbox phone call to the default persona runs
// over audio end to end — the assistant's speech synthesized, μ-law at
// 8 kHz, recognized by the persona, whose spoken answers are recognized by
// the assistant — and produces a two-sided transcript.
func TestSandboxVoiceCall(t *testing.T) {
	t.Parallel()
	requireLocal(t)
	cfg := testConfig(databases(t)["sqlite"](t))
	cfg.SandboxVoice = true
	cfg.Sandbox.TalkTime = time.Minute
	b := start(t, cfg)
	asst := b.bookingAssistant(b.key)
	// Patient with the persona, whose own recognizer a loaded machine slows
	// down: the talk time (a minute) bounds the call.
	b.must(200, "PATCH", "/v1/assistants/"+asst, map[string]any{"silenceTimeoutSeconds": 90})
	p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100"}).data()["id"].(string)
	b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "outboundAssistantId": asst})
	callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": p, "phoneNumber": "+14155551234"}).Body["callId"].(string)
	c := b.waitCall(b.key, callID, 90*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
	var users, assistants int
	var texts []string
	for _, tr := range turns {
		texts = append(texts, tr["role"].(string)+": "+tr["text"].(string))
		switch tr["role"] {
		case "user":
			users++
		case "assistant":
			assistants++
		}
	}
	t.Logf("call ended %v/%v; transcript:\n%s", c["outcome"], c["endedReason"], strings.Join(texts, "\n"))
	if users < 1 || assistants < 2 {
		t.Fatalf("transcript has %d caller and %d assistant turns, want a two-sided conversation", users, assistants)
	}
	if c["outcome"] != "completed" {
		t.Errorf("call = %v/%v, want completed", c["outcome"], c["endedReason"])
	}
}

// bargeInFlow asks for a day, then reads out a long answer the caller
// cuts short.
const bargeInFlow = `{
  "start": "ask",
  "nodes": {
    "ask": {"type": "ask", "text": "What day would suit you?",
      "branches": [{"match": {"kind": "any"}, "next": "long"}]},
    "long": {"type": "say", "text": "Let me read out our opening hours. We are open on Monday from nine in the morning until five in the afternoon. On Tuesday we open at ten and close at six. On Wednesday and Thursday we are open from eight until four. On Friday we close early, at two in the afternoon. On Saturday we open only in the morning.", "next": "again"},
    "again": {"type": "ask", "text": "Which of those days would you like?",
      "branches": [{"match": {"kind": "any"}, "next": "bye"}]},
    "bye": {"type": "end", "text": "Thank you. Goodbye!", "success": true}
  }
}`

// TestVoiceBargeIn: the caller speaks over the assistant's audio;
// assistant.audio.clear arrives, at most one frame of that turn follows it,
// and the transcript marks the turn interrupted and keeps only what was
// played.
func TestVoiceBargeIn(t *testing.T) {
	t.Parallel()
	tts := localVoice(t)
	b := start(t, testConfig(databases(t)["sqlite"](t)))
	var flow any
	if err := json.Unmarshal([]byte(bargeInFlow), &flow); err != nil {
		t.Fatal(err)
	}
	asst := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Hours", "model": map[string]any{"provider": "flow"}, "flow": flow}).data()["id"].(string)
	callID, ws := b.dialWebCall(asst)
	c := newVoiceClient(t, ws.conn)
	c.send(protocol.SessionUpdate{TextOnly: new(false)})
	c.until(30*time.Second, "the question", isTurnDoneWith("What day would suit you?"))

	var long string
	c.answer(tts, "next tuesday", func(ev protocol.ServerEvent) bool {
		if d, ok := ev.(protocol.TextDelta); ok && strings.Contains(d.Text, "opening hours") {
			long = d.TurnID
		}
		s, ok := ev.(protocol.AudioStart)
		return ok && s.TurnID == long
	})
	time.Sleep(2 * time.Second) // let two seconds of it play
	c.say <- speak(t, tts, "wait, I want to ask something else")
	evs := c.until(20*time.Second, "the interrupted turn", isTurnDoneWith(""))
	var clear *protocol.AudioClear
	var done protocol.TurnDone
	for _, ev := range evs {
		switch e := ev.(type) {
		case protocol.AudioClear:
			clear = &e
		case protocol.TurnDone:
			done = e
		case protocol.AudioDone:
			if e.TurnID == long {
				t.Fatalf("the long turn played to its end: no barge-in; events:\n%s", describe(evs))
			}
		}
	}
	if clear == nil || clear.TurnID != long {
		t.Fatalf("no assistant.audio.clear for %s; events:\n%s", long, describe(evs))
	}
	if done.TurnID != long || !done.Interrupted {
		t.Fatalf("turn.done = %+v, want %s interrupted", done, long)
	}
	c.mu.Lock()
	after := c.afterClear
	c.mu.Unlock()
	if after > 1 {
		t.Errorf("%d audio frames arrived after assistant.audio.clear, want at most 1", after)
	}
	full := "Let me read out our opening hours."
	if !strings.HasPrefix(done.Text, "Let me") || len(done.Text) >= 200 || strings.Contains(done.Text, "Saturday") {
		t.Errorf("interrupted turn text = %q, want only the part played (it starts %q)", done.Text, full)
	}
	if clear.PlayedMs < 1500 {
		t.Errorf("assistant.audio.clear playedMs = %d, want about two seconds", clear.PlayedMs)
	}
	// The flow had moved on to its next question within the cut turn, so
	// the caller's words answer it.
	c.until(30*time.Second, "the goodbye", isTurnDoneWith("Goodbye"))

	turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
	var stored map[string]any
	for _, tr := range turns {
		if strings.HasPrefix(tr["text"].(string), "Let me") {
			stored = tr
		}
	}
	if stored == nil || stored["interrupted"] != true || stored["text"] != done.Text {
		t.Errorf("stored turn = %v, want interrupted with text %q", stored, done.Text)
	}
	t.Logf("heard %q after %d ms", done.Text, clear.PlayedMs)
	if m := b.metrics(); !strings.Contains(m, "switchboard_voice_barge_ins_total 1") {
		t.Errorf("/metrics does not count the barge-in")
	}
}

// TestVoiceProviderFailover: a voice provider that fails hands the call to
// the assistant's fallback, which speaks; without a fallback the call ends
// failed with voice-failed instead of hanging.
func TestVoiceProviderFailover(t *testing.T) {
	t.Parallel()
	requireLocal(t) // the fallback voice is local, and so is the recognizer
	fake := speechtest.NewDeepgramSpeak(t,
		speechtest.Speech{Status: 503}, speechtest.Speech{Status: 503}, speechtest.Speech{Status: 503}, speechtest.Speech{Status: 503})
	cfg := testConfig(databases(t)["sqlite"](t))
	cfg.Speech = SpeechConfig{DeepgramBaseURL: fake.URL, DeepgramKey: speechtest.APIKey}
	b := start(t, cfg)
	flow := map[string]any{"start": "ask", "nodes": map[string]any{
		"ask": map[string]any{"type": "ask", "text": "What day would suit you?", "branches": []any{map[string]any{"match": map[string]any{"kind": "any"}, "next": "bye"}}},
		"bye": map[string]any{"type": "end", "text": "Goodbye!", "success": true}}}
	newAssistant := func(voice map[string]any) string {
		return b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Failover", "model": map[string]any{"provider": "flow"}, "flow": flow, "voice": voice}).data()["id"].(string)
	}

	withFallback := newAssistant(map[string]any{"provider": "deepgram", "voiceId": "aura-asteria-en", "fallback": map[string]any{"provider": "local"}})
	_, ws := b.dialWebCall(withFallback)
	c := newVoiceClient(t, ws.conn)
	c.send(protocol.SessionUpdate{TextOnly: new(false)})
	c.until(15*time.Second, "the question, spoken by the fallback", isTurnDoneWith("What day"))
	c.mu.Lock()
	spoken := c.audioBytes["turn_1"]
	c.mu.Unlock()
	if spoken == 0 {
		t.Errorf("no audio for the question: the fallback did not speak")
	}
	c.send(protocol.Hangup{})

	noFallback := newAssistant(map[string]any{"provider": "deepgram", "voiceId": "aura-asteria-en"})
	callID, ws2 := b.dialWebCall(noFallback)
	c2 := newVoiceClient(t, ws2.conn)
	c2.send(protocol.SessionUpdate{TextOnly: new(false)})
	evs := c2.until(15*time.Second, "the end of the call", isEnded)
	if e := evs[len(evs)-1].(protocol.CallEnded); e.Outcome != "failed" || e.EndedReason != "voice-failed" {
		t.Errorf("call.ended = %+v, want failed/voice-failed", e)
	}
	rec := b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if rec["endedReason"] != "voice-failed" {
		t.Errorf("stored call = %v/%v, want voice-failed", rec["outcome"], rec["endedReason"])
	}
}

// TestSandboxVoiceSlots: sandbox calls past --sandbox-voice-calls run as
// text instead of overloading the local engines.
func TestSandboxVoiceSlots(t *testing.T) {
	t.Parallel()
	requireLocal(t)
	cfg := testConfig(databases(t)["sqlite"](t))
	cfg.SandboxVoice, cfg.SandboxVoiceCalls = true, 1
	b := start(t, cfg)
	asst := b.bookingAssistant(b.key)
	b.must(200, "PATCH", "/v1/assistants/"+asst, map[string]any{"silenceTimeoutSeconds": 5})
	p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100"}).data()["id"].(string)
	b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "outboundAssistantId": asst})
	dial := func(to string) string {
		return b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": p, "phoneNumber": to}).Body["callId"].(string)
	}
	spoken := dial("+14155550005") // the silent persona holds the one voice slot until the silence timeout
	b.waitCall(b.key, spoken, 10*time.Second, func(c map[string]any) bool { return c["status"] == 2.0 })
	time.Sleep(200 * time.Millisecond)
	text := dial("+14155551234")
	c := b.waitCall(b.key, text, 15*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if c["endedReason"] != "assistant-ended-call" || c["latency"] != nil {
		t.Errorf("second call = %v, latency %v; want a completed text conversation (no voice latency)", c["endedReason"], c["latency"])
	}
	if first := b.must(200, "GET", "/v1/calls/"+spoken, nil).data(); first["status"] == 3.0 {
		t.Errorf("the spoken call ended before the text one: %v", first["endedReason"])
	}
	s := b.waitCall(b.key, spoken, 30*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if s["endedReason"] != "silence-timed-out" {
		t.Errorf("the silent persona's call ended %v, want silence-timed-out", s["endedReason"])
	}
}

// TestVoiceSayInterruptsOpening: POST /v1/calls/{id}/say with interrupt
// true about 0.3 s into the first message, before much (or any) of it
// could be heard: the cut opening is still the transcript's first turn —
// what was heard of it, possibly nothing, interrupted — and the sentence
// said is the second, seq without a gap.
func TestVoiceSayInterruptsOpening(t *testing.T) {
	requireLocal(t)
	t.Parallel()
	b := start(t, testConfig(databases(t)["sqlite"](t)))
	asst := b.bookingAssistant(b.key)
	callID, ws := b.dialWebCall(asst)
	c := newVoiceClient(t, ws.conn)
	c.send(protocol.SessionUpdate{TextOnly: new(false)})
	c.until(30*time.Second, "the opening's audio", func(ev protocol.ServerEvent) bool { return ev.Type() == protocol.TypeAudioStart })
	time.Sleep(300 * time.Millisecond)
	const said = "One more thing before you go."
	b.must(200, "POST", "/v1/calls/"+callID+"/say", map[string]any{"text": said, "interrupt": true})
	c.until(30*time.Second, "the sentence said", isTurnDoneWith(said))
	c.send(protocol.Hangup{})
	b.waitCall(b.key, callID, 15*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })

	turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
	checkSeq(t, turns)
	const opening = "Hi! I can book your appointment. What day would suit you?"
	if len(turns) < 2 || turns[0]["role"] != "assistant" || turns[0]["interrupted"] != true || !strings.HasPrefix(opening, turns[0]["text"].(string)) ||
		turns[1]["text"] != said {
		t.Errorf("transcript = %v; want the cut opening (interrupted, what was heard of it), then %q", turns, said)
	}
}
