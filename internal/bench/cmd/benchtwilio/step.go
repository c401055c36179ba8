package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/bench"
	"switchboard/internal/telephony"
	"switchboard/internal/twilio"
)

// benchConn is the phone connection of the bench's calls.
const benchConn = "conn_bench"

// benchTurn is the one turn every call's writer sends, so that each frame
// is followed by a mark, as in a call's assistant turn.
const benchTurn = "turn_bench"

// result is one step's figures.
type result struct {
	calls     int
	answered  int
	failed    map[string]int // Ended before the answer, by reason; place errors; lines ended in the hold
	sustained int            // answered and still up (line and fake stream) at the end of the hold
	p50, p99  time.Duration
	// windowFrames is the frames measured in the hold.
	windowFrames     int64
	markP50, markP99 time.Duration // mark delay: frame handed to Write → its mark back at Receive
	marks            int64         // marks delivered to Receive in the hold (after collapsing)
	markUnknown      int           // of which, marks of frames older than the ring
	// Over the calls' lives, 0.5 s after the writers stopped:
	written int64 // frames Line.Write accepted
	fakeIn  int64 // media messages the fake received
	// In the hold, at the fake: frames played, marks echoed; and caller
	// frames that reached Receive.
	heardHold, echoedHold, inboundHold int64
	pacers                             bench.PacerSummary // over the calls' lives
	prov                               twilio.Stats
	hold                               time.Duration
	cpu                                bench.CPU
	fakeErr                            error
}

// lost is frames Write accepted that the fake never received.
func (r result) lost() int64 { return max(r.written-r.fakeIn, 0) }

// perCall is the process's CPU time per call and second of the hold.
func (r result) perCall() time.Duration { return r.perCallOf(r.cpu.Self) }

// perCallOf is d per call and second of the hold.
func (r result) perCallOf(d time.Duration) time.Duration {
	if r.calls == 0 || r.hold <= 0 {
		return 0
	}
	return time.Duration(float64(d) / float64(r.calls) / r.hold.Seconds())
}

// rate is n per call and second of the hold.
func (r result) rate(n int64) float64 {
	if r.calls == 0 || r.hold <= 0 {
		return 0
	}
	return float64(n) / float64(r.calls) / r.hold.Seconds()
}

// call is one answered call: the product's pacer writing into the line,
// with the line's AudioStart so that every frame is followed by a mark,
// and the line's received audio and marks counted.
type call struct {
	line  telephony.Line
	sid   string
	pacer *audio.Pacer
	sch   *sched
	ok    atomic.Int64  // frames Write accepted
	end   telephony.End // what Receive returned
	ended atomic.Bool   // Receive returned: the line ended
	// hangupErr is Line.Hangup's at the end of the step.
	hangupErr error
}

// Audio counts the caller's frames (the fake sends silence every 20 ms).
func (c *call) Audio([]byte) {
	if w := c.sch.m.cur.Load(); w != nil {
		w.inbound.Add(1)
	}
}

func (c *call) DTMF(byte)   {}
func (c *call) Text(string) {}
func (c *call) StartAudio(audio.Format) error {
	return errors.New("benchtwilio: a Twilio line has its audio from the start")
}

// Mark measures how long after its frame was handed to Write the fake's
// echo of a mark reached Receive: the fake plays 20 ms a tick and echoes
// the marks it reaches, so this is the playback position the runtime
// sees, and how stale it is. Receive hands over only the latest mark of a
// turn that arrived meanwhile, so fewer marks are measured than echoed.
func (c *call) Mark(turn string, ms int64) {
	w := c.sch.m.cur.Load()
	if w == nil || turn != benchTurn || ms <= 0 {
		return
	}
	at, ok := c.sch.sentAt(ms/20 - 1)
	w.mark(time.Since(at), ok)
}

// runTwilio places n calls through the provider to the fake Twilio, holds
// them for o.hold with the pacers writing speech, and hangs them up.
func runTwilio(o options, n int) (result, error) {
	r := result{calls: n, failed: map[string]int{}, hold: o.hold}
	fctx, fcancel := context.WithCancel(context.Background())
	defer fcancel() // after stop: a backstop
	fake, err := startFake(fctx)
	if err != nil {
		return r, err
	}
	defer func() {
		if err := fake.stop(30 * time.Second); err != nil && r.fakeErr == nil {
			r.fakeErr = err
		}
	}()

	events := make(chan telephony.Event, 4*n+16)
	var sinkDropped atomic.Int64
	sink := func(ev telephony.Event) {
		select {
		case events <- ev:
		default:
			sinkDropped.Add(1)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.verbose {
		log = slog.Default()
	}
	// The provider's handler on a loopback server configured as the
	// server's own (internal/app), at Config.PublicURL.
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	acct := twilio.Account{SID: fake.SID, Token: fake.Token}
	p, err := twilio.New(twilio.Config{
		PublicURL:  "http://" + ln.Addr().String(),
		APIBaseURL: fake.API,
		Accounts: func(_ context.Context, id string) (twilio.Account, error) {
			if id != benchConn {
				return twilio.Account{}, errors.New("no such connection")
			}
			return acct, nil
		},
		Log: log,
	})
	if err != nil {
		_ = ln.Close()
		return r, err
	}
	if err := p.Start(context.Background(), telephony.CallControlFuncs{Sink: sink}); err != nil {
		_ = ln.Close()
		return r, err
	}
	mux := http.NewServeMux()
	mux.Handle("/twilio/", p.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	var srvWG sync.WaitGroup
	srvWG.Go(func() { _ = srv.Serve(ln) })
	defer srvWG.Wait()
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &meter{}
	fd := bench.NewFeeder(o.frames)
	var (
		calls    []*call
		pacersWG sync.WaitGroup
		rxWG     sync.WaitGroup
		feedWG   sync.WaitGroup
	)
	pacerCtx, stopPacers := context.WithCancel(ctx)
	defer stopPacers()
	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	feedWG.Go(func() { fd.Run(feedCtx) })
	defer feedWG.Wait()
	// Whatever happens, the calls end before the provider closes.
	defer func() {
		stopFeed()
		stopPacers()
		pacersWG.Wait()
		_ = p.Close()
		rxWG.Wait()
	}()

	// Place the calls at o.rate a second; take their events meanwhile.
	tr := telephony.Trunk{ConnectionID: benchConn}
	placeErr := make(chan error, n)
	var placeWG sync.WaitGroup
	placeWG.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(o.rate))
		defer tick.Stop()
		for i := range n {
			if i > 0 {
				select {
				case <-tick.C:
				case <-ctx.Done():
					placeErr <- ctx.Err()
					continue
				}
			}
			req := telephony.PlaceRequest{CallID: "call_" + strconv.Itoa(i), From: benchFrom, To: fmt.Sprintf("+1617555%04d", i), Trunk: tr}
			placeErr <- p.Place(ctx, req)
		}
	})
	defer placeWG.Wait()
	pending := n
	deadline := time.NewTimer(time.Duration(n)*time.Second/time.Duration(o.rate) + 15*time.Second)
	defer deadline.Stop()
	for pending > 0 {
		select {
		case err := <-placeErr:
			if err != nil {
				r.failed["place: "+err.Error()]++
				pending--
			}
		case ev := <-events:
			switch ev.Kind {
			case telephony.Ended:
				r.failed[ev.Reason]++
				pending--
			case telephony.Answered:
				pending--
				r.answered++
				c := &call{line: ev.Line, sid: ev.ProviderCallID, sch: &sched{m: m}}
				ev.Line.AudioStart(benchTurn) // the line marks the turn's frames
				c.pacer = audio.NewPacer(bench.HighWater, func(b []byte) error {
					c.sch.frame(time.Now())
					if err := ev.Line.Write(b); err != nil {
						return err
					}
					c.ok.Add(1)
					return nil
				}, nil)
				calls = append(calls, c)
				rxWG.Go(func() {
					c.end = ev.Line.Receive(ctx, c)
					c.ended.Store(true)
				})
				pacersWG.Go(func() { _ = c.pacer.Run(pacerCtx) })
				fd.Add(c.pacer)
			}
		case <-deadline.C:
			r.failed[fmt.Sprintf("no answer within the ramp (%d)", pending)] += pending
			pending = 0
		}
	}
	if d := sinkDropped.Load(); d > 0 {
		r.failed[fmt.Sprintf("events dropped: %d", d)]++
	}
	sids := make([]string, len(calls))
	for i, c := range calls {
		sids[i] = c.sid
	}

	time.Sleep(o.settle)
	qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
	defer qcancel()
	f0, err := fake.counts(qctx, sids)
	if err != nil {
		return r, err
	}
	w := &window{}
	r.hold, r.cpu = bench.Hold(&m.cur, w, o.hold, fake.pid())
	f1, err := fake.counts(qctx, sids)
	if err != nil {
		return r, err
	}
	for i, c := range calls {
		if !c.ended.Load() && f1[i].Streaming {
			r.sustained++
		}
	}
	t0s, t1s := sum(f0), sum(f1)
	r.heardHold, r.echoedHold = (t1s.heard-t0s.heard)/160, t1s.marks-t0s.marks
	r.p50, r.p99, r.windowFrames = w.late.Quantile(0.50), w.late.Quantile(0.99), int64(w.late.Count())
	lags, unknown := w.marks()
	r.markP50, r.markP99, r.marks, r.markUnknown = lags.Q(0.50), lags.Q(0.99), int64(len(lags)+unknown), unknown
	r.inboundHold = w.inbound.Load()

	stopFeed()
	stopPacers()
	pacersWG.Wait()
	time.Sleep(500 * time.Millisecond) // the frames in flight
	f2, err := fake.counts(qctx, sids)
	if err != nil {
		return r, err
	}
	r.fakeIn = sum(f2).mediaIn
	pacers := make([]*audio.Pacer, len(calls))
	for i, c := range calls {
		r.written += c.ok.Load()
		pacers[i] = c.pacer
	}
	r.pacers = bench.SummarizePacers(pacers)

	// Hang up as the runtime does: Line.Hangup ends the call at Twilio
	// (REST) and closes the stream.
	var hwg sync.WaitGroup
	for i, c := range calls {
		hwg.Go(func() {
			time.Sleep(time.Duration(i) * time.Second / time.Duration(4*o.rate)) // spread the requests
			hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
			defer hcancel()
			c.hangupErr = c.line.Hangup(hctx)
		})
	}
	hwg.Wait()
	rxWG.Wait()
	for _, c := range calls {
		if c.end != (telephony.End{}) {
			r.failed["line ended: "+c.end.Outcome+" "+c.end.Reason]++
		}
		if c.hangupErr != nil {
			r.failed["hangup: "+c.hangupErr.Error()]++
		}
	}
	r.prov = p.Stats()
	return r, nil
}

// runBare runs the step's baseline (bench.RunBaseline): n of the same
// pacers, fed the same way, writing to a line that does nothing: the
// timers and the scheduler alone, no Twilio.
func runBare(o options, n int) result {
	b := bench.RunBaseline(n, o.rate, o.frames, o.settle, o.baseline)
	return result{calls: n, answered: n, sustained: n, failed: map[string]int{},
		p50: b.P50, p99: b.P99, windowFrames: b.Frames, hold: b.Hold, cpu: b.CPU}
}
