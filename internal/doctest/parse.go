// Package doctest runs the shell examples of a Markdown document the way a
// reader would: every ```sh block from a given heading on, statement by
// statement, in one bash whose variables and functions carry from one
// statement to the next, and checks each statement's output against the
// answer the document says it shows.
//
// The document says what a statement shows in a comment line right under
// it (docs/README-TESTS.md, the format):
//
//	j -X POST $SB/v1/assistants -d '{"name": "Receptionist"}'
//	# ⇒ 201 {"data": {"id": "asst_…", "name": "Receptionist"}}
//
// An expectation is an optional "within N s:" (the answer may take that
// long to appear: the statement is run again until it shows it), an
// optional HTTP status (the output's first word), then either a JSON value
// that the rest of the output must contain (Match: objects by subset,
// arrays as an ordered subsequence, "…" in a string matching any text)
// or a quoted string the output must contain. A block preceded by the
// HTML comment <!-- doctest: skip REASON --> is not run.
package doctest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Block is one fenced shell block of a document.
type Block struct {
	// Line is the 1-based line of the block's first content line.
	Line int
	// Lines are the block's lines, without the fences.
	Lines []string
	// Skip, when not empty, is why the document says not to run it.
	Skip string
	// Heading is the last heading above the block (for messages).
	Heading string
	// Answer is the ```json block that follows the block with nothing but
	// blank lines between (an example's answer), and AnswerLine its first
	// line; "" when there is none.
	Answer     string
	AnswerLine int
}

// skipComment marks the next block as not to be run.
var skipComment = regexp.MustCompile(`^<!--\s*doctest:\s*skip\b\s*(.*?)\s*-->\s*$`)

// Blocks returns the ```sh blocks of doc that come after the first heading
// equal to from (all of them when from is ""). Other fences (```json,
// ```console, …) are not shell to run and are left out.
func Blocks(doc []byte, from string) ([]Block, error) {
	var blocks []Block
	started := from == ""
	var cur *Block
	skip, heading := "", ""
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	fence := ""
	var answer *Block        // the shell block a following json block answers
	var answerLines []string // that json block's lines, while inside it
	answerStart := 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if trimmed == fence {
				if cur != nil {
					blocks = append(blocks, *cur)
					answer = &blocks[len(blocks)-1]
					cur = nil
				} else if answerLines != nil {
					answer.Answer, answer.AnswerLine = strings.Join(answerLines, "\n"), answerStart
					answer, answerLines = nil, nil
				}
				fence = ""
				continue
			}
			if cur != nil {
				cur.Lines = append(cur.Lines, line)
			} else if answerLines != nil {
				answerLines = append(answerLines, line)
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			fence = "```"
			info := strings.Fields(strings.TrimPrefix(trimmed, "```"))
			switch {
			case started && len(info) > 0 && (info[0] == "sh" || info[0] == "bash"):
				cur = &Block{Line: n + 1, Skip: skip, Heading: heading}
			case answer != nil && len(info) > 0 && info[0] == "json":
				answerLines, answerStart = []string{}, n+1
			default:
				answer = nil
			}
			skip = ""
			continue
		}
		if trimmed != "" {
			answer = nil // only blank lines may come between an example and its answer
		}
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			if !started && strings.TrimSpace(line) == from {
				started = true
			}
			skip = ""
			continue
		}
		if m := skipComment.FindStringSubmatch(trimmed); m != nil {
			skip = m[1]
			if skip == "" {
				skip = "marked skip"
			}
			continue
		}
		if trimmed != "" {
			skip = ""
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if fence != "" {
		return nil, fmt.Errorf("doctest: a fenced block is not closed")
	}
	if !started {
		return nil, fmt.Errorf("doctest: no heading %q", from)
	}
	return blocks, nil
}

// Step is one statement of a block and what the document says it shows.
type Step struct {
	// Line is the document line of the statement's first line.
	Line int
	// Command is the statement as the document writes it.
	Command string
	// Expect is what it shows; nil when the document does not say.
	Expect *Expect
	// Action, when not empty, is a step the reader does outside this
	// shell, as the document words it ("In another terminal: baresip -f
	// ~/bs"): a comment line starting with one of the prefixes given to
	// Steps. Command is then empty.
	Action string
}

// expectPrefix starts a line saying what the statement above shows.
const expectPrefix = "# ⇒"

// Steps splits a block into its statements: lines are gathered until
// bash (-n, which parses without running) accepts them as complete, so a
// quoted JSON body over several lines is one statement. Lines that are
// only comments are dropped, except the expectation lines, which attach
// to the statement above them, and the comments that start with one of
// actions (after "# "), which are steps of their own (Step.Action).
func Steps(ctx context.Context, b Block, actions ...string) ([]Step, error) {
	var steps []Step
	var acc []string
	start := 0
	for i, line := range b.Lines {
		n := b.Line + i
		trimmed := strings.TrimSpace(line)
		if len(acc) == 0 {
			if strings.HasPrefix(trimmed, expectPrefix) {
				if len(steps) == 0 || steps[len(steps)-1].Expect != nil {
					return nil, fmt.Errorf("line %d: an expectation with no statement above it", n)
				}
				e, err := ParseExpect(strings.TrimSpace(strings.TrimPrefix(trimmed, expectPrefix)))
				if err != nil {
					return nil, fmt.Errorf("line %d: %v", n, err)
				}
				e.Line = n
				steps[len(steps)-1].Expect = &e
				continue
			}
			if text, ok := strings.CutPrefix(trimmed, "# "); ok && hasAnyPrefix(text, actions) {
				steps = append(steps, Step{Line: n, Action: text})
				continue
			}
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			start = n
		}
		acc = append(acc, line)
		text := strings.Join(acc, "\n")
		ok, err := complete(ctx, text)
		if err != nil {
			return nil, err
		}
		if ok {
			steps = append(steps, Step{Line: start, Command: text})
			acc = nil
		}
	}
	if len(acc) > 0 {
		return nil, fmt.Errorf("line %d: the statement never ends (bash -n does not accept it):\n%s", start, strings.Join(acc, "\n"))
	}
	return steps, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// complete reports whether bash parses text as whole statements.
func complete(ctx context.Context, text string) (bool, error) {
	cmd := exec.CommandContext(ctx, "bash", "-n")
	cmd.Stdin = strings.NewReader(text + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return true, nil
	}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return false, nil
	}
	return false, fmt.Errorf("doctest: bash -n: %v", err)
}

// Expect is what a statement's output must show.
type Expect struct {
	// Line is the document line of the expectation.
	Line int
	// Within, when positive, is how long the answer may take to appear.
	Within time.Duration
	// Status, when not 0, is the HTTP status the output starts with.
	Status int
	// JSON, when HasJSON, is the value the output (after the status) must
	// contain (Match).
	JSON    any
	HasJSON bool
	// Contains, when not empty, is text the output must contain.
	Contains string
	// Text is the expectation as written.
	Text string
}

var withinRE = regexp.MustCompile(`^within (\d+) s:\s*`)

// ParseExpect reads an expectation: [within N s:] [STATUS] [JSON | "text"].
func ParseExpect(s string) (Expect, error) {
	e := Expect{Text: s}
	if m := withinRE.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		e.Within = time.Duration(n) * time.Second
		s = s[len(m[0]):]
	}
	if f, rest, _ := strings.Cut(s, " "); len(f) == 3 {
		if n, err := strconv.Atoi(f); err == nil && n >= 100 && n <= 599 {
			e.Status = n
			s = strings.TrimSpace(rest)
		}
	}
	switch {
	case s == "":
	case strings.HasPrefix(s, `"`):
		var text string
		if err := json.Unmarshal([]byte(s), &text); err != nil {
			return e, fmt.Errorf("expectation %q: the text is not one JSON string: %v", e.Text, err)
		}
		e.Contains = text
	default:
		if err := json.Unmarshal([]byte(s), &e.JSON); err != nil {
			return e, fmt.Errorf("expectation %q: not JSON: %v", e.Text, err)
		}
		e.HasJSON = true
	}
	if e.Status == 0 && !e.HasJSON && e.Contains == "" {
		return e, fmt.Errorf("expectation %q says nothing to check", e.Text)
	}
	return e, nil
}
