package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/callrun"
	"switchboard/internal/id"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/telephony"
)

// TestRealParts runs the gateway on the real call control and SQLite store,
// wired as the app wires them: a session claims and ends its call through
// callctl, turns land in the store, and callctl's listener stops a
// session whose call is ended from outside.
func TestRealParts(t *testing.T) {
	checkLeaks(t)
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	calls := callctl.New(callctl.Config{Store: db, Log: slog.New(slog.DiscardHandler)})
	now := time.Now().UTC()
	org := auth.Org{ID: id.New(id.Org), Name: "o", CreatedAt: now}
	if err := db.CreateOrg(ctx, org); err != nil {
		t.Fatal(err)
	}
	a := assistant.Defaults(assistant.DefaultProviders())
	a.ID, a.OrgID, a.Name, a.FirstMessage, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), org.ID, "Ava", firstMessage, now, now
	if err := db.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt := callrun.New(callrun.Config{Store: db, Ender: calls, Brains: brainOf(echoBrain{}), Log: log})
	srv := New(Config{Store: db, Calls: calls, Runtime: rt, WriteTimeout: 2 * time.Second, Log: log})
	if err := calls.Start(ctx, endedOnly{rt}); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv)
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("Close() = %v", err)
		}
		rt.Stop()
		web.Close()
	})
	b := &bundle{srv: srv, rt: rt, web: web, asst: a}
	ended := func(callID string) call.Call {
		t.Helper()
		var c call.Call
		waitFor(t, "call "+callID+" ended", func() bool {
			c, err = db.GetCallAnyOrg(ctx, callID)
			return err == nil && c.Status == call.Ended
		})
		return c
	}

	t.Run("hangup", func(t *testing.T) {
		c, err := calls.CreateWebCall(ctx, org.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		cl := b.dialFirst(t, c)
		_, resp, err := b.rawDial(t, c.ID, c.AssistantID)
		refusedBody(t, resp, err, http.StatusConflict, "conflict")
		cl.exchange("Book me a cleaning.")
		cl.send(`{"type":"hangup"}`)
		cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
		got := ended(c.ID)
		if got.Outcome != call.Completed || got.EndedReason != call.ReasonCustomerEnded || got.StartedAt.IsZero() {
			t.Errorf("call = %s/%s startedAt %v, want completed/customer-ended-call with startedAt", got.Outcome, got.EndedReason, got.StartedAt)
		}
		turns, err := db.ListTurns(ctx, org.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) != 3 {
			t.Errorf("stored turns = %d, want 3", len(turns))
		}
		_, resp, err = b.rawDial(t, c.ID, c.AssistantID)
		refusedBody(t, resp, err, http.StatusGone, "gone")
	})

	t.Run("ended from outside", func(t *testing.T) {
		c, err := calls.CreateWebCall(ctx, org.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		cl := b.dialFirst(t, c)
		if _, err := calls.End(ctx, c.ID, call.Canceled, call.ReasonSystemCallLost, call.Result{}); err != nil {
			t.Fatal(err)
		}
		cl.expectEnd(call.Canceled, call.ReasonSystemCallLost, 4410)
		if got := ended(c.ID); got.Outcome != call.Canceled || got.EndedReason != call.ReasonSystemCallLost {
			t.Errorf("call = %s/%s, want the outside end kept", got.Outcome, got.EndedReason)
		}
	})
	b.waitLive(t, 0)
}

// endedOnly is call control's listener of these tests: a call that ended
// stops in the runtime; no phone line is answered here.
type endedOnly struct{ rt *callrun.Runtime }

func (e endedOnly) Answered(call.Call, telephony.Line) bool { return false }

func (e endedOnly) Ended(c call.Call) { e.rt.Ended(c) }
