package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// Live updates: /ui/events is a server-sent event stream, one request per
// open page, served by that request's own goroutine, which polls the store
// (Config.PollEvery) and ends with the request, when the server closes,
// when its session ends (idle or expired: checked at every heartbeat), or,
// for one call, when the call ends. Streams are bounded per session and in
// all (streamCounter). Events:
//
//	call  {"id", "status", "statusText", "outcome", …}  a call changed (list: every live call)
//	turn  {"seq", "role", "text", "interrupted", …}     a transcript line (one call)
//	end   {}                                            the call ended, or the session did: reload

// maxLiveListed bounds the live calls a stream follows per status.
const maxLiveListed = 100

// writeTimeout bounds each write to a stream, so a client that stops
// reading does not hold its goroutine.
const writeTimeout = 10 * time.Second

// streamCounter counts the open streams, per session and in all.
type streamCounter struct {
	mu        sync.Mutex
	total     int
	bySession map[string]int
}

func (c *streamCounter) acquire(session string, perSession, total int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total >= total || c.bySession[session] >= perSession {
		return false
	}
	c.total++
	c.bySession[session]++
	return true
}

func (c *streamCounter) release(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.bySession[session]--; c.bySession[session] <= 0 {
		delete(c.bySession, session)
	}
}

// callEvent is a call's state as the page's script shows it.
type callEvent struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Direction   string `json:"direction"`
	From        string `json:"from"`
	To          string `json:"to"`
	Status      int    `json:"status"`
	StatusText  string `json:"statusText"`
	Outcome     string `json:"outcome"`
	EndedReason string `json:"endedReason"`
	Duration    string `json:"duration"`
	Created     string `json:"created"`
	// Assistant is the assistant's name, for a new row of the listing.
	Assistant string `json:"assistant,omitempty"`
}

func newCallEvent(c call.Call) callEvent {
	r := newCallRow(c)
	return callEvent{ID: c.ID, Type: string(c.Type), Direction: string(c.Direction), From: c.From, To: c.To,
		Status: int(c.Status), StatusText: r.StatusText, Outcome: string(c.Outcome), EndedReason: c.EndedReason,
		Duration: formatDuration(r.Duration), Created: shortTime(c.CreatedAt)}
}

// turnEvent is a transcript line.
type turnEvent struct {
	Seq         int    `json:"seq"`
	Role        string `json:"role"`
	Text        string `json:"text"`
	Interrupted bool   `json:"interrupted"`
	Clock       string `json:"clock"`
}

// watcher is what one stream follows.
type watcher interface {
	// poll writes the events of what changed since the last poll; done
	// says that nothing more will change (the call ended).
	poll(ctx context.Context, w *sse) (done bool, err error)
}

func (s *Server) events(w http.ResponseWriter, r *request) error {
	var wt watcher
	if cid := r.URL.Query().Get("call"); cid != "" {
		if !id.Valid(id.Call, cid) {
			return apperr.NotFoundf("no such call")
		}
		if _, err := s.st.GetCall(r.Context(), r.op.OrgID, cid); err != nil {
			return err
		}
		wt = &callWatch{st: s.st, org: r.op.OrgID, id: cid}
	} else {
		wt = &listWatch{st: s.st, org: r.op.OrgID, now: s.cfg.Now, seen: map[string]sentState{}}
	}
	if !s.streams.acquire(r.ses.TokenHash, s.cfg.MaxStreamsPerSession, s.cfg.MaxStreams) {
		return apperr.New(apperr.RateLimited, "too many live views are open; close some dashboard tabs")
	}
	defer s.streams.release(r.ses.TokenHash)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	out := &sse{w: w, rc: http.NewResponseController(w)}
	ctx := r.Context()
	if err := s.stream(ctx, r, wt, out); err != nil && ctx.Err() == nil {
		s.log.Info("dashboard live updates stopped", "org_id", r.op.OrgID, "err", err)
	}
	return nil
}

// stream runs one event stream until it has a reason to end.
func (s *Server) stream(ctx context.Context, r *request, wt watcher, out *sse) error {
	// The reconnection delay the browser waits after the stream ends.
	if err := out.raw("retry: 5000\n\n"); err != nil {
		return err
	}
	ses := r.ses
	end := time.NewTimer(ses.Ends().Sub(s.cfg.Now()))
	defer end.Stop()
	poll := time.NewTicker(s.cfg.PollEvery)
	defer poll.Stop()
	beat := time.NewTicker(s.cfg.HeartbeatEvery)
	defer beat.Stop()
	for due := true; ; {
		if due {
			done, err := wt.poll(ctx, out)
			if err != nil {
				return err
			}
			if done {
				return out.event("end", struct{}{})
			}
		}
		due = false
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return nil
		case <-end.C:
			return out.event("end", struct{}{})
		case <-beat.C:
			// The session may have been signed out, or used (and so
			// extended) in another tab.
			cur, _, err := s.st.GetOperatorSession(ctx, ses.TokenHash)
			if apperr.Is(err, apperr.NotFound) || (err == nil && !cur.Live(s.cfg.Now())) {
				return out.event("end", struct{}{})
			}
			if err != nil {
				return err
			}
			end.Reset(cur.Ends().Sub(s.cfg.Now()))
			if err := out.raw(": ping\n\n"); err != nil {
				return err
			}
		case <-poll.C:
			due = true
		}
	}
}

// sse writes server-sent events, each flushed, each within writeTimeout.
type sse struct {
	w  io.Writer
	rc *http.ResponseController
}

func (e *sse) raw(s string) error {
	// A ResponseWriter that cannot take deadlines (a test's recorder) is
	// written without.
	_ = e.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(e.w, s); err != nil {
		return err
	}
	return e.rc.Flush()
}

func (e *sse) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.raw(fmt.Sprintf("event: %s\ndata: %s\n\n", name, b))
}

// listWatch follows the organization's calls as the listing shows them:
// every live call when it appears or changes and once more when it has
// ended, and every call created since the last poll (one may start and
// end between two polls).
type listWatch struct {
	st   Store
	org  string
	now  func() time.Time
	last time.Time            // when the previous poll began
	seen map[string]sentState // what was last sent of each call followed
	// names caches assistants' names for new rows (at most
	// maxNamesCached, then started over).
	names map[string]string
}

// maxNamesCached bounds a listing stream's cache of assistants' names.
const maxNamesCached = 1000

// name is the assistant's name, read once per stream.
func (l *listWatch) name(ctx context.Context, assistantID string) (string, error) {
	if n, ok := l.names[assistantID]; ok {
		return n, nil
	}
	got, err := l.st.AssistantNames(ctx, l.org, []string{assistantID})
	if err != nil {
		return "", err
	}
	if l.names == nil || len(l.names) >= maxNamesCached {
		l.names = map[string]string{}
	}
	l.names[assistantID] = got[assistantID]
	return got[assistantID], nil
}

type sentState struct {
	updated time.Time
	live    bool
}

// createdSlack widens "created since the last poll" for a call whose
// insert committed just after that poll read.
const createdSlack = time.Second

func (l *listWatch) poll(ctx context.Context, out *sse) (bool, error) {
	began := l.now()
	cur := map[string]sentState{}
	send := func(c call.Call) error {
		st := sentState{updated: c.UpdatedAt, live: c.Status != call.Ended}
		cur[c.ID] = st
		prev, ok := l.seen[c.ID]
		if ok && prev.updated.Equal(c.UpdatedAt) {
			return nil
		}
		ev := newCallEvent(c)
		if !ok {
			n, err := l.name(ctx, c.AssistantID)
			if err != nil {
				return err
			}
			ev.Assistant = n
		}
		return out.event("call", ev)
	}
	filters := []store.CallFilter{}
	for _, st := range []call.Status{call.Queued, call.Ringing, call.InProgress} {
		filters = append(filters, store.CallFilter{Status: &st, Page: store.Page{Page: 1, PageSize: maxLiveListed}})
	}
	if !l.last.IsZero() {
		filters = append(filters, store.CallFilter{CreatedAfter: l.last.Add(-createdSlack), Page: store.Page{Page: 1, PageSize: maxLiveListed}})
	}
	for _, f := range filters {
		calls, _, err := l.st.ListCalls(ctx, l.org, f)
		if err != nil {
			return false, err
		}
		for _, c := range calls {
			if err := send(c); err != nil {
				return false, err
			}
		}
	}
	// A call that was live and is no longer listed has ended: its final state.
	for cid, prev := range l.seen {
		if _, ok := cur[cid]; ok || !prev.live {
			continue
		}
		c, err := l.st.GetCall(ctx, l.org, cid)
		if err != nil {
			return false, err
		}
		if err := send(c); err != nil {
			return false, err
		}
		delete(cur, cid) // ended: nothing more to follow
	}
	l.seen, l.last = cur, began
	return false, nil
}

// callWatch follows one call: its state and its new transcript lines.
type callWatch struct {
	st      Store
	org, id string
	updated time.Time
	seq     int
}

func (c *callWatch) poll(ctx context.Context, out *sse) (bool, error) {
	cl, err := c.st.GetCall(ctx, c.org, c.id)
	if err != nil {
		return false, err
	}
	turns, err := c.st.ListTurns(ctx, c.org, c.id)
	if err != nil {
		return false, err
	}
	for _, t := range turns {
		if t.Seq <= c.seq {
			continue
		}
		c.seq = t.Seq
		if err := out.event("turn", turnEvent{Seq: t.Seq, Role: t.Role, Text: t.Text, Interrupted: t.Interrupted,
			Clock: t.StartedAt.UTC().Format("15:04:05")}); err != nil {
			return false, err
		}
	}
	if !cl.UpdatedAt.Equal(c.updated) {
		c.updated = cl.UpdatedAt
		if err := out.event("call", newCallEvent(cl)); err != nil {
			return false, err
		}
	}
	return cl.Status == call.Ended, nil
}
