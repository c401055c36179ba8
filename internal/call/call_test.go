package call

import (
	"errors"
	"testing"
	"time"
)

func TestTransitionTable(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		from, to Status
		ok       bool
	}{
		{Queued, Ringing, true},
		{Queued, InProgress, true},
		{Queued, Ended, true},
		{Queued, Queued, false},
		{Ringing, InProgress, true},
		{Ringing, Ended, true},
		{Ringing, Queued, false},
		{InProgress, Ended, true},
		{InProgress, Ringing, false},
		{InProgress, Queued, false},
		{Ended, Queued, false},
		{Ended, Ringing, false},
		{Ended, InProgress, false},
		{Ended, Ended, false},
	}
	for _, tt := range tests {
		c := Call{Status: tt.from}
		err := c.Transition(Change{To: tt.to, At: now, Outcome: Completed, Reason: ReasonCustomerEnded})
		if (err == nil) != tt.ok {
			t.Errorf("Transition(%s→%s) error = %v, want ok=%v", tt.from.Text(), tt.to.Text(), err, tt.ok)
		}
		if err != nil {
			var te *ErrTransition
			if !errors.As(err, &te) {
				t.Errorf("Transition(%s→%s) error type = %T, want *ErrTransition", tt.from.Text(), tt.to.Text(), err)
			}
			if c.Status != tt.from {
				t.Errorf("Transition(%s→%s) failed but changed status to %s", tt.from.Text(), tt.to.Text(), c.Status.Text())
			}
		}
	}
}

func TestTransitionEndNeedsOutcomeAndReason(t *testing.T) {
	c := Call{Status: Ringing}
	if err := c.Transition(Change{To: Ended, At: time.Now()}); err == nil {
		t.Fatal("Transition(Ringing→Ended without outcome) = nil, want error")
	}
	if err := c.Transition(Change{To: Ended, At: time.Now(), Outcome: "exploded", Reason: "x"}); err == nil {
		t.Fatal("Transition(Ringing→Ended outcome=exploded) = nil, want error")
	}
}

func TestTransitionTimestampsAndDuration(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	c := Call{Status: Queued, CreatedAt: t0}
	steps := []Change{
		{To: Ringing, At: t0.Add(time.Second)},
		{To: InProgress, At: t0.Add(2 * time.Second)},
		{To: Ended, At: t0.Add(14500 * time.Millisecond), Outcome: Completed, Reason: ReasonCustomerEnded},
	}
	for _, s := range steps {
		if err := c.Transition(s); err != nil {
			t.Fatalf("Transition(%s) = %v", s.To.Text(), err)
		}
	}
	if got, want := c.DurationSeconds(), 12.5; got != want {
		t.Errorf("DurationSeconds() = %v, want %v", got, want)
	}
	if c.Outcome != Completed || c.EndedReason != ReasonCustomerEnded {
		t.Errorf("outcome/reason = %q/%q, want completed/%s", c.Outcome, c.EndedReason, ReasonCustomerEnded)
	}
}

// TestTransitionProviderCallID: a change that carries the provider's call
// id records it; one that does not keeps it.
func TestTransitionProviderCallID(t *testing.T) {
	c := Call{Status: Queued}
	if err := c.Transition(Change{To: Ringing, At: time.Now(), ProviderCallID: "a84b4c76e66710@pc33"}); err != nil {
		t.Fatal(err)
	}
	if c.ProviderCallID != "a84b4c76e66710@pc33" {
		t.Errorf("after Transition(ringing, ProviderCallID) ProviderCallID = %q, want a84b4c76e66710@pc33", c.ProviderCallID)
	}
	if err := c.Transition(Change{To: InProgress, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if c.ProviderCallID != "a84b4c76e66710@pc33" {
		t.Errorf("after Transition(in-progress) without one ProviderCallID = %q, want it kept", c.ProviderCallID)
	}
	bad := Call{Status: Ended}
	if err := bad.Transition(Change{To: Ringing, ProviderCallID: "x"}); err == nil || bad.ProviderCallID != "" {
		t.Errorf("a refused Transition set ProviderCallID = %q (err %v); want it unchanged", bad.ProviderCallID, err)
	}
}

func TestParseStatus(t *testing.T) {
	for _, in := range []string{"0", "queued", "3", "ended", "in-progress", "2"} {
		if _, ok := ParseStatus(in); !ok {
			t.Errorf("ParseStatus(%q) not ok", in)
		}
	}
	for _, in := range []string{"", "4", "-1", "done"} {
		if _, ok := ParseStatus(in); ok {
			t.Errorf("ParseStatus(%q) ok, want rejected", in)
		}
	}
}
