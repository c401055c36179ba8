package twiliotest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The Media Streams side of a call ("Media Streams - WebSocket Messages",
// https://www.twilio.com/docs/voice/media-streams/websocket-messages),
// bidirectional (<Connect><Stream>):
//
//   - to the server: connected {"protocol":"Call","version":"1.0.0"};
//     start {streamSid, accountSid, callSid, tracks, customParameters,
//     mediaFormat {encoding audio/x-mulaw, sampleRate 8000, channels 1}};
//     media {track inbound, chunk, timestamp, payload} every 20 ms; dtmf
//     {track inbound_track, digit}; mark {name} once the audio sent before
//     it has played (or at once when clear drops it); stop {accountSid,
//     callSid}. Every message but connected carries sequenceNumber (a
//     string counting from 1) and streamSid.
//   - from the server: media {payload} (base64 μ-law, buffered and played
//     in real time), mark {name}, clear (drops the buffered audio).

// streamMsg is a message either way; only the member of Event is set.
type streamMsg struct {
	Event          string    `json:"event"`
	SequenceNumber string    `json:"sequenceNumber,omitempty"`
	StreamSid      string    `json:"streamSid,omitempty"`
	Protocol       string    `json:"protocol,omitempty"`
	Version        string    `json:"version,omitempty"`
	Start          *startMsg `json:"start,omitempty"`
	Media          *mediaMsg `json:"media,omitempty"`
	Mark           *struct {
		Name string `json:"name"`
	} `json:"mark,omitempty"`
	DTMF *dtmfMsg `json:"dtmf,omitempty"`
	Stop *stopMsg `json:"stop,omitempty"`
}

type startMsg struct {
	StreamSid        string            `json:"streamSid"`
	AccountSid       string            `json:"accountSid"`
	CallSid          string            `json:"callSid"`
	Tracks           []string          `json:"tracks"`
	CustomParameters map[string]string `json:"customParameters"`
	MediaFormat      mediaFormat       `json:"mediaFormat"`
}

type mediaFormat struct {
	Encoding   string `json:"encoding"`
	SampleRate int    `json:"sampleRate"`
	Channels   int    `json:"channels"`
}

type mediaMsg struct {
	Track     string `json:"track,omitempty"`
	Chunk     string `json:"chunk,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
	Payload   string `json:"payload"`
}

type dtmfMsg struct {
	Track string `json:"track"`
	Digit string `json:"digit"`
}

type stopMsg struct {
	AccountSid string `json:"accountSid"`
	CallSid    string `json:"callSid"`
}

// item is what the server sent, queued for playback: audio or a mark.
type item struct {
	audio []byte
	mark  string
}

// session is one open stream.
type session struct {
	c         *Call
	conn      *websocket.Conn
	streamSid string
	start     time.Time

	wmu sync.Mutex
	seq int

	mu     sync.Mutex
	queue  []item // played in order, 20 ms a tick
	detect dtmfDetector
}

func (ss *session) write(ctx context.Context, m streamMsg) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	if m.Event != "connected" {
		ss.seq++
		m.SequenceNumber = strconv.Itoa(ss.seq)
		m.StreamSid = ss.streamSid
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return ss.conn.Write(wctx, websocket.MessageText, b)
}

// stream opens the Media Stream at wsURL and runs it until the server
// closes it (interrupted false: the TwiML goes on) or the call is changed
// or hung up (the control, interrupted true).
func (c *Call) stream(ctx context.Context, wsURL string, params map[string]string) (control, bool) {
	h := http.Header{}
	// The upgrade is signed over the wss URL, like a GET webhook ("Webhooks
	// security"; docs/telephony.md).
	h.Set("X-Twilio-Signature", Sign(c.token, wsURL, nil))
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, res, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.s.hc})
	cancel()
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
	if err != nil {
		c.update(func(st *State) { st.StreamError = err.Error() })
		return control{}, false
	}
	conn.SetReadLimit(1 << 20)
	ss := &session{c: c, conn: conn, streamSid: sid("MZ"), start: time.Now()}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := ss.write(sctx, streamMsg{Event: "connected", Protocol: "Call", Version: "1.0.0"}); err != nil {
		c.update(func(st *State) { st.StreamError = err.Error() })
		_ = conn.CloseNow()
		return control{}, false
	}
	_ = ss.write(sctx, streamMsg{Event: "start", Start: &startMsg{
		StreamSid: ss.streamSid, AccountSid: c.AccountSID, CallSid: c.SID, Tracks: []string{"inbound"},
		CustomParameters: params, MediaFormat: mediaFormat{Encoding: "audio/x-mulaw", SampleRate: 8000, Channels: 1},
	}})
	c.update(func(st *State) {
		st.Streaming, st.Parameters, st.StreamError = true, params, ""
		st.Streams++
	})
	defer c.update(func(st *State) { st.Streaming = false })

	var wg sync.WaitGroup
	readerDone := make(chan struct{})
	wg.Go(func() {
		defer close(readerDone)
		ss.read(sctx)
	})
	wg.Go(func() { ss.tick(sctx) })
	defer wg.Wait()
	defer stop()

	select {
	case <-readerDone: // the server closed the stream
		_ = conn.CloseNow()
		return control{}, false
	case ctl := <-c.ctl:
		_ = ss.write(sctx, streamMsg{Event: "stop", Stop: &stopMsg{AccountSid: c.AccountSID, CallSid: c.SID}})
		_ = conn.Close(websocket.StatusNormalClosure, "")
		return ctl, true
	case <-ctx.Done():
		_ = conn.CloseNow()
		return control{hangup: true}, true
	}
}

// read takes the server's messages until the stream closes.
func (ss *session) read(ctx context.Context) {
	for {
		_, b, err := ss.conn.Read(ctx)
		if err != nil {
			return
		}
		var m streamMsg
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Event {
		case "media":
			if m.Media == nil {
				continue
			}
			audio, err := base64.StdEncoding.DecodeString(m.Media.Payload)
			if err != nil || len(audio) == 0 {
				continue
			}
			ss.c.mediaIn.Add(1)
			ss.mu.Lock()
			ss.queue = append(ss.queue, item{audio: audio})
			ss.mu.Unlock()
		case "mark":
			if m.Mark == nil || m.Mark.Name == "" {
				continue
			}
			ss.mu.Lock()
			ss.queue = append(ss.queue, item{mark: m.Mark.Name})
			ss.mu.Unlock()
		case "clear":
			// Buffered audio is dropped; pending marks go back at once.
			ss.mu.Lock()
			var marks []string
			for _, it := range ss.queue {
				if it.mark != "" {
					marks = append(marks, it.mark)
				}
			}
			ss.queue = nil
			ss.mu.Unlock()
			ss.c.update(func(st *State) { st.Clears++ })
			ss.echo(ctx, marks)
		}
	}
}

func (ss *session) echo(ctx context.Context, marks []string) {
	for _, name := range marks {
		ss.c.update(func(st *State) { st.Marks = append(st.Marks, name) })
		_ = ss.write(ctx, streamMsg{Event: "mark", Mark: &struct {
			Name string `json:"name"`
		}{name}})
	}
}

var silence = bytes.Repeat([]byte{0xFF}, 160)

// tick is the stream's clock: every 20 ms the callee sends a frame (its
// script, then what Say queued, then silence) and any key pressed, and
// plays 20 ms of what the server sent, echoing the marks it reaches.
func (ss *session) tick(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	script := ss.c.callee.Audio
	chunk := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Send.
		frame := silence
		c := ss.c
		c.mu.Lock()
		switch {
		case len(script) > 0:
			n := min(160, len(script))
			frame, script = script[:n], script[n:]
		case len(c.sendQ) > 0:
			n := min(160, len(c.sendQ))
			frame = bytes.Clone(c.sendQ[:n])
			c.sendQ = c.sendQ[n:]
		}
		digits := c.digitsQ
		c.digitsQ = nil
		c.mu.Unlock()
		chunk++
		var err error
		if !ss.c.callee.NoMedia {
			err = ss.write(ctx, streamMsg{Event: "media", Media: &mediaMsg{
				Track: "inbound", Chunk: strconv.Itoa(chunk), Timestamp: strconv.FormatInt(time.Since(ss.start).Milliseconds(), 10),
				Payload: base64.StdEncoding.EncodeToString(frame),
			}})
		}
		if err != nil {
			return
		}
		for _, d := range digits {
			_ = ss.write(ctx, streamMsg{Event: "dtmf", DTMF: &dtmfMsg{Track: "inbound_track", Digit: string(d)}})
		}
		// Play.
		ss.play(ctx)
	}
}

// play plays up to 160 bytes of the queue and echoes the marks reached.
func (ss *session) play(ctx context.Context) {
	var played []byte
	var marks []string
	ss.mu.Lock()
	for len(ss.queue) > 0 {
		it := &ss.queue[0]
		if it.mark != "" {
			marks = append(marks, it.mark)
			ss.queue = ss.queue[1:]
			continue
		}
		if len(played) == 160 {
			break
		}
		n := min(160-len(played), len(it.audio))
		played = append(played, it.audio[:n]...)
		it.audio = it.audio[n:]
		if len(it.audio) == 0 {
			ss.queue = ss.queue[1:]
		}
	}
	// A tick with nothing to play (the server's next frame is late, as on
	// a loaded machine) is no frame of the server's audio: it neither
	// ends a key nor starts one, or a tone with a late frame in it would
	// be heard as the key pressed twice.
	var digit byte
	var ok bool
	if len(played) > 0 {
		digit, ok = ss.detect.frame(played)
	}
	ss.mu.Unlock()
	if len(played) > 0 || ok {
		ss.c.update(func(st *State) {
			if len(st.Received)+len(played) <= maxReceived {
				st.Received = append(st.Received, played...)
			}
			if ok {
				st.Digits += string(digit)
			}
		})
	}
	ss.echo(ctx, marks)
}
