package house

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "switchboard"

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
	CgoFiles   []string
}

// listPackages lists the module's packages (with every build tag the
// tree uses, so that cgo files count too).
func listPackages(t *testing.T) []pkg {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	cmd := exec.Command("go", "list", "-tags", "speech_native failpoints", "-json", "./...")
	cmd.Dir = moduleRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// moduleRoot is the directory of go.mod, two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

// domain are the packages that hold the product's values and their rules;
// they import no transport and no database driver (STYLE.md).
var domain = []string{
	"call", "assistant", "phone", "schedule", "auth", "flow", "operator",
	"view", "event", "catalog", "jsontext", "jsonobj", "lifecycle", "secret",
	"audio", "audio/amd", "audio/vad",
}

// transports are what a domain package may not import: the network,
// databases, the vendors' SDKs, and Switchboard's own transports, stores
// and services.
var transports = regexp.MustCompile(`^(net/http|net/rpc|database/sql|github\.com/(jackc|emiago|twilio|coder/websocket|gobwas|pion|pressly)|modernc\.org/sqlite|` +
	module + `/internal/(store|httpapi|gateway|sip|twilio|telephony|ui|widget|app|callctl|callrun|campaign|cluster|webhook|numbers|conversation|voice|speech|llm|vendorapi|recording|analysis))(/|$)`)

// TestLayers fails for an import that runs against the layering: a
// domain package importing a transport, a driver, a vendor's SDK or a
// service; a package other than a command importing internal/app; anything
// importing a command. Go itself refuses import cycles.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	bad := 0
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.ImportPath, module+"/internal/")
		for _, imp := range p.Imports {
			switch {
			case slices.Contains(domain, rel) && transports.MatchString(imp):
				t.Errorf("domain package %s imports %s", p.ImportPath, imp)
			case imp == module+"/internal/app" && !startsServer(p.ImportPath):
				t.Errorf("%s imports internal/app (only a command may: it is the composition root)", p.ImportPath)
			case strings.HasPrefix(imp, module+"/cmd/"):
				t.Errorf("%s imports the command %s", p.ImportPath, imp)
			default:
				continue
			}
			bad++
		}
	}
	t.Logf("%d packages; %d imports against the layering", len(pkgs), bad)
}

// startsServer reports whether path is a command that starts the whole
// server: cmd/switchboard, and the benchmarks that measure it
// (internal/bench/cmd/*).
func startsServer(path string) bool {
	return path == module+"/cmd/switchboard" || strings.HasPrefix(path, module+"/internal/bench/cmd/")
}

// maxLines is where a file is asking to be split by concept
// (docs/CONTRIBUTING.md); a file over it fails unless it is listed in
// tooLong with the reason it is kept whole.
const maxLines = 800

var tooLong = map[string]string{}

// TestFileSizes prints the median length of the module's non-test Go
// files and fails for a file over maxLines. Generated files do not count.
func TestFileSizes(t *testing.T) {
	var sizes []int
	for _, p := range listPackages(t) {
		for _, f := range slices.Concat(p.GoFiles, p.CgoFiles) {
			path := filepath.Join(p.Dir, f)
			n, generated := lines(t, path)
			if generated {
				continue
			}
			sizes = append(sizes, n)
			rel, _ := filepath.Rel(moduleRoot(t), path)
			if _, ok := tooLong[rel]; n > maxLines && !ok {
				t.Errorf("%s has %d lines (over %d): split it by concept", rel, n, maxLines)
			}
		}
	}
	sort.Ints(sizes)
	if len(sizes) == 0 {
		t.Fatal("no Go files found")
	}
	over := 0
	for _, n := range sizes {
		if n > maxLines {
			over++
		}
	}
	t.Logf("%d non-test Go files; median %d lines, longest %d, %d over %d", len(sizes), sizes[len(sizes)/2], sizes[len(sizes)-1], over, maxLines)
}

// lines counts a file's lines and says whether it is generated (the Go
// convention: a line "// Code generated … DO NOT EDIT." before the package clause).
func lines(t *testing.T, path string) (n int, generated bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	code := false
	for sc.Scan() {
		n++
		line := sc.Text()
		if !code && strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(line, " DO NOT EDIT.") {
			generated = true
		}
		if strings.HasPrefix(line, "package ") {
			code = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n, generated
}

// TestArchitectureNamesEveryPackage fails for a package under internal/
// that docs/ARCHITECTURE.md does not name (as `path`, `internal/path`, or
// under a `parent/*` that stands for a folder of them), so that the page
// a newcomer reads first keeps up with the code.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9/_*.]+)`").FindAllStringSubmatch(string(doc), -1) {
		named[strings.TrimPrefix(m[1], "internal/")] = true
	}
	missing := 0
	for _, p := range listPackages(t) {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/internal/")
		if !ok || named[rel] || named[filepath.Dir(rel)+"/*"] {
			continue
		}
		missing++
		t.Errorf("docs/ARCHITECTURE.md does not name package internal/%s", rel)
	}
	t.Logf("%d packages under internal/ not named in docs/ARCHITECTURE.md", missing)
}

// TestDocComments fails for a doc comment on a function, method or type
// that does not begin with the name it documents (Go's convention, after
// an optional article): a comment that sits on the wrong declaration, or
// that was left behind when its function was renamed or moved.
func TestDocComments(t *testing.T) {
	total, wrong := 0, 0
	fset := token.NewFileSet()
	for _, p := range listPackages(t) {
		for _, f := range slices.Concat(p.GoFiles, p.CgoFiles) {
			path := filepath.Join(p.Dir, f)
			if _, generated := lines(t, path); generated {
				continue
			}
			file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			check := func(name string, doc *ast.CommentGroup) {
				if doc == nil {
					return
				}
				total++
				if !startsWithName(doc.Text(), name) {
					wrong++
					first, _, _ := strings.Cut(strings.TrimSpace(doc.Text()), "\n")
					t.Errorf("%s: the doc comment of %s begins %q", fset.Position(doc.Pos()), name, first)
				}
			}
			for _, d := range file.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					check(d.Name.Name, d.Doc)
				case *ast.GenDecl:
					if d.Tok != token.TYPE {
						continue
					}
					for _, spec := range d.Specs {
						ts := spec.(*ast.TypeSpec)
						doc := ts.Doc
						if doc == nil && len(d.Specs) == 1 {
							doc = d.Doc
						}
						check(ts.Name.Name, doc)
					}
				}
			}
		}
	}
	t.Logf("%d doc comments on functions and types; %d begin with another name", total, wrong)
}

// startsWithName reports whether a doc comment's text begins with name,
// after an optional article ("A", "An", "The"), as a word of its own
// (followed by a space, a punctuation mark or the end).
func startsWithName(text, name string) bool {
	text = strings.TrimSpace(text)
	for _, article := range []string{"A ", "An ", "The "} {
		if rest, ok := strings.CutPrefix(text, article); ok && strings.HasPrefix(rest, name) {
			text = rest
			break
		}
	}
	rest, ok := strings.CutPrefix(text, name)
	if !ok {
		return strings.HasPrefix(text, "Deprecated:")
	}
	return rest == "" || strings.ContainsAny(rest[:1], " .,:;'()\n")
}
