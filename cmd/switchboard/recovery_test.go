package main

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"switchboard/internal/nodetest"
)

// buildFailpoints builds the server with -tags failpoints once per run,
// beside the run's speech tags: it then shares every compiled package but
// app and main with the other tests' build (a fresh CI machine compiles
// the server once, not once per tag set).
func buildFailpoints(t *testing.T) string {
	t.Helper()
	return serverBin(t, append(slices.Clone(buildTags), "failpoints")...)
}

// TestKillRecovery: a node killed with SIGKILL while its dialer holds due
// scheduled attempts (claimed, undialed) loses none of them and doubles
// none. Restarted, the node dials
// every one within 60 s of its restart; with a second node running beside
// it on PostgreSQL, the survivor dials them within 60 s of the kill, with
// no restart, once the dead dialer's hold ends. (Before attempts carried
// their own dial lease, they waited for River's rescuer: an hour.) The figures for larger runs are
// `make bench-recovery`'s, in docs/benchmarks.md.
func TestKillRecovery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and kills real server processes and waits for a dial lease to run out (~30 s)")
	}
	bin := buildFailpoints(t)
	type testCase struct {
		name     string
		db       func(t *testing.T) string
		survivor bool
	}
	cases := []testCase{
		{"sqlite/restart", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "sb.db") }, false},
	}
	if base := os.Getenv("SWITCHBOARD_TEST_POSTGRES"); base != "" {
		pg := func(t *testing.T) string {
			u, drop, err := nodetest.CreatePostgres(t.Context(), base, "sbkill_")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(drop)
			return u
		}
		cases = append(cases, testCase{"postgres/restart", pg, false}, testCase{"postgres/survivor", pg, true})
	}
	// The cases mostly wait for a lease to run out: run them all at once,
	// whatever -parallel allows (t.Run may be called from several goroutines).
	var wg sync.WaitGroup
	for _, tc := range cases {
		wg.Go(func() {
			t.Run(tc.name, func(t *testing.T) {
				r := nodetest.Recovery{Bin: bin, DB: tc.db(t), LogDir: t.TempDir(), Attempts: 20, Survivor: tc.survivor,
					RestartAfter: 2 * time.Second, Wait: 90 * time.Second, Logf: t.Logf}
				t.Cleanup(func() {
					if t.Failed() {
						t.Log(nodetest.Logs(r.LogDir, 3000))
					}
				})
				res, err := nodetest.RunRecovery(t.Context(), r)
				if err != nil {
					t.Fatalf("RunRecovery(%s): %v", tc.name, err)
				}
				if res.Stranded != r.Attempts {
					t.Errorf("RunRecovery(%s): the killed node's dialer held %d attempts; want all %d (the scenario did not strand them)", tc.name, res.Stranded, r.Attempts)
				}
				if res.Lost != 0 || res.Doubled != 0 {
					t.Errorf("RunRecovery(%s): %d attempts lost, %d doubled; want 0 and 0", tc.name, res.Lost, res.Doubled)
				}
				if res.Recovery > 60*time.Second {
					t.Errorf("RunRecovery(%s): last stranded attempt dialed %v after the %s; want within 60 s", tc.name, res.Recovery, map[bool]string{true: "kill", false: "restart"}[tc.survivor])
				}
			})
		})
	}
	wg.Wait()
}
