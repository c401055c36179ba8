package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testOnly are the methods of the contract that no code outside the store
// packages calls but tests do, and why each is kept.
var testOnly = map[string]string{
	"QueueEvent": "the tests of internal/ui seed webhook messages with it (a call's update queues them in production)",
	"ListNodes":  "the store suite reads the nodes' leases with it; the cluster reads its own by id (GetNode)",
}

// TestCallers fails for a method of store.Store (or store.Counter) that
// no non-test code outside internal/store calls: a method kept for no one
// (the opposite of storetest's coverage check, which fails for one that
// no test calls). It type-checks the module's packages against their
// compiled export data (go list -export) and counts a call through the
// store's interfaces, through *sqlstore.Store, or through any interface
// *sqlstore.Store implements (a consumer's own, such as cluster.Store).
func TestCallers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module's export data")
	}
	root := moduleRoot(t)
	pkgs := goList(t, root)
	exports := map[string]string{}
	for _, p := range pkgs {
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if f, ok := exports[path]; ok && f != "" {
			return os.Open(f)
		}
		return nil, errors.New("no export data for " + path)
	})
	storePkg, err := imp.Import("switchboard/internal/store")
	if err != nil {
		t.Fatalf("import store: %v", err)
	}
	sqlPkg, err := imp.Import("switchboard/internal/store/sqlstore")
	if err != nil {
		t.Fatalf("import sqlstore: %v", err)
	}
	impl := types.NewPointer(sqlPkg.Scope().Lookup("Store").Type())

	methods := map[string]bool{} // method → called
	for _, name := range []string{"Store", "Counter"} {
		it := storePkg.Scope().Lookup(name).Type().Underlying().(*types.Interface)
		for m := range it.Methods() {
			methods[m.Name()] = false
		}
	}

	for _, p := range pkgs {
		if p.Standard || p.Module == nil || p.Module.Path != "switchboard" || inStore(p.ImportPath) {
			continue
		}
		var files []*ast.File
		for _, name := range slices.Concat(p.GoFiles, p.CgoFiles) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse %s: %v", name, err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		// A package that does not type-check still yields the selections
		// of what did; a method it alone calls is then reported uncalled,
		// with its errors logged above.
		conf := types.Config{Importer: imp, FakeImportC: true, Error: func(error) {}}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Logf("type-check %s: %v", p.ImportPath, err)
		}
		for _, sel := range info.Selections {
			name := sel.Obj().Name()
			if _, ok := methods[name]; !ok || sel.Kind() == types.FieldVal {
				continue
			}
			if pkg := sel.Obj().Pkg(); pkg != nil && inStore(pkg.Path()) {
				methods[name] = true
				continue
			}
			if it, ok := sel.Recv().Underlying().(*types.Interface); ok && types.Implements(impl, it) {
				methods[name] = true
			}
		}
	}

	var none []string
	for name, called := range methods {
		why, kept := testOnly[name]
		switch {
		case !called && !kept:
			none = append(none, name)
		case called && kept:
			t.Errorf("store method %s is listed in testOnly (%q) but has a caller now: take it off the list", name, why)
		}
	}
	slices.Sort(none)
	for _, name := range none {
		t.Errorf("store method %s has no caller outside internal/store: remove it, or list it in testOnly with the reason it stays", name)
	}
	for name := range testOnly {
		if _, ok := methods[name]; !ok {
			t.Errorf("testOnly names %s, which is not a store method", name)
		}
	}
	t.Logf("%d store methods, %d called outside internal/store, %d kept for tests", len(methods), len(methods)-len(none)-len(testOnly), len(testOnly))
}

// inStore reports whether path is one of the store packages.
func inStore(path string) bool {
	return path == "switchboard/internal/store" || strings.HasPrefix(path, "switchboard/internal/store/")
}

// listed is the part of go list's output the test reads.
type listed struct {
	ImportPath, Dir, Export string
	Standard                bool
	GoFiles, CgoFiles       []string
	Module                  *struct{ Path string }
}

// goList lists the module's packages and their dependencies, with export
// data (go list -export builds them).
func goList(t *testing.T, root string) []listed {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-e", "-export", "-deps",
		"-json=ImportPath,Dir,Export,Standard,GoFiles,CgoFiles,Module", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// moduleRoot is the directory of go.mod above the test's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
