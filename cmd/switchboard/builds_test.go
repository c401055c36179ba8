package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"switchboard/internal/nodetest"
)

// builds are the server binaries this test run has built, one per set of
// build tags, each built once, however many tests start it.
var builds struct {
	mu   sync.Mutex
	dir  string
	bins map[string]*serverBuild
}

// serverBuild is one binary being built or built.
type serverBuild struct {
	once sync.Once
	path string
	err  error
}

// serverBin builds the server with tags once per run and returns its
// path. The build is bounded by the package's timeout only, not by a
// test's own deadline: on a loaded machine it may take minutes (a -race
// run of every other package beside it), and a test's deadline is for
// what the test does with the server.
func serverBin(t *testing.T, tags ...string) string {
	t.Helper()
	key := strings.Join(tags, ",")
	builds.mu.Lock()
	if builds.bins == nil {
		builds.bins = map[string]*serverBuild{}
	}
	b, ok := builds.bins[key]
	if !ok {
		b = &serverBuild{}
		builds.bins[key] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		mod, err := nodetest.ModuleDir()
		if err != nil {
			b.err = err
			return
		}
		dir, err := buildDir()
		if err != nil {
			b.err = err
			return
		}
		dir = filepath.Join(dir, "tags-"+strings.ReplaceAll(key, ",", "-"))
		b.path, b.err = nodetest.Build(context.Background(), mod, dir, tags...)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildDir is the run's directory of binaries, made on first use and
// removed by TestMain.
func buildDir() (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		return builds.dir, nil
	}
	dir, err := os.MkdirTemp("", "switchboard-test-bin-")
	if err != nil {
		return "", err
	}
	builds.dir = dir
	return dir, nil
}

// TestMain removes the binaries after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}
