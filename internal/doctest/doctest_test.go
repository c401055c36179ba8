package doctest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const doc = "# Title\n\n```sh\necho before\n```\n\n## Walkthrough\n\n" +
	"```sh\n# a comment\nX=1\nj() { echo \"201 {\\\"data\\\": {\\\"id\\\": \\\"asst_$1\\\", \\\"n\\\": [1, 2, 3]}}\"; }\n" +
	"j abc\n# ⇒ 201 {\"data\": {\"id\": \"asst_…\", \"n\": [1, 3]}}\n" +
	"echo '{\n  \"multi\": \"line\"\n}'\n```\n\n" +
	"<!-- doctest: skip starts a second server -->\n```sh\nserve &\n```\n\n```json\n{\"not\": \"shell\"}\n```\n"

// TestBlocksAndSteps: blocks start at the heading, a skip comment marks the
// next block, statements span lines until bash accepts them, and an
// expectation attaches to the statement above it.
func TestBlocksAndSteps(t *testing.T) {
	blocks, err := Blocks([]byte(doc), "## Walkthrough")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].Skip != "" || blocks[1].Skip != "starts a second server" {
		t.Fatalf("Blocks = %+v, want the walkthrough block and a skipped one", blocks)
	}
	steps, err := Steps(context.Background(), blocks[0])
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, s := range steps {
		cmds = append(cmds, s.Command)
	}
	want := []string{"X=1", `j() { echo "201 {\"data\": {\"id\": \"asst_$1\", \"n\": [1, 2, 3]}}"; }`, "j abc", "echo '{\n  \"multi\": \"line\"\n}'"}
	if strings.Join(cmds, "|") != strings.Join(want, "|") {
		t.Fatalf("Steps = %q, want %q", cmds, want)
	}
	if steps[2].Expect == nil || steps[2].Expect.Status != 201 || steps[0].Expect != nil {
		t.Fatalf("expectations = %+v, want one on j abc", steps)
	}
	if steps[2].Line != 13 || steps[2].Expect.Line != 14 {
		t.Errorf("lines = %d, %d; want 13, 14", steps[2].Line, steps[2].Expect.Line)
	}
	if _, err := Blocks([]byte(doc), "## Nowhere"); err == nil {
		t.Error("Blocks from a missing heading: no error")
	}
}

func TestParseExpect(t *testing.T) {
	for _, bad := range []string{"", "within 5 s:", "{not json", `"unterminated`} {
		if _, err := ParseExpect(bad); err == nil {
			t.Errorf("ParseExpect(%q): no error", bad)
		}
	}
	e, err := ParseExpect(`within 30 s: 200 {"data": {"status": 3}}`)
	if err != nil || e.Within != 30*time.Second || e.Status != 200 || !e.HasJSON {
		t.Errorf("ParseExpect = %+v, %v", e, err)
	}
	e, err = ParseExpect(`"verified"`)
	if err != nil || e.Contains != "verified" {
		t.Errorf("ParseExpect text = %+v, %v", e, err)
	}
}

// TestCheck: what an expectation accepts and refuses.
func TestCheck(t *testing.T) {
	out := `201 {"status": true, "data": {"id": "asst_x1", "name": "Receptionist", "tags": ["a", "b", "c"], "n": 3, "ok": false, "none": null}}` + "\n"
	for _, c := range []struct {
		expect string
		ok     bool
	}{
		{`201`, true},
		{`200`, false},
		{`201 {"data": {"id": "asst_…"}}`, true},
		{`201 {"data": {"id": "call_…"}}`, false},
		{`201 {"data": {"name": "Receptionist", "n": 3, "ok": false, "none": null}}`, true},
		{`201 {"data": {"n": 4}}`, false},
		{`201 {"data": {"tags": ["a", "c"]}}`, true},
		{`201 {"data": {"tags": ["c", "a"]}}`, false},
		{`201 {"data": {"missing": 1}}`, false},
		{`"Receptionist"`, true},
		{`"Nobody"`, false},
		{`{"data": "…"}`, false}, // the status comes first: without it the output is not JSON
	} {
		e, err := ParseExpect(c.expect)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Check(out); (err == nil) != c.ok {
			t.Errorf("Check(%s) = %v, want ok %v", c.expect, err, c.ok)
		}
	}
}

// TestShell: state carries between statements, output and status come
// back, stdin is not the test's, and a statement that hangs times out.
func TestShell(t *testing.T) {
	sh, err := NewShell(t.TempDir(), []string{"GREETING=hello"})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	ctx := context.Background()
	if _, _, err := sh.Run(ctx, "f() { echo \"$GREETING $1\"; }; V=7", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	out, code, err := sh.Run(ctx, "f world; echo $V >&2; cat", 10*time.Second)
	if err != nil || code != 0 || out != "hello world\n7\n" {
		t.Fatalf("Run = %q, %d, %v; want hello world, 7", out, code, err)
	}
	if _, code, _ := sh.Run(ctx, "false", 10*time.Second); code != 1 {
		t.Errorf("false: exit %d, want 1", code)
	}
	r := &Runner{Shell: sh, Replace: []string{"PLACEHOLDER", "world"}}
	steps := []Step{{Line: 1, Command: "f PLACEHOLDER", Expect: expect(t, `"hello world"`)}}
	if err := r.Run(ctx, steps); err != nil {
		t.Errorf("Runner with a replacement: %v", err)
	}
	steps = []Step{{Line: 2, Command: "f PLACEHOLDER", Expect: expect(t, `"goodbye"`)}}
	var f *Failure
	if err := r.Run(ctx, steps); !errors.As(err, &f) || f.Step.Line != 2 {
		t.Errorf("Runner with a wrong expectation = %v, want a Failure at line 2", err)
	}
	if _, _, err := sh.Run(ctx, "sleep 30", 200*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("sleep 30 with a 200 ms bound = %v, want ErrTimeout", err)
	}
}

// TestWithin: a statement is run again until it shows its answer.
func TestWithin(t *testing.T) {
	sh, err := NewShell(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	r := &Runner{Shell: sh}
	steps := []Step{{Line: 1, Command: "N=0"}, {Line: 2, Command: "N=$((N+1)); echo n=$N", Expect: expect(t, `within 10 s: "n=3"`)}}
	if err := r.Run(context.Background(), steps); err != nil {
		t.Fatal(err)
	}
}

// TestActions: a comment naming an action is a step of its own, done by
// the Runner's action for its prefix, which may add a replacement the
// next statements use; an action with no entry fails.
func TestActions(t *testing.T) {
	b := Block{Line: 1, Lines: []string{"# In another terminal: start the peer", "echo PEER", "# ⇒ \"127.0.0.1:9\"", "# In the browser: click"}}
	r := &Runner{Actions: map[string]func(ctx context.Context, text string) error{}}
	r.Actions["In another terminal: "] = func(ctx context.Context, text string) error {
		if text != "In another terminal: start the peer" {
			t.Errorf("action text = %q", text)
		}
		r.Replace = append(r.Replace, "PEER", "127.0.0.1:9")
		return nil
	}
	steps, err := Steps(context.Background(), b, r.Prefixes()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].Action == "" || steps[1].Command != "echo PEER" {
		t.Fatalf("Steps = %+v, want the action then the echo (the browser comment is not an action here)", steps)
	}
	sh, err := NewShell(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	r.Shell = sh
	if err := r.Run(context.Background(), steps); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background(), []Step{{Line: 9, Action: "In the browser: click"}}); err == nil {
		t.Error("an action with no entry: no error")
	}
}

func expect(t *testing.T, s string) *Expect {
	t.Helper()
	e, err := ParseExpect(s)
	if err != nil {
		t.Fatal(err)
	}
	return &e
}

// TestAnswers: a json block right under a shell block is its answer; one
// after other text is not.
func TestAnswers(t *testing.T) {
	md := "```sh\ncurl a\n```\n\n```json\n{\"status\": true}\n```\n\n```sh\ncurl b\n```\n\nSome text.\n\n```json\n{}\n```\n"
	blocks, err := Blocks([]byte(md), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].Answer != `{"status": true}` || blocks[0].AnswerLine != 6 || blocks[1].Answer != "" {
		t.Fatalf("Blocks = %+v, want the first block answered on line 6 and the second not", blocks)
	}
}

// TestMatchShape: members and types, not values, except the envelope's
// status and the error code; nulls match anything; free members only
// need to be objects.
func TestMatchShape(t *testing.T) {
	got, err := firstJSON(`{"status": true, "data": {"id": "call_x", "n": 2, "at": null, "tags": ["a"], "metadata": {"plan": "pro"}}, "error": {"code": "conflict"}}`)
	if err != nil {
		t.Fatal(err)
	}
	free := map[string]bool{"metadata": true}
	for _, c := range []struct {
		want string
		ok   bool
	}{
		{`{"status": true, "data": {"id": "call_other", "n": 9, "at": "2026-01-01T00:00:00Z", "tags": ["b", "c"]}}`, true},
		{`{"status": false}`, false},
		{`{"error": {"code": "not_found"}}`, false},
		{`{"data": {"id": 1}}`, false},
		{`{"data": {"missing": 1}}`, false},
		{`{"data": {"metadata": {"tier": "gold"}}}`, true},
		{`{"data": {"tags": [1]}}`, false},
	} {
		var want any
		if err := json.Unmarshal([]byte(c.want), &want); err != nil {
			t.Fatal(err)
		}
		if err := MatchShape(got, want, "$", free); (err == nil) != c.ok {
			t.Errorf("MatchShape(%s) = %v, want ok %v", c.want, err, c.ok)
		}
	}
}
