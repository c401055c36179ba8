package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/bench"
	"switchboard/internal/sip"
	"switchboard/internal/telephony"
)

// result is one step's figures.
type result struct {
	calls              int
	answered           int
	failed             map[string]int // Ended before the answer, by reason; place errors
	sustained          int            // answered and still up at the end of the hold
	p50, p99           time.Duration
	windowFrames       int64
	written, echoed    int64              // over the calls' lives: frames handed to Line.Write, and echoed back (not silence)
	fill               int64              // silence frames echoed back during the hold: the line's own fill when the pacer fell > 1 frame behind
	pacers             bench.PacerSummary // over the calls' lives
	hold               time.Duration
	cpu                bench.CPU
	sippOK, sippFailed int
	sippErr            error
	rtpDropped         uint64
}

// lost is frames written that did not come back (never negative).
func (r result) lost() int64 { return max(r.written-r.echoed, 0) }

// perCall is the process's CPU time per call and second of the hold.
func (r result) perCall() time.Duration {
	if r.calls == 0 || r.hold <= 0 {
		return 0
	}
	return time.Duration(float64(r.cpu.Self) / float64(r.calls) / r.hold.Seconds())
}

// call is one answered call: the product's pacer writing into the line,
// and the line's received audio counted.
type call struct {
	line   telephony.Line
	pacer  *audio.Pacer
	sch    *sched
	echoed atomic.Int64
	ended  atomic.Bool // Receive returned: the line ended
}

func (c *call) Audio(b []byte) {
	if bench.SilentFrame(b) {
		if w := c.sch.m.cur.Load(); w != nil {
			w.fill.Add(1)
		}
		return
	}
	c.echoed.Add(1)
}
func (c *call) DTMF(byte)          {}
func (c *call) Text(string)        {}
func (c *call) Mark(string, int64) {}
func (c *call) StartAudio(audio.Format) error {
	return errors.New("benchsip: a SIP line has its audio from the start")
}

// runSIP places o.calls calls to SIPp, holds them for o.hold with the
// pacers writing speech, and hangs them up.
func runSIP(o options, n int) (result, error) {
	r := result{calls: n, failed: map[string]int{}, hold: o.hold}
	timeout := time.Duration(n)*time.Second/time.Duration(o.rate) + o.settle + o.hold + 60*time.Second
	s, err := startSIPp(o.sippBin, n, o.sippPorts.Min, o.sippPorts.Max, timeout)
	if err != nil {
		return r, err
	}
	defer s.cleanup()
	defer s.kill()

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
	p, err := sip.New(sip.Config{ListenAddr: "127.0.0.1:0", PublicIP: "127.0.0.1", RTPPorts: o.rtpPorts}, log)
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := p.Start(ctx, telephony.CallControlFuncs{Sink: sink}); err != nil {
		return r, err
	}
	defer p.Close()

	m := &meter{}
	fd := bench.NewFeeder(o.frames)
	var (
		calls    []*call
		pacersWG sync.WaitGroup
		rxWG     sync.WaitGroup
	)
	pacerCtx, stopPacers := context.WithCancel(ctx)
	defer stopPacers()
	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	go fd.Run(feedCtx)

	// Place the calls at o.rate a second; take their events meanwhile.
	tr := telephony.Trunk{ConnectionID: "bench", Address: s.addr(), Transport: "udp"}
	placeErr := make(chan error, n)
	go func() {
		tick := time.NewTicker(time.Second / time.Duration(o.rate))
		defer tick.Stop()
		for i := range n {
			if i > 0 {
				<-tick.C
			}
			req := telephony.PlaceRequest{CallID: "call_" + strconv.Itoa(i), From: "+16175550100", To: "+1617555" + fmt.Sprintf("%04d", i), Trunk: tr}
			placeErr <- p.Place(ctx, req)
		}
	}()
	pending := n
	deadline := time.After(time.Duration(n)*time.Second/time.Duration(o.rate) + 15*time.Second)
	for placed := 0; pending > 0; {
		select {
		case err := <-placeErr:
			placed++
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
				c := &call{line: ev.Line, sch: &sched{m: m}}
				c.pacer = audio.NewPacer(bench.HighWater, func(b []byte) error {
					c.sch.frame(time.Now())
					return ev.Line.Write(b)
				}, nil)
				calls = append(calls, c)
				rxWG.Add(1)
				go func() {
					defer rxWG.Done()
					ev.Line.Receive(ctx, c)
					c.ended.Store(true)
				}()
				pacersWG.Add(1)
				go func() {
					defer pacersWG.Done()
					_ = c.pacer.Run(pacerCtx)
				}()
				fd.Add(c.pacer)
			}
		case <-deadline:
			r.failed[fmt.Sprintf("no answer within the ramp (%d)", pending)] += pending
			pending = 0
		}
	}
	if d := sinkDropped.Load(); d > 0 {
		r.failed[fmt.Sprintf("events dropped: %d", d)]++
	}

	time.Sleep(o.settle)
	w := &window{}
	r.hold, r.cpu = bench.Hold(&m.cur, w, o.hold, s.pid())
	for _, c := range calls {
		if !c.ended.Load() {
			r.sustained++
		}
	}
	r.p50, r.p99, r.windowFrames = w.late.Quantile(0.50), w.late.Quantile(0.99), int64(w.late.Count())
	r.fill = w.fill.Load()

	stopFeed()
	stopPacers()
	pacersWG.Wait()
	time.Sleep(500 * time.Millisecond) // the echo's tail
	pacers := make([]*audio.Pacer, len(calls))
	for i, c := range calls {
		r.written += c.sch.Sent.Load()
		r.echoed += c.echoed.Load()
		pacers[i] = c.pacer
	}
	r.pacers = bench.SummarizePacers(pacers)
	r.rtpDropped = p.Stats().RTPQueueDropped

	// Hang up: our BYE completes each of SIPp's calls.
	var hwg sync.WaitGroup
	for i, c := range calls {
		hwg.Add(1)
		go func() {
			defer hwg.Done()
			time.Sleep(time.Duration(i) * time.Second / time.Duration(4*o.rate)) // spread the BYEs
			hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
			defer hcancel()
			_ = c.line.Hangup(hctx)
		}()
	}
	hwg.Wait()
	rxWG.Wait()
	if err := p.Close(); err != nil && !errors.Is(err, sip.ErrClosed) {
		r.failed["close: "+err.Error()]++
	}
	r.sippOK, r.sippFailed, r.sippErr = s.wait(15 * time.Second)
	if o.verbose && r.sippErr != nil {
		fmt.Println(s.screen(4000))
	}
	return r, nil
}

// runBare runs the step's baseline (bench.RunBaseline): n of the same
// pacers, fed the same way, writing to a line that does nothing: the
// timers and the scheduler alone, no SIP, no RTP.
func runBare(o options, n int) result {
	b := bench.RunBaseline(n, o.rate, o.frames, o.settle, o.baseline)
	return result{calls: n, answered: n, sustained: n, failed: map[string]int{},
		p50: b.P50, p99: b.P99, windowFrames: b.Frames, hold: b.Hold, cpu: b.CPU}
}
