package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/callrun"
	"switchboard/internal/cluster"
	"switchboard/internal/lifecycle"
	"switchboard/internal/telephony"
)

// When each part must have stopped, in tenths of Config.ShutdownTimeout
// counted from the start of Close (lifecycle.Part.By). A part that stops
// early leaves its time to the next, so each gets at least its share: the
// gateway and the HTTP drain two tenths each, dials under way three, then
// one more once they are canceled, and the calls (conversations,
// providers, background loops) the last two.
const (
	stopGatewayBy = 2  // live web calls end system-shutdown; close handshakes
	stopHTTPBy    = 4  // in-flight requests finish
	stopDialsBy   = 7  // dials under way finish…
	cancelDialsBy = 8  // …and those still under way are canceled and return
	stopCallsBy   = 10 // conversations and provider calls end; loops stop
)

// parts lists the server's long-lived parts in the order they start;
// Close stops them in reverse, each by its share of the budget (By),
// then closes the database. The REST API and the cluster node have no
// share: they stop last, once the calls have (the node then gives its
// leases up, so that no other node's sweep ends them node-lost). A part
// not built is left out: SIP or the metrics listener off, a start that
// failed before it was built, or a test's Main of a few parts.
// docs/ARCHITECTURE.md, "Wiring and lifecycle", has the list with what
// each part's Start and Stop do.
func (m *Main) parts() lifecycle.Parts {
	return lifecycle.Parts{
		{Name: "REST API", Service: built(m.api)},
		{Name: "cluster node", Service: built(m.node)},
		{Name: "call control", Service: bound[callctl.Listener](m.calls, callEvents{runtime: m.runtime, node: m.node}), By: stopCallsBy},
		{Name: "background loops", Service: built(m.loops), By: stopCallsBy},
		{Name: "metrics server", Service: built(m.metrics), By: stopCallsBy},
		{Name: "sandbox network", Service: bound[telephony.CallControl](m.sandbox, m.calls), By: stopCallsBy},
		{Name: "Twilio provider", Service: bound[telephony.CallControl](m.twilio, m.calls), By: stopCallsBy},
		{Name: "SIP provider", Service: bound[telephony.CallControl](m.sip, m.calls), By: stopCallsBy,
			Hint: "--sip-addr HOST:PORT serves SIP elsewhere; --sip-addr off disables it"},
		{Name: "speech engines", Service: built(m.speech), By: stopCallsBy},
		{Name: "phone conversations", Service: built(m.conversations), By: stopCallsBy},
		{Name: "dialer", Service: built(m.dialer), By: cancelDialsBy},
		{Name: "HTTP server", Service: built(m.http), By: stopHTTPBy},
		{Name: "gateway", Service: built(m.gateway), By: stopGatewayBy},
	}
}

// budget is the shutdown budget the parts' shares divide.
func (m *Main) budget() time.Duration { return cmpOrDur(m.cfg.ShutdownTimeout, 20*time.Second) }

// dialCancelGrace is the dialer's CancelGrace: the share between
// stopDialsBy and cancelDialsBy.
func dialCancelGrace(cfg Config) time.Duration {
	return cmpOrDur(cfg.ShutdownTimeout, 20*time.Second) * (cancelDialsBy - stopDialsBy) / 10
}

// built is p as a list entry's Service: nil, which the list leaves out,
// when p was not built.
func built[T any, P interface {
	*T
	lifecycle.Service
}](p P) lifecycle.Service {
	if p == nil {
		return nil
	}
	return p
}

// bound is p started with to (lifecycle.Bind) as a list entry's Service,
// or nil when p was not built.
func bound[U, T any, P interface {
	*T
	lifecycle.Reporter[U]
}](p P, to U) lifecycle.Service {
	if p == nil {
		return nil
	}
	return lifecycle.Bind[U](p, to)
}

// callEvents is what call control tells the parts above it: an answered
// line runs on this node's runtime; an ended call stops here, and the
// node that holds its line hears of it (cluster.Node.Ended).
type callEvents struct {
	runtime *callrun.Runtime
	node    *cluster.Node
}

var _ callctl.Listener = callEvents{}

func (e callEvents) Answered(c call.Call, line telephony.Line) bool { return e.runtime.Start(c, line) }

func (e callEvents) Ended(c call.Call) { e.node.Ended(c) }

// conversations is the call runtime as a part: Stop ends every live call
// (system-shutdown) and waits for them, until its deadline; calls
// answered from then on start none.
type conversations struct {
	rt   *callrun.Runtime
	stop lifecycle.Blocking
}

var _ lifecycle.Lingerer = (*conversations)(nil)

func (c *conversations) Start(context.Context) error { return nil }

func (c *conversations) Stop(ctx context.Context) error {
	return c.stop.Stop(ctx, func() error {
		c.rt.Stop()
		return nil
	})
}

func (c *conversations) Stopped() <-chan struct{} { return c.stop.Stopped() }

// loops are Main's background loops as one part: Start runs each in a
// goroutine of its own, under a context Stop cancels; Stop waits for them
// all until its deadline (a webhook delivery may wait for its receiver:
// the loops stop after the calls, so that it holds up no call's end).
type loops struct {
	fns    []func(ctx context.Context)
	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   lifecycle.Blocking
}

var _ lifecycle.Lingerer = (*loops)(nil)

// add adds a loop; fn runs until its ctx ends.
func (l *loops) add(fn func(ctx context.Context)) { l.fns = append(l.fns, fn) }

// every adds a loop that runs fn every interval while lead reports true
// (this node leads the cluster).
func (l *loops) every(interval time.Duration, lead func() bool, fn func(ctx context.Context)) {
	l.add(func(ctx context.Context) {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if lead() {
				fn(ctx)
			}
		}
	})
}

func (l *loops) Start(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	for _, fn := range l.fns {
		l.wg.Go(func() { fn(ctx) })
	}
	return nil
}

func (l *loops) Stop(ctx context.Context) error {
	return l.stop.Stop(ctx, func() error {
		if l.cancel != nil {
			l.cancel()
		}
		l.wg.Wait()
		return nil
	})
}

func (l *loops) Stopped() <-chan struct{} { return l.stop.Stopped() }

// server is an HTTP server on its listener as a part: Start serves, in a
// goroutine of its own; Stop, when graceful, lets the requests under way
// finish until its deadline and then closes what is left, else closes at
// once (the metrics listener: a profile in flight is cut).
type server struct {
	*http.Server
	name     string // for the log: "http", "metrics"
	ln       net.Listener
	graceful bool
	log      *slog.Logger
	served   chan struct{} // closed once Serve has returned; nil before Start
}

var _ lifecycle.Service = (*server)(nil)

func (s *server) Start(context.Context) error {
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error(s.name+" server stopped", "err", err)
		}
	}()
	return nil
}

func (s *server) Stop(ctx context.Context) error {
	var err error
	if s.graceful {
		if err = s.Shutdown(ctx); err != nil {
			s.Close()
			err = fmt.Errorf("requests did not finish in time: %w", err)
		}
	} else {
		s.Close()
	}
	_ = s.ln.Close() // closed already, unless it never served
	if s.served != nil {
		<-s.served // Serve returns as Shutdown or Close begins
	}
	return err
}
