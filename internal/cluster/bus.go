package cluster

import (
	"context"
	"errors"
	"sync"
)

// Bus carries commands between the nodes: a message sent to a node is
// delivered at most once, to that node's subscription, if it has one
// (PostgreSQL NOTIFY on the node's channel, package pgbus; Hub in one
// process).
type Bus interface {
	// Send delivers msg to node's subscription without waiting for it to
	// be read. A node without one drops it.
	Send(ctx context.Context, node string, msg []byte) error
	// Subscribe starts receiving what is sent to node; messages sent
	// once it has returned are delivered.
	Subscribe(ctx context.Context, node string) (Subscription, error)
}

// Subscription receives one node's messages.
type Subscription interface {
	// Next blocks until a message comes, ctx ends or the subscription
	// fails (then every later Next fails too: subscribe again).
	Next(ctx context.Context) ([]byte, error)
	Close() error
}

// Hub is a Bus inside one process: the nodes of a test, or one node.
// Each subscription buffers hubBuffer messages; more are dropped, as a
// lost notification would be.
type Hub struct {
	mu   sync.Mutex
	subs map[string]*hubSub
}

const hubBuffer = 64

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string]*hubSub{}} }

// Send delivers msg to node's subscription, if any.
func (h *Hub) Send(_ context.Context, node string, msg []byte) error {
	h.mu.Lock()
	s := h.subs[node]
	h.mu.Unlock()
	if s == nil {
		return nil
	}
	select {
	case s.ch <- append([]byte(nil), msg...):
	default:
	}
	return nil
}

// Subscribe replaces node's subscription.
func (h *Hub) Subscribe(_ context.Context, node string) (Subscription, error) {
	s := &hubSub{h: h, node: node, ch: make(chan []byte, hubBuffer), closed: make(chan struct{})}
	h.mu.Lock()
	h.subs[node] = s
	h.mu.Unlock()
	return s, nil
}

type hubSub struct {
	h      *Hub
	node   string
	ch     chan []byte
	once   sync.Once
	closed chan struct{}
}

var errClosed = errors.New("cluster: subscription closed")

func (s *hubSub) Next(ctx context.Context) ([]byte, error) {
	select {
	case m := <-s.ch:
		return m, nil
	case <-s.closed:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *hubSub) Close() error {
	s.once.Do(func() {
		s.h.mu.Lock()
		if s.h.subs[s.node] == s {
			delete(s.h.subs, s.node)
		}
		s.h.mu.Unlock()
		close(s.closed)
	})
	return nil
}
