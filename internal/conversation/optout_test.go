package conversation

import (
	"context"
	"sync"
	"testing"

	"switchboard/internal/call"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// dncRecorder is a recorder whose turn store also keeps a do-not-call list.
type dncRecorder struct {
	*recorder
	mu    sync.Mutex
	added []phone.DNCEntry
	orgs  []string
}

func (d *dncRecorder) AddDNC(ctx context.Context, orgID string, es []phone.DNCEntry) (store.DNCAdded, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.added = append(d.added, es...)
	d.orgs = append(d.orgs, orgID)
	return store.DNCAdded{Added: es}, nil
}

// TestOptOut: a phone caller's turn that says an opt-out phrase (any case
// or punctuation) lists the far party's number once, with the call as
// evidence: the called number on an outbound call, the caller's on an
// inbound one. Web calls, other words and an assistant without phrases
// list nothing; the conversation goes on.
func TestOptOut(t *testing.T) {
	out := call.Call{ID: "call_out", OrgID: "org_x", Type: call.Phone, Direction: call.Outbound, From: "+12125550100", To: "+14155550123"}
	in := call.Call{ID: "call_in", OrgID: "org_x", Type: call.Phone, Direction: call.Inbound, From: "+14155550199", To: "+12125550100"}
	anonymous := in
	anonymous.From = "anonymous"
	web := call.Call{ID: "call_web", OrgID: "org_x", Type: call.Web}
	noPhrases := testAssistant()
	noPhrases.OptOutPhrases = []string{}
	custom := testAssistant()
	custom.OptOutPhrases = []string{"unsubscribe"}
	for _, c := range []struct {
		name   string
		c      call.Call
		phrase func() []string
		says   []string
		want   string // the number listed, "" for none
	}{
		{"outbound", out, nil, []string{"Hi.", "Please STOP calling me!", "And take me off your list."}, "+14155550123"},
		{"inbound", in, nil, []string{"Do not call me, ever."}, "+14155550199"},
		{"inbound, no number", anonymous, nil, []string{"Do not call me, ever."}, ""},
		{"apostrophe and case", out, nil, []string{"Don’t call me again"}, "+14155550123"},
		{"not whole words", out, nil, []string{"Don't stop calling meadows"}, ""},
		{"web call", web, nil, []string{"stop calling me"}, ""},
		{"no phrases", out, func() []string { return noPhrases.OptOutPhrases }, []string{"stop calling me"}, ""},
		{"custom phrase", out, func() []string { return custom.OptOutPhrases }, []string{"I want to UNSUBSCRIBE."}, "+14155550123"},
		{"default phrase off with custom", out, func() []string { return custom.OptOutPhrases }, []string{"stop calling me"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := testAssistant()
			if c.phrase != nil {
				a.OptOutPhrases = c.phrase()
			}
			rec := &dncRecorder{recorder: &recorder{}}
			b := &scriptBrain{open: Reply{Text: "How can I help?"}, replies: map[string]Reply{}}
			inputs := make(chan Input, len(c.says)+1)
			for _, s := range c.says {
				inputs <- Input{Kind: UserText, Text: s}
			}
			inputs <- Input{Kind: Hangup}
			Run(context.Background(), Config{Call: c.c, Assistant: a, Brain: b, Turns: rec, Ender: rec.recorder}, inputs, rec.recorder)
			var users int
			for _, tr := range rec.turns {
				if tr.Role == call.RoleUser {
					users++
				}
			}
			if users != len(c.says) {
				t.Errorf("caller turns stored = %d, want %d (the conversation goes on)", users, len(c.says))
			}
			if c.want == "" {
				if len(rec.added) != 0 {
					t.Errorf("AddDNC called with %+v; want nothing listed", rec.added)
				}
				return
			}
			if len(rec.added) != 1 {
				t.Fatalf("AddDNC entries = %+v; want one (listed once)", rec.added)
			}
			e := rec.added[0]
			if e.Number != c.want || e.Source != phone.DNCSourceOptOut || e.CallID != c.c.ID || rec.orgs[0] != c.c.OrgID || e.CreatedAt.IsZero() {
				t.Errorf("listed %+v in %s; want %s, source opt-out, call %s, org %s", e, rec.orgs[0], c.want, c.c.ID, c.c.OrgID)
			}
		})
	}
}
