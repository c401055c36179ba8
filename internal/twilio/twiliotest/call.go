package twiliotest

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Answer is how a callee answers.
type Answer int

const (
	// AnswerHuman picks up (AnsweredBy human when detection was asked).
	AnswerHuman Answer = iota
	// AnswerMachine picks up as a voicemail box (AnsweredBy machine_start
	// with MachineDetection Enable, machine_end_beep with DetectMessageEnd).
	AnswerMachine
	// AnswerBusy ends the call busy.
	AnswerBusy
	// AnswerNoAnswer rings until the call's Timeout, then no-answer.
	AnswerNoAnswer
	// AnswerFail ends the call failed (a carrier error).
	AnswerFail
)

// Callee scripts the far party of an outbound call.
type Callee struct {
	Answer Answer
	// AnsweredBy overrides the AMD result sent with the TwiML request.
	AnsweredBy string
	// RingFor is how long the call rings before it is answered (or
	// refused); 0 means 20 ms. AnswerNoAnswer rings for the call's
	// Timeout instead, or RingFor when it is set.
	RingFor time.Duration
	// Audio is μ-law (8 kHz) the callee says once the stream starts, in
	// real time, before silence.
	Audio []byte
	// NoMedia sends no media at all on the stream (a stream whose audio
	// stopped, as after a network fault; Twilio itself always sends).
	NoMedia bool
}

// Calls' Direction values ("Call resource").
const (
	DirectionOutboundAPI = "outbound-api"
	DirectionInbound     = "inbound"
)

// control is a change of a live call from outside its goroutine.
type control struct {
	status string // completed, canceled
	twiml  string
	hangup bool // the far party hangs up
}

// Call is one call of the fake, inbound or outbound. Its exported fields
// are fixed at creation; the rest is read with State and WaitFor.
type Call struct {
	SID, AccountSID, From, To, Direction string

	s              *Server
	token          string
	url            string // TwiML URL (outbound: Url; inbound: the number's VoiceUrl)
	twiml          string // outbound: Twiml when no Url
	statusCallback string
	events         map[string]bool
	amd            string
	timeout        time.Duration
	callee         Callee
	ctl            chan control
	done           chan struct{}
	mediaIn        atomic.Int64 // media messages received from the server

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	st      State
	seq     int
	sendQ   []byte // audio queued by Say
	digitsQ []byte // keys queued by PressDigit
}

// State is what a call has been through, for assertions.
type State struct {
	// Status is the call's status ("Call resource"): queued, ringing,
	// in-progress, then completed, busy, no-answer, failed or canceled.
	Status string
	// Callbacks are the CallStatus values of the status callbacks posted,
	// in order.
	Callbacks []string
	// AnsweredBy is the AMD result sent with the TwiML request.
	AnsweredBy string
	// TwiML is every TwiML document the call ran, in order.
	TwiML []string
	// Streaming is true while a Media Stream is open; Streams counts them.
	Streaming bool
	Streams   int
	// Parameters are the last stream's customParameters.
	Parameters map[string]string
	// StreamError is why the last stream could not open.
	StreamError string
	// Received is the assistant audio the callee has heard (μ-law).
	Received []byte
	// Marks are the mark names echoed to the server, in order.
	Marks []string
	// Clears counts clear messages received.
	Clears int
	// Digits are the DTMF keys heard in the received audio.
	Digits string
	// Transfers are the destinations of the <Dial>s the call ran.
	Transfers []string
	// Rejected is true when the call got <Reject/>.
	Rejected bool
	// Ended is true once the call is over.
	Ended bool
}

func (st State) clone() State {
	st.Callbacks = slices.Clone(st.Callbacks)
	st.TwiML = slices.Clone(st.TwiML)
	st.Parameters = maps.Clone(st.Parameters)
	st.Received = slices.Clone(st.Received)
	st.Marks = slices.Clone(st.Marks)
	st.Transfers = slices.Clone(st.Transfers)
	return st
}

// maxReceived bounds the audio a call records (two minutes).
const maxReceived = 120 * 8000

// Counts are a call's running totals. Unlike State, which copies all the
// call recorded, they are cheap to read while hundreds of calls stream
// (cmd/benchtwilio reads them at the edges of its measured window).
type Counts struct {
	// MediaIn counts the media messages received from the server, when
	// they arrive (before playback; they are played in real time).
	MediaIn int64
	// Heard is len(State().Received): bytes of audio played so far.
	Heard int
	// Marks is len(State().Marks): mark names echoed so far.
	Marks int
	// Streaming and Ended are State's.
	Streaming, Ended bool
}

// Counts returns the call's running totals.
func (c *Call) Counts() Counts {
	n := c.mediaIn.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	return Counts{MediaIn: n, Heard: len(c.st.Received), Marks: len(c.st.Marks), Streaming: c.st.Streaming, Ended: c.st.Ended}
}

// State returns a copy of the call's state.
func (c *Call) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.clone()
}

// update changes the state under c.mu and wakes WaitFor.
func (c *Call) update(fn func(st *State)) {
	c.mu.Lock()
	fn(&c.st)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// WaitFor waits until cond holds for the call's state, or ctx ends.
func (c *Call) WaitFor(ctx context.Context, cond func(State) bool) (State, error) {
	for {
		c.mu.Lock()
		st, ch := c.st.clone(), c.changed
		c.mu.Unlock()
		if cond(st) {
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, fmt.Errorf("twiliotest: call %s: %w (state: status %s, streaming %v, %d marks, %d clears, %d bytes heard)",
				c.SID, ctx.Err(), st.Status, st.Streaming, len(st.Marks), st.Clears, len(st.Received))
		}
	}
}

// Done is closed when the call is over.
func (c *Call) Done() <-chan struct{} { return c.done }

func (c *Call) send(ctl control) {
	select {
	case c.ctl <- ctl:
	case <-c.done:
	}
}

// Hangup hangs up from the far side: the stream gets stop and closes, and
// the call completes (its status callback follows).
func (c *Call) Hangup() { c.send(control{hangup: true}) }

// Say queues μ-law audio for the callee to say on the stream (after
// Callee.Audio), in real time.
func (c *Call) Say(mulaw []byte) {
	c.mu.Lock()
	c.sendQ = append(c.sendQ, mulaw...)
	c.mu.Unlock()
}

// PressDigit sends a dtmf message on the stream (0-9, *, #, A-D).
func (c *Call) PressDigit(d byte) {
	c.mu.Lock()
	c.digitsQ = append(c.digitsQ, d)
	c.mu.Unlock()
}

// SetCallee scripts the far party of the calls created to number to (the
// default is AnswerHuman with silence).
func (s *Server) SetCallee(to string, c Callee) {
	s.mu.Lock()
	s.callees[to] = c
	s.mu.Unlock()
}

// NextCall returns the next call created (outbound, through the REST API,
// or inbound, through Dial), in order.
func (s *Server) NextCall(ctx context.Context) (*Call, error) {
	select {
	case c := <-s.newCalls:
		return c, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("twiliotest: no call created: %w", ctx.Err())
	}
}

// Call returns the call sid, or nil.
func (s *Server) Call(sid string) *Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[sid]
}

func (s *Server) newCall(a *account, direction, from, to string) *Call {
	c := &Call{
		SID: sid("CA"), AccountSID: a.sid, From: from, To: to, Direction: direction,
		s: s, token: a.token, events: map[string]bool{}, ctl: make(chan control, 8),
		done: make(chan struct{}), changed: make(chan struct{}),
	}
	c.st.Status = "queued"
	return c
}

// start registers c and runs it on a goroutine of the server.
func (s *Server) start(c *Call, run func()) bool {
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	s.calls[c.SID] = c
	s.wg.Add(1)
	s.mu.Unlock()
	select {
	case s.newCalls <- c:
	default:
	}
	go func() {
		defer s.wg.Done()
		defer c.finish()
		run()
	}()
	return true
}

func callJSON(c *Call, status string) map[string]any {
	return map[string]any{
		"sid": c.SID, "account_sid": c.AccountSID, "to": c.To, "from": c.From, "status": status,
		"direction": c.Direction, "api_version": APIVersion,
		"uri": "/2010-04-01/Accounts/" + c.AccountSID + "/Calls/" + c.SID + ".json",
	}
}

// createCall is POST Calls.json ("Call resource", "Create a Call resource").
func (s *Server) createCall(w http.ResponseWriter, r *http.Request, a *account) {
	f := r.PostForm
	to, from := f.Get("To"), f.Get("From")
	if !e164.MatchString(to) {
		writeError(w, apiError(http.StatusBadRequest, 21211, "Invalid 'To' Phone Number: "+to))
		return
	}
	s.mu.Lock()
	owner, _ := s.ownerOfLocked(from)
	callee, ok := s.callees[to]
	s.mu.Unlock()
	if owner != a {
		writeError(w, apiError(http.StatusBadRequest, 21210, "The source phone number provided, "+from+", is not yet verified for your account. You may only make calls from phone numbers that you've verified or purchased from Twilio."))
		return
	}
	if f.Get("Url") == "" && f.Get("Twiml") == "" {
		writeError(w, apiError(http.StatusBadRequest, 21205, "Url parameter is required."))
		return
	}
	if !ok {
		callee = Callee{}
	}
	c := s.newCall(a, DirectionOutboundAPI, from, to)
	c.url, c.twiml, c.statusCallback, c.amd, c.callee = f.Get("Url"), f.Get("Twiml"), f.Get("StatusCallback"), f.Get("MachineDetection"), callee
	for _, e := range f["StatusCallbackEvent"] {
		c.events[e] = true
	}
	c.timeout = 60 * time.Second
	if n, err := strconv.Atoi(f.Get("Timeout")); err == nil && n > 0 {
		c.timeout = time.Duration(n) * time.Second
	}
	if !s.start(c, c.runOutbound) {
		writeError(w, apiError(http.StatusServiceUnavailable, 20503, "Service unavailable"))
		return
	}
	writeJSON(w, http.StatusCreated, callJSON(c, "queued"))
}

// updateCall is POST Calls/{Sid}.json: Status (canceled, completed) or
// Twiml ("Call resource", "Update a Call resource"). A call that has ended
// cannot be updated (21220).
func (s *Server) updateCall(w http.ResponseWriter, r *http.Request, a *account, callSID string) {
	c := s.Call(callSID)
	if c == nil || c.AccountSID != a.sid {
		writeError(w, apiError(http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found"))
		return
	}
	st := c.State()
	if st.Ended {
		writeError(w, apiError(http.StatusBadRequest, 21220, "Call is not in-progress. Cannot redirect."))
		return
	}
	f := r.PostForm
	ctl := control{status: f.Get("Status"), twiml: f.Get("Twiml")}
	switch ctl.status {
	case "", "completed":
	case "canceled":
		if st.Status == "in-progress" {
			// Canceling an answered call does nothing ("Call resource").
			writeJSON(w, http.StatusOK, callJSON(c, st.Status))
			return
		}
	default:
		writeError(w, apiError(http.StatusBadRequest, 21218, "Invalid value for Status"))
		return
	}
	if ctl.status == "" && ctl.twiml == "" {
		writeError(w, apiError(http.StatusBadRequest, 21205, "Url or Twiml is required."))
		return
	}
	c.send(ctl)
	writeJSON(w, http.StatusOK, callJSON(c, st.Status))
}

// Dial places an inbound call from from to number to, which an account
// must own: its VoiceUrl gets the signed webhook, and the call runs the
// TwiML it answers. It returns once the call has started.
func (s *Server) Dial(ctx context.Context, to, from string) (*Call, error) {
	s.mu.Lock()
	a, n := s.ownerOfLocked(to)
	var voiceURL, status string
	if n != nil {
		voiceURL, status = n.VoiceURL, n.StatusCallback
	}
	s.mu.Unlock()
	if a == nil {
		return nil, fmt.Errorf("twiliotest: no account owns %s", to)
	}
	if voiceURL == "" {
		return nil, fmt.Errorf("twiliotest: %s has no VoiceUrl", to)
	}
	c := s.newCall(a, DirectionInbound, from, to)
	c.url, c.statusCallback = voiceURL, status
	c.st.Status = "ringing"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !s.start(c, c.runInbound) {
		return nil, errors.New("twiliotest: server closed")
	}
	return c, nil
}

// finish ends the call.
func (c *Call) finish() {
	c.update(func(st *State) {
		st.Ended, st.Streaming = true, false
	})
	close(c.done)
}

// webhookParams are the parameters of every request about the call
// ("TwiML Voice: request parameters"; status callbacks add theirs).
func (c *Call) webhookParams(status string) url.Values {
	return url.Values{
		"AccountSid": {c.AccountSID}, "ApiVersion": {APIVersion}, "CallSid": {c.SID},
		"CallStatus": {status}, "Direction": {c.Direction}, "From": {c.From}, "To": {c.To},
		"Called": {c.To}, "Caller": {c.From},
	}
}

func (c *Call) setStatus(status string) {
	c.update(func(st *State) { st.Status = status })
}

// callback posts the status callback of event ("Call resource",
// StatusCallbackEvent: initiated, ringing, answered, completed; completed
// is always sent). Numbers' status callbacks (inbound) get completed only.
func (c *Call) callback(ctx context.Context, event, status string) {
	if c.statusCallback == "" || (event != "completed" && !c.events[event]) {
		return
	}
	f := c.webhookParams(status)
	c.mu.Lock()
	f.Set("SequenceNumber", strconv.Itoa(c.seq))
	c.seq++
	answeredBy := c.st.AnsweredBy
	c.mu.Unlock()
	f.Set("CallbackSource", "call-progress-events")
	f.Set("Timestamp", time.Now().UTC().Format(time.RFC1123Z))
	if answeredBy != "" {
		f.Set("AnsweredBy", answeredBy)
	}
	if event == "completed" {
		f.Set("CallDuration", "0")
		f.Set("Duration", "0")
	}
	c.update(func(st *State) { st.Callbacks = append(st.Callbacks, status) })
	_, _, _ = c.s.post(ctx, c.token, c.statusCallback, f)
}

// end sets the final status and posts the completed callback.
func (c *Call) end(ctx context.Context, status string) {
	c.setStatus(status)
	c.callback(ctx, "completed", status)
}

// wait waits d for a control message.
func (c *Call) wait(ctx context.Context, d time.Duration) (control, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case ctl := <-c.ctl:
		return ctl, true
	case <-t.C:
		return control{}, false
	case <-ctx.Done():
		return control{hangup: true}, true
	}
}

func (c *Call) runOutbound() {
	ctx := c.s.ctx
	c.setStatus("initiated")
	c.callback(ctx, "initiated", "initiated")
	c.setStatus("ringing")
	c.callback(ctx, "ringing", "ringing")
	ring := c.callee.RingFor
	if ring <= 0 {
		ring = 20 * time.Millisecond
		if c.callee.Answer == AnswerNoAnswer {
			ring = c.timeout
		}
	}
	if ctl, ok := c.wait(ctx, ring); ok {
		switch {
		case ctl.status == "canceled" || ctl.status == "completed" || ctl.hangup:
			c.end(ctx, "canceled")
		default: // new TwiML before the answer: Twilio runs it on answer
			c.twiml, c.url = ctl.twiml, ""
			c.answer(ctx)
		}
		return
	}
	switch c.callee.Answer {
	case AnswerBusy:
		c.end(ctx, "busy")
	case AnswerNoAnswer:
		c.end(ctx, "no-answer")
	case AnswerFail:
		c.end(ctx, "failed")
	default:
		c.answer(ctx)
	}
}

// answer picks up, fetches the TwiML and runs it.
func (c *Call) answer(ctx context.Context) {
	if c.amd != "" {
		by := c.callee.AnsweredBy
		if by == "" {
			switch {
			case c.callee.Answer != AnswerMachine:
				by = "human"
			case c.amd == "DetectMessageEnd":
				by = "machine_end_beep"
			default:
				by = "machine_start"
			}
		}
		c.update(func(st *State) { st.AnsweredBy = by })
	}
	c.setStatus("in-progress")
	c.callback(ctx, "answered", "in-progress")
	doc := c.twiml
	if c.url != "" {
		var err error
		doc, err = c.fetch(ctx, "in-progress")
		if err != nil {
			// Twilio says "an application error has occurred" and hangs up.
			c.end(ctx, "completed")
			return
		}
	}
	c.execute(ctx, doc)
}

func (c *Call) runInbound() {
	ctx := c.s.ctx
	doc, err := c.fetch(ctx, "ringing")
	if err != nil {
		c.end(ctx, "failed")
		return
	}
	c.execute(ctx, doc)
}

// fetch requests the call's TwiML: a signed POST to its URL.
func (c *Call) fetch(ctx context.Context, status string) (string, error) {
	f := c.webhookParams(status)
	if by := c.State().AnsweredBy; by != "" {
		f.Set("AnsweredBy", by)
	}
	code, body, err := c.s.post(ctx, c.token, c.url, f)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("twiliotest: TwiML request answered %d", code)
	}
	return string(body), nil
}

// verb is one TwiML verb with the parts the fake runs.
type verb struct {
	XMLName xml.Name
	Text    string `xml:",chardata"`
	URL     string `xml:"url,attr"`
	Nested  []verb `xml:",any"`
	Name    string `xml:"name,attr"`
	Value   string `xml:"value,attr"`
}

func parseTwiML(doc string) ([]verb, error) {
	var r struct {
		XMLName xml.Name `xml:"Response"`
		Verbs   []verb   `xml:",any"`
	}
	if err := xml.Unmarshal([]byte(doc), &r); err != nil {
		return nil, fmt.Errorf("twiliotest: TwiML: %w", err)
	}
	return r.Verbs, nil
}

// execute runs a TwiML document and whatever replaces it; the call ends
// when it has nothing left to run.
func (c *Call) execute(ctx context.Context, doc string) {
	for doc != "" {
		c.update(func(st *State) { st.TwiML = append(st.TwiML, doc) })
		verbs, err := parseTwiML(doc)
		doc = ""
		if err != nil {
			c.end(ctx, "failed")
			return
		}
	run:
		for _, v := range verbs {
			switch v.XMLName.Local {
			case "Connect":
				for _, n := range v.Nested {
					if n.XMLName.Local != "Stream" {
						continue
					}
					params := map[string]string{}
					for _, p := range n.Nested {
						if p.XMLName.Local == "Parameter" {
							params[p.Name] = p.Value
						}
					}
					ctl, interrupted := c.stream(ctx, n.URL, params)
					if !interrupted {
						continue
					}
					if ctl.twiml != "" {
						doc = ctl.twiml
						break run
					}
					c.end(ctx, "completed")
					return
				}
			case "Dial":
				dest := strings.TrimSpace(v.Text)
				for _, n := range v.Nested {
					if n.XMLName.Local == "Sip" || n.XMLName.Local == "Number" {
						dest = strings.TrimSpace(n.Text)
					}
				}
				c.update(func(st *State) { st.Transfers = append(st.Transfers, dest) })
				// The transferee talks a little, then hangs up.
				if ctl, ok := c.wait(ctx, 20*time.Millisecond); ok && ctl.twiml != "" {
					doc = ctl.twiml
					break run
				}
				c.end(ctx, "completed")
				return
			case "Hangup":
				c.end(ctx, "completed")
				return
			case "Reject":
				c.update(func(st *State) { st.Rejected = true })
				c.end(ctx, "busy")
				return
			}
		}
	}
	c.end(ctx, "completed")
}
