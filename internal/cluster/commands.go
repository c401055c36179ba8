package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/telephony"
)

// Local is live control of this node's calls: the call runtime
// (callrun.Runtime) implements it.
type Local interface {
	// End ends a call whose conversation runs here; ended is false when
	// none does.
	End(ctx context.Context, orgID, callID string) (ended bool, err error)
	Say(ctx context.Context, orgID, callID, text string, interrupt bool) error
	Transfer(ctx context.Context, orgID, callID, destination string) error
	// Ended stops a call that ended elsewhere; it must not block. Only
	// c.ID is set for a call another node reports ended.
	Ended(c call.Call)
}

// CallEnder ends a call of this node that its runtime does not run yet
// (queued, ringing), so that this node's provider hangs it up:
// callctl.Service.
type CallEnder interface {
	EndByAPI(ctx context.Context, orgID, callID string) (call.Call, error)
}

// Bounds of the command machinery.
const (
	// maxPending bounds the commands this node waits on at once.
	maxPending = 1024
	// maxHandlers bounds the commands this node runs for others at once.
	maxHandlers = 64
	// noticeBuffer bounds the "this call ended" notices waiting to be sent.
	noticeBuffer = 256
	// MaxMessage is the largest command a bus must carry (PostgreSQL's
	// NOTIFY payload is under 8000 bytes).
	MaxMessage = 7900
)

// message is a command, a notice or a reply, as JSON on the bus.
type message struct {
	Op        string   `json:"op"` // end, say, transfer, ended, reply
	ID        string   `json:"id,omitempty"`
	From      string   `json:"from,omitempty"` // the asker, where the reply goes
	OrgID     string   `json:"org,omitempty"`
	CallID    string   `json:"call,omitempty"`
	Text      string   `json:"text,omitempty"`
	Interrupt bool     `json:"interrupt,omitempty"`
	Dest      string   `json:"dest,omitempty"`
	Ended     bool     `json:"ended,omitempty"`
	Err       *wireErr `json:"err,omitempty"`
}

// wireErr is an error as a reply carries it: its apperr kind, code and
// message, and whether the far side refused a transfer.
type wireErr struct {
	Kind            apperr.Kind `json:"kind"`
	Code            string      `json:"code,omitempty"`
	Message         string      `json:"message"`
	TransferRefused bool        `json:"transferRefused,omitempty"`
}

func toWire(err error) *wireErr {
	if err == nil {
		return nil
	}
	w := &wireErr{Kind: apperr.Internal, Message: err.Error(), TransferRefused: errors.Is(err, telephony.ErrTransferRefused)}
	var e *apperr.Error
	if errors.As(err, &e) {
		w.Kind, w.Code, w.Message = e.Kind, e.Code, e.Message
	}
	return w
}

func (w *wireErr) err() error {
	if w == nil {
		return nil
	}
	e := &apperr.Error{Kind: w.Kind, Code: w.Code, Message: w.Message}
	if w.TransferRefused {
		e.Err = telephony.ErrTransferRefused
	}
	return e
}

// owner says where call callID's line is: remote is true (with the node)
// when another node holds it and there is a bus to reach it.
func (n *Node) owner(ctx context.Context, orgID, callID string) (node string, remote bool, err error) {
	if n.cfg.Bus == nil {
		return "", false, nil
	}
	c, err := n.cfg.Store.GetCall(ctx, orgID, callID)
	if apperr.Is(err, apperr.NotFound) {
		return "", false, nil // the local runtime answers as for any unknown call
	}
	if err != nil {
		return "", false, err
	}
	if c.NodeID == "" || c.NodeID == n.id || c.Status == call.Ended {
		return "", false, nil
	}
	return c.NodeID, true, nil
}

// ownerLost is the answer, at once, for a call whose node's lease has
// lapsed: nothing can reach its line, and the leader ends it node-lost.
func (n *Node) ownerLost(ctx context.Context, node, callID string) error {
	nd, err := n.cfg.Store.GetNode(ctx, node)
	if apperr.Is(err, apperr.NotFound) {
		return apperr.New(apperr.Unavailable, "call %s is held by node %s, which is gone; the call ends node-lost", callID, node)
	}
	if err != nil {
		return err
	}
	if now := n.cfg.Now(); !nd.Alive(now) {
		return apperr.New(apperr.Unavailable, "call %s is held by node %s, whose lease lapsed %s ago (it died); the call ends node-lost",
			callID, node, now.Sub(nd.LeaseUntil).Round(time.Millisecond))
	}
	return nil
}

// ask sends command m to node and waits, within CommandTimeout, for its
// reply (the caller has checked the owner is alive: ownerLost). An owner
// that does not answer in time, or a bus that fails, is Unavailable,
// naming the cause.
func (n *Node) ask(ctx context.Context, node string, m message) (message, error) {
	m.ID, m.From = id.Random(16), n.id
	b, err := json.Marshal(m)
	if err != nil {
		return message{}, err
	}
	if len(b) > MaxMessage {
		return message{}, apperr.New(apperr.Unavailable, "call %s runs on node %s and this command (%d bytes) is too large to send there (at most %d)",
			m.CallID, node, len(b), MaxMessage)
	}
	ch := make(chan message, 1)
	n.mu.Lock()
	if len(n.pending) >= maxPending {
		n.mu.Unlock()
		return message{}, apperr.New(apperr.Unavailable, "this node is waiting on %d commands to other nodes already; retry", maxPending)
	}
	n.pending[m.ID] = ch
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.pending, m.ID)
		n.mu.Unlock()
	}()
	n.stats.sent.Add(1)
	if err := n.cfg.Bus.Send(ctx, node, b); err != nil {
		return message{}, apperr.Wrap(apperr.Unavailable, err, "call %s runs on node %s, which this node could not reach", m.CallID, node)
	}
	timer := time.NewTimer(n.cfg.CommandTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r, r.Err.err()
	case <-timer.C:
		n.stats.timeouts.Add(1)
		return message{}, apperr.New(apperr.Unavailable, "call %s runs on node %s, which did not answer within %s; retry", m.CallID, node, n.cfg.CommandTimeout)
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// End ends call callID as the API asked, on the node that holds its line:
// there its conversation ends it (recording what it gathered), or, not
// answered yet, its provider hangs it up. ended is false when nobody runs
// the call's conversation (here, or on an owner that has died): the caller
// then records the end itself (callctl.EndByAPI).
func (n *Node) End(ctx context.Context, orgID, callID string) (bool, error) {
	node, remote, err := n.owner(ctx, orgID, callID)
	if err != nil {
		return false, err
	}
	if !remote {
		return n.cfg.Local.End(ctx, orgID, callID)
	}
	if n.ownerLost(ctx, node, callID) != nil {
		return false, nil // nothing to reach: the caller records the end
	}
	r, err := n.ask(ctx, node, message{Op: "end", OrgID: orgID, CallID: callID})
	return err == nil && r.Ended, err
}

// Say makes the assistant of call callID say text, on the node that runs it.
func (n *Node) Say(ctx context.Context, orgID, callID, text string, interrupt bool) error {
	node, remote, err := n.owner(ctx, orgID, callID)
	if err != nil {
		return err
	}
	if !remote {
		return n.cfg.Local.Say(ctx, orgID, callID, text, interrupt)
	}
	if err := n.ownerLost(ctx, node, callID); err != nil {
		return err
	}
	_, err = n.ask(ctx, node, message{Op: "say", OrgID: orgID, CallID: callID, Text: text, Interrupt: interrupt})
	return err
}

// Transfer hands call callID to destination, on the node that holds its line.
func (n *Node) Transfer(ctx context.Context, orgID, callID, destination string) error {
	node, remote, err := n.owner(ctx, orgID, callID)
	if err != nil {
		return err
	}
	if !remote {
		return n.cfg.Local.Transfer(ctx, orgID, callID, destination)
	}
	if err := n.ownerLost(ctx, node, callID); err != nil {
		return err
	}
	_, err = n.ask(ctx, node, message{Op: "transfer", OrgID: orgID, CallID: callID, Dest: destination})
	return err
}

// Ended is told of every call that ended (callctl's Listener, through
// the app). This node's runtime stops
// it if it runs it; when another node holds its line, that node is told
// (a notice, not waited for: a full buffer drops it and counts the drop).
func (n *Node) Ended(c call.Call) {
	n.cfg.Local.Ended(c)
	if n.cfg.Bus == nil || c.NodeID == "" || c.NodeID == n.id {
		return
	}
	select {
	case n.notices <- notice{node: c.NodeID, callID: c.ID}:
	default:
		n.stats.dropped.Add(1)
		n.log.Warn("a call-ended notice was dropped: the buffer is full", "call_id", c.ID, "owner", c.NodeID)
	}
}

// notice is a "this call ended" notice for the node that holds its line.
type notice struct{ node, callID string }

// sendNotices sends the queued "this call ended" notices to the owners.
func (n *Node) sendNotices(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case v := <-n.notices:
			node, callID := v.node, v.callID
			b, _ := json.Marshal(message{Op: "ended", CallID: callID, From: n.id})
			sctx, cancel := context.WithTimeout(ctx, n.cfg.CommandTimeout)
			if err := n.cfg.Bus.Send(sctx, node, b); err != nil && ctx.Err() == nil {
				n.log.Warn("a call-ended notice could not be sent", "call_id", callID, "owner", node, "err", err)
			}
			cancel()
		}
	}
}

// receive reads this node's subscription until ctx ends, subscribing
// again (every second) when it fails.
func (n *Node) receive(ctx context.Context) {
	sub := n.sub
	defer func() {
		if sub != nil {
			_ = sub.Close()
		}
	}()
	for {
		b, err := sub.Next(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			n.log.Warn("the command subscription failed; subscribing again", "err", err)
			_ = sub.Close()
			sub = nil
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				var again Subscription
				if again, err = n.cfg.Bus.Subscribe(ctx, n.id); err == nil {
					sub = again
					break
				}
				n.log.Warn("subscribing to commands failed", "err", err)
			}
			continue
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil {
			n.log.Warn("an unreadable command was dropped", "err", err)
			continue
		}
		n.dispatch(ctx, m)
	}
}

// dispatch hands a reply to its waiter, or runs a command (at most
// maxHandlers at once; past that the asker hears this node is busy).
func (n *Node) dispatch(ctx context.Context, m message) {
	if m.Op == "reply" {
		n.mu.Lock()
		ch := n.pending[m.ID]
		n.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
		return
	}
	select {
	case n.handlers <- struct{}{}:
	default:
		n.reply(ctx, m, message{Err: toWire(apperr.New(apperr.Unavailable, "node %s is running %d commands already; retry", n.id, maxHandlers))})
		return
	}
	n.wg.Go(func() {
		defer func() { <-n.handlers }()
		n.stats.handled.Add(1)
		hctx, cancel := context.WithTimeout(ctx, n.cfg.CommandTimeout)
		defer cancel()
		var r message
		switch m.Op {
		case "end":
			ended, err := n.cfg.Local.End(hctx, m.OrgID, m.CallID)
			if err == nil && !ended && n.cfg.Calls != nil {
				// Not answered yet (or not run here): end it here, where
				// its provider holds it.
				_, err = n.cfg.Calls.EndByAPI(hctx, m.OrgID, m.CallID)
				ended = err == nil
			}
			r = message{Ended: ended, Err: toWire(err)}
		case "say":
			r = message{Err: toWire(n.cfg.Local.Say(hctx, m.OrgID, m.CallID, m.Text, m.Interrupt))}
		case "transfer":
			r = message{Err: toWire(n.cfg.Local.Transfer(hctx, m.OrgID, m.CallID, m.Dest))}
		case "ended":
			// The runtime stops the call by its id and reads the
			// recorded end itself: no need to read the call here.
			n.cfg.Local.Ended(call.Call{ID: m.CallID})
			return // a notice: no reply
		default:
			r = message{Err: toWire(apperr.Invalidf("op", "unknown command %q", m.Op))}
		}
		n.reply(hctx, m, r)
	})
}

// reply sends r as the answer to command m.
func (n *Node) reply(ctx context.Context, m, r message) {
	if m.From == "" || m.ID == "" {
		return
	}
	r.Op, r.ID, r.From = "reply", m.ID, n.id
	b, err := json.Marshal(r)
	if err == nil && len(b) > MaxMessage {
		b, err = json.Marshal(message{Op: "reply", ID: m.ID, From: n.id, Ended: r.Ended,
			Err: toWire(apperr.New(apperr.Internal, "node %s's answer was too large to send", n.id))})
	}
	if err != nil {
		return
	}
	if err := n.cfg.Bus.Send(context.WithoutCancel(ctx), m.From, b); err != nil {
		n.log.Warn("a command's answer could not be sent", "to", m.From, "call_id", m.CallID, "err", err)
	}
}
