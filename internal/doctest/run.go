package doctest

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Runner runs a document's steps in one Shell and checks what each shows.
type Runner struct {
	Shell *Shell
	// Replace holds old, new pairs applied to every statement before it
	// runs: what a reader types in place of the document's placeholders
	// (the server's address, the key it printed). An action may add to it
	// (a peer it starts listens on a port of its own).
	Replace []string
	// Timeout bounds one run of a statement (default 90 s).
	Timeout time.Duration
	// Logf, when set, receives each statement and its output.
	Logf func(format string, args ...any)
	// Actions do what the reader does outside the shell, by the prefix
	// of the step's Action (the prefixes given to Steps); the action's
	// text after Replace is passed on. An action with no entry fails.
	Actions map[string]func(ctx context.Context, text string) error
}

// Prefixes are the Actions' keys, for Steps.
func (r *Runner) Prefixes() []string {
	var p []string
	for k := range r.Actions {
		p = append(p, k)
	}
	return p
}

// Failure is a step that did not show what the document says.
type Failure struct {
	Step   Step
	Output string
	Err    error
}

func (f *Failure) Error() string {
	at := fmt.Sprintf("line %d", f.Step.Line)
	if f.Step.Action != "" {
		return fmt.Sprintf("%s: the action %q: %v", at, f.Step.Action, f.Err)
	}
	if f.Step.Expect != nil {
		at += fmt.Sprintf(" (expectation at line %d: %s)", f.Step.Expect.Line, f.Step.Expect.Text)
	}
	out := f.Output
	if len(out) > 3000 {
		out = out[:3000] + "…"
	}
	return fmt.Sprintf("%s: %v\nstatement:\n%s\noutput:\n%s", at, f.Err, f.Step.Command, out)
}

// Run runs steps in order and stops at the first that fails: a statement
// that exits non-zero, runs out of time, or does not show its expectation
// (within its "within" time, running it again each second).
func (r *Runner) Run(ctx context.Context, steps []Step) error {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	for _, st := range steps {
		rep := strings.NewReplacer(r.Replace...) // an action may have added to it
		if st.Action != "" {
			if err := r.act(ctx, rep.Replace(st.Action)); err != nil {
				return &Failure{Step: st, Err: err}
			}
			continue
		}
		cmd := rep.Replace(st.Command)
		expect := st.Expect
		if expect != nil { // the placeholders the answer shows are the reader's too
			e, err := ParseExpect(rep.Replace(expect.Text))
			if err != nil {
				return &Failure{Step: st, Err: err}
			}
			e.Line = expect.Line
			expect = &e
		}
		var until time.Time
		if expect != nil && expect.Within > 0 {
			until = time.Now().Add(expect.Within)
		}
		for {
			out, code, err := r.Shell.Run(ctx, cmd, timeout)
			if err != nil {
				return &Failure{Step: st, Output: out, Err: err}
			}
			if code != 0 {
				err = fmt.Errorf("exit status %d", code)
			} else if expect != nil {
				err = expect.Check(out)
			}
			if err == nil {
				if r.Logf != nil {
					r.Logf("line %d: %s\n%s", st.Line, cmd, out)
				}
				break
			}
			if time.Now().After(until) {
				return &Failure{Step: st, Output: out, Err: err}
			}
			select {
			case <-ctx.Done():
				return &Failure{Step: st, Output: out, Err: ctx.Err()}
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// act runs the Action whose prefix starts text.
func (r *Runner) act(ctx context.Context, text string) error {
	for prefix, do := range r.Actions {
		if strings.HasPrefix(text, prefix) {
			if r.Logf != nil {
				r.Logf("action: %s", text)
			}
			return do(ctx, text)
		}
	}
	return fmt.Errorf("no action for %q", text)
}
