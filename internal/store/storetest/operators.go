package storetest

import (
	"fmt"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/operator"
	"switchboard/internal/store"
)

func newOperator(orgID, email string, created time.Time) operator.Operator {
	return operator.Operator{ID: id.New(operator.IDPrefix), OrgID: orgID, Email: email, Name: "Op " + email,
		PasswordHash: []byte("$2a$04$not.a.real.hash.but.kept.as.is.by.the.store"), CreatedAt: created}
}

func normOperator(op operator.Operator) operator.Operator {
	op.CreatedAt = msTime(op.CreatedAt)
	return op
}

func normSession(s operator.Session) operator.Session {
	s.CreatedAt, s.IdleUntil, s.ExpiresAt = msTime(s.CreatedAt), msTime(s.IdleUntil), msTime(s.ExpiresAt)
	return s
}

func newSession(op operator.Operator, created time.Time, idle, life time.Duration) operator.Session {
	return operator.Session{TokenHash: operator.HashToken(id.Random(32)), OperatorID: op.ID, OrgID: op.OrgID,
		CreatedAt: created, IdleUntil: created.Add(idle), ExpiresAt: created.Add(life)}
}

func testOperators(t *testing.T, open Opener) {
	t.Run("CreateGetList", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		a, b := mustOrg(t, s, "A"), mustOrg(t, s, "B")
		a2 := newOperator(a.ID, "two@a.example", at(2*time.Second+300*time.Microsecond))
		a1 := newOperator(a.ID, "one@a.example", at(time.Second))
		b1 := newOperator(b.ID, "one@b.example", at(time.Second))
		for _, op := range []operator.Operator{a2, b1, a1} {
			must(t, "CreateOperator("+op.Email+")", s.CreateOperator(ctx, op))
		}
		got, err := s.GetOperatorByEmail(ctx, a2.Email)
		must(t, "GetOperatorByEmail", err)
		equal(t, "GetOperatorByEmail("+a2.Email+")", normOperator(got), normOperator(a2))
		_, err = s.GetOperatorByEmail(ctx, "nobody@a.example")
		wantKind(t, "GetOperatorByEmail(unknown)", err, apperr.NotFound)

		list, err := s.ListOperators(ctx, a.ID)
		must(t, "ListOperators(A)", err)
		equal(t, "ListOperators(A)", norm(list, normOperator), norm([]operator.Operator{a1, a2}, normOperator))
		list, err = s.ListOperators(ctx, b.ID)
		must(t, "ListOperators(B)", err)
		equal(t, "ListOperators(B)", norm(list, normOperator), norm([]operator.Operator{b1}, normOperator))
	})

	t.Run("EmailTakenAnywhere", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		a, b := mustOrg(t, s, "A"), mustOrg(t, s, "B")
		must(t, "CreateOperator", s.CreateOperator(ctx, newOperator(a.ID, "ops@example.com", t0)))
		dup := newOperator(b.ID, "ops@example.com", t0)
		err := s.CreateOperator(ctx, dup)
		wantKind(t, "CreateOperator(email taken in another org)", err, apperr.Conflict)
		list, err := s.ListOperators(ctx, b.ID)
		must(t, "ListOperators(B)", err)
		if len(list) != 0 {
			t.Errorf("ListOperators(B) after a refused CreateOperator = %d operators; want none", len(list))
		}
		err = s.CreateOperator(ctx, newOperator(id.New(id.Org), "new@example.com", t0))
		wantKind(t, "CreateOperator(missing org)", err, apperr.NotFound)
	})

	t.Run("Sessions", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "A")
		op := newOperator(o.ID, "ops@example.com", t0)
		must(t, "CreateOperator", s.CreateOperator(ctx, op))
		ses := newSession(op, at(1500*time.Microsecond), time.Hour, 24*time.Hour)
		must(t, "CreateOperatorSession", s.CreateOperatorSession(ctx, ses))
		gotS, gotOp, err := s.GetOperatorSession(ctx, ses.TokenHash)
		must(t, "GetOperatorSession", err)
		equal(t, "GetOperatorSession: session", normSession(gotS), normSession(ses))
		equal(t, "GetOperatorSession: operator", normOperator(gotOp), normOperator(op))
		_, _, err = s.GetOperatorSession(ctx, operator.HashToken("unknown"))
		wantKind(t, "GetOperatorSession(unknown)", err, apperr.NotFound)

		// Touch moves IdleUntil, and never past ExpiresAt.
		must(t, "TouchOperatorSession", s.TouchOperatorSession(ctx, ses.TokenHash, at(2*time.Hour)))
		gotS, _, err = s.GetOperatorSession(ctx, ses.TokenHash)
		must(t, "GetOperatorSession", err)
		if !gotS.IdleUntil.Equal(msTime(at(2 * time.Hour))) {
			t.Errorf("IdleUntil after TouchOperatorSession(t0+2h) = %v; want %v", gotS.IdleUntil, msTime(at(2*time.Hour)))
		}
		must(t, "TouchOperatorSession", s.TouchOperatorSession(ctx, ses.TokenHash, at(48*time.Hour)))
		gotS, _, err = s.GetOperatorSession(ctx, ses.TokenHash)
		must(t, "GetOperatorSession", err)
		if !gotS.IdleUntil.Equal(msTime(ses.ExpiresAt)) {
			t.Errorf("IdleUntil after TouchOperatorSession(past ExpiresAt) = %v; want ExpiresAt %v", gotS.IdleUntil, msTime(ses.ExpiresAt))
		}
		err = s.TouchOperatorSession(ctx, operator.HashToken("unknown"), at(time.Hour))
		wantKind(t, "TouchOperatorSession(unknown)", err, apperr.NotFound)

		must(t, "DeleteOperatorSession", s.DeleteOperatorSession(ctx, ses.TokenHash))
		_, _, err = s.GetOperatorSession(ctx, ses.TokenHash)
		wantKind(t, "GetOperatorSession after DeleteOperatorSession", err, apperr.NotFound)
		err = s.DeleteOperatorSession(ctx, ses.TokenHash)
		wantKind(t, "DeleteOperatorSession (again)", err, apperr.NotFound)

		ghost := newOperator(o.ID, "ghost@example.com", t0)
		err = s.CreateOperatorSession(ctx, newSession(ghost, t0, time.Hour, time.Hour))
		wantKind(t, "CreateOperatorSession(operator never stored)", err, apperr.NotFound)
	})

	t.Run("PurgeAndDelete", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "A")
		op, other := newOperator(o.ID, "ops@example.com", t0), newOperator(o.ID, "other@example.com", t0)
		must(t, "CreateOperator", s.CreateOperator(ctx, op))
		must(t, "CreateOperator", s.CreateOperator(ctx, other))
		idle := newSession(op, t0, time.Minute, time.Hour)     // idle at t0+1m
		old := newSession(op, t0, 2*time.Hour, 90*time.Minute) // expires at t0+90m
		live := newSession(op, t0, 3*time.Hour, 3*time.Hour)
		others := newSession(other, t0, 3*time.Hour, 3*time.Hour)
		for _, ses := range []operator.Session{idle, old, live, others} {
			must(t, "CreateOperatorSession", s.CreateOperatorSession(ctx, ses))
		}
		n, err := s.PurgeOperatorSessions(ctx, at(2*time.Hour))
		must(t, "PurgeOperatorSessions", err)
		if n != 2 {
			t.Errorf("PurgeOperatorSessions(t0+2h) = %d; want 2 (one idle, one expired)", n)
		}
		for _, ses := range []operator.Session{idle, old} {
			_, _, err := s.GetOperatorSession(ctx, ses.TokenHash)
			wantKind(t, "GetOperatorSession(purged)", err, apperr.NotFound)
		}
		_, _, err = s.GetOperatorSession(ctx, live.TokenHash)
		must(t, "GetOperatorSession(live, after purge)", err)

		// Deleting an operator ends its sessions and no one else's.
		must(t, "DeleteOperator", s.DeleteOperator(ctx, op.ID))
		_, _, err = s.GetOperatorSession(ctx, live.TokenHash)
		wantKind(t, "GetOperatorSession(session of a deleted operator)", err, apperr.NotFound)
		_, err = s.GetOperatorByEmail(ctx, op.Email)
		wantKind(t, "GetOperatorByEmail(deleted)", err, apperr.NotFound)
		_, _, err = s.GetOperatorSession(ctx, others.TokenHash)
		must(t, "GetOperatorSession(another operator's)", err)
		err = s.DeleteOperator(ctx, op.ID)
		wantKind(t, "DeleteOperator (again)", err, apperr.NotFound)
		// The email is free again.
		must(t, "CreateOperator(reused email)", s.CreateOperator(ctx, newOperator(o.ID, op.Email, t0)))
	})

	// The dashboard filters calls by outcome (store.CallFilter.Outcome).
	t.Run("CallOutcomeFilter", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "A")
		var c []call.Call
		for i, out := range []call.Outcome{call.Completed, call.Busy, call.Completed, ""} {
			cl := mustCall(t, s, newCall(o.ID, call.Phone, at(time.Duration(i)*time.Second)))
			if out != "" {
				ended := at(time.Minute)
				cl.Status, cl.Outcome, cl.EndedReason, cl.EndedAt, cl.UpdatedAt = call.Ended, out, call.ReasonCustomerEnded, ended, ended
				must(t, fmt.Sprintf("UpdateCall(%s, queued → ended %s)", cl.ID, out), s.UpdateCall(ctx, cl, call.Queued))
			}
			c = append(c, cl)
		}
		listCalls(t, s, o.ID, store.CallFilter{Outcome: call.Completed, Page: page(1, 10)}, rev(c[0], c[2]), 2)
		listCalls(t, s, o.ID, store.CallFilter{Outcome: call.Completed, Page: page(2, 1)}, rev(c[0]), 2)
		listCalls(t, s, o.ID, store.CallFilter{Outcome: call.Busy, Type: call.Phone, Page: page(1, 10)}, rev(c[1]), 1)
		listCalls(t, s, o.ID, store.CallFilter{Outcome: call.Voicemail, Page: page(1, 10)}, nil, 0)
	})
}
