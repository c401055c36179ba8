package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
	"switchboard/internal/store/sqlite"
)

func TestSeedSQLite(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "seed.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	org, other := id.New(id.Org), id.New(id.Org)
	res, err := Seed(ctx, db.Writer, SeedSpec{OrgID: org, Calls: 2345, OtherOrgID: other, OtherCalls: 100, Batch: 100, Now: time.Now(), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 2445 {
		t.Fatalf("rows %d", res.Rows)
	}
	for _, o := range []struct {
		org  string
		want int
	}{{org, 2345}, {other, 100}} {
		var n int
		if err := db.Writer.QueryRowContext(ctx, `SELECT COUNT(*) FROM calls WHERE org_id = ?`, o.org).Scan(&n); err != nil || n != o.want {
			t.Fatalf("COUNT(*) for %s = %d, %v; want %d", o.org, n, err, o.want)
		}
	}
	// call_counts match the rows exactly.
	var mismatched int
	if err := db.Writer.QueryRowContext(ctx, `SELECT COUNT(*) FROM call_counts cc
		WHERE cc.n != (SELECT COUNT(*) FROM calls c WHERE c.org_id = cc.org_id AND c.type = cc.type AND c.status = cc.status)`).Scan(&mismatched); err != nil || mismatched != 0 {
		t.Fatalf("call_counts mismatched rows: %d %v", mismatched, err)
	}
	// The store lists them: totals, order, valid ids, ended calls have outcomes.
	calls, total, err := db.ListCalls(ctx, org, store.CallFilter{Page: store.Page{Page: 3, PageSize: 20}})
	if err != nil || total != 2345 || len(calls) != 20 {
		t.Fatalf("ListCalls: %d calls, total %d, %v", len(calls), total, err)
	}
	for i, c := range calls {
		if !id.Valid(id.Call, c.ID) {
			t.Errorf("invalid id %q", c.ID)
		}
		if i > 0 && !c.CreatedAt.Before(calls[i-1].CreatedAt) {
			t.Errorf("not strictly newest first at %d", i)
		}
		if c.Status == call.Ended && (!call.ValidOutcome(c.Outcome) || c.EndedReason == "" || c.EndedAt.IsZero()) {
			t.Errorf("ended call without outcome/reason/end: %+v", c)
		}
		if c.CreatedAt.After(time.Now()) {
			t.Errorf("call in the future: %v", c.CreatedAt)
		}
	}
	_, phones, err := db.ListCalls(ctx, org, store.CallFilter{Type: call.Phone, Page: store.Page{Page: 1, PageSize: 1}})
	if err != nil || int64(phones) != res.PhoneCalls {
		t.Fatalf("phone total %d, want %d (%v)", phones, res.PhoneCalls, err)
	}
}
