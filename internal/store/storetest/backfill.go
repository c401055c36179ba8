package storetest

import (
	"database/sql"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"switchboard/internal/call"
	"switchboard/internal/store"
	"switchboard/internal/store/migrations"
)

// Backfill checks migration 00020's backfill against the rollups the
// store writes as calls end and analyses finish: it stores calls, turns
// and analyses in s (migrated), reads the overview, then calls redo,
// which must migrate s down before 00020 and up again (dropping the
// rollups and backfilling them from the rows), and reads it again. A
// call whose analysis is still pending has its turns counted by neither.
func Backfill(t *testing.T, s store.Store, redo func(t *testing.T)) {
	yes, no := true, false
	day0 := t0.Truncate(24 * time.Hour)
	o := mustOrg(t, s, "Acme")
	a := mustAssistant(t, s, o.ID, "Sales", t0)
	for i, x := range []struct {
		outcome call.Outcome
		talk    time.Duration
		success *bool
		analyse bool
	}{
		{call.Completed, 42*time.Second + 7*time.Millisecond, &yes, true},
		{call.Completed, 3 * time.Second, &no, true},
		{call.Busy, 0, nil, true},
		{call.Completed, 9 * time.Second, &yes, false},
		{call.Completed, 61 * time.Second, &yes, true},
	} {
		c := newCall(o.ID, call.Phone, day0.Add(time.Duration(i)*20*time.Hour))
		c.AssistantID = a.ID
		c = mustCall(t, s, c)
		voice := newTurn(c, 1, call.RoleAssistant, "hi", c.CreatedAt.Add(time.Second))
		b := breakdown(time.Duration(i) * 37 * time.Millisecond)
		voice.Breakdown, voice.Latency = &b, b.Total
		text := newTurn(c, 2, call.RoleAssistant, "ok", c.CreatedAt.Add(2*time.Second))
		text.Latency = time.Duration(i+1) * 1300 * time.Microsecond
		mustTurns(t, s, voice, text)
		c = endCall(t, s, c, x.outcome, "r"+string(x.outcome), x.talk)
		if x.analyse {
			finish(t, s, c, x.success)
		}
	}
	f := store.OverviewFilter{From: day0, To: day0.AddDate(0, 0, 5)}
	live := overview(t, s, o.ID, f)
	if len(live.Days) == 0 || len(live.Latency) == 0 {
		t.Fatalf("Overview before the backfill = %+v; want days and latency", live)
	}
	redo(t)
	equal(t, "Overview after the backfill (want as written live)", overview(t, s, o.ID, f), live)
}

// Remigrate is Backfill's redo for a database whose migrations run
// through goose on db: down to the migration before 00020, then up.
func Remigrate(dialect goose.Dialect, db *sql.DB) func(t *testing.T) {
	return func(t *testing.T) {
		p, err := goose.NewProvider(dialect, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(t.Context(), 19); err != nil {
			t.Fatalf("migrate down to 19: %v", err)
		}
		if _, err := p.Up(t.Context()); err != nil {
			t.Fatalf("migrate up: %v", err)
		}
	}
}
