package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/doctest"
	"switchboard/internal/nodetest"
	"switchboard/internal/sip/siptest"
	"switchboard/internal/twilio/twiliotest"
)

// The README's phone numbers that the test's peers play: the softphone's
// account (step 8), "your phone" (step 9) and the Twilio number it buys.
const (
	readmeSoftphone    = "+16175550123"
	readmeYourPhone    = "+16175550199"
	readmeTwilioNumber = "+14155550142"
)

// TestREADME runs README.md's walkthrough as a reader would: the server
// as `make run` starts it (SQLite in ./data, the sandbox network, the
// local speech engines when this build has them), then every shell block
// from "## Walkthrough" on, statement by statement in one bash, each
// checked against the answer the README says it shows (the "# ⇒" lines;
// internal/doctest). A step whose answer changes fails here, naming the
// README's line.
//
// What a reader types in place of the README's placeholders is replaced
// (readme.Replace): make run's address 127.0.0.1:8080 by the test
// server's, sbk_… by the key it printed, 127.0.0.1:5060 and 127.0.0.1:5080
// by the ports the test's SIP server and softphone were given (other tests
// run beside this one), +1YOURPHONE by a number the fake Twilio answers.
// What a reader does outside the shell (the "# In another terminal: …"
// comments) is done by the actions below: baresip as docs/telephony.md
// configures it, and the fake Twilio for the Twilio account and "your
// phone" (this machine cannot reach Twilio).
func TestREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server: not in -short")
	}
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s (scripts/ensure-deps.sh test installs it): %v", tool, err)
		}
	}
	siptest.Require(t)
	serverBin(t, buildTags...) // before the deadline: a build on a loaded machine takes minutes
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	mod, err := nodetest.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(mod, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doctest.Blocks(readme, "## Walkthrough")
	if err != nil {
		t.Fatal(err)
	}

	fake := twiliotest.New()
	t.Cleanup(fake.Close)
	sid, token := fake.NewAccount()
	fake.AddAvailable(twiliotest.AvailableNumber{Number: readmeTwilioNumber, Country: "US", Locality: "San Francisco", Region: "CA"})
	fake.SetCallee(readmeYourPhone, twiliotest.Callee{Answer: twiliotest.AnswerHuman})

	work := t.TempDir()
	sipAddr := "127.0.0.1:" + strconv.Itoa(siptest.Port(t))
	node := docServer(ctx, t, mod, work, buildTags, "--sandbox-voice=true", "--sip-addr", sipAddr,
		"--rtp-ports", siptest.Ports(t, 64).String(), "--twilio-api-base-url", fake.URL)
	sh, err := doctest.NewShell(work, []string{"SB_LAST=" + filepath.Join(work, "last.json"),
		"TWILIO_ACCOUNT_SID=" + sid, "TWILIO_AUTH_TOKEN=" + token})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	host := strings.TrimPrefix(node.URL, "http://")
	r := &doctest.Runner{Shell: sh, Logf: t.Logf, Replace: []string{
		"http://127.0.0.1:8080", node.URL, "127.0.0.1:8080", host, "sbk_…", node.Key,
		"127.0.0.1:5060", sipAddr, "+1YOURPHONE", readmeYourPhone}}
	speech := siptest.SpeechWAV(t, "Hello, is this the dentist?")
	terminal := filepath.Join(work, "terminal.log") // the other terminal's screen
	r.Actions = map[string]func(ctx context.Context, text string) error{
		// A command left running in another terminal: the same shell's
		// variables, in the background, its output kept for the action
		// below. The SIP step's softphone: baresip as docs/telephony.md
		// configures it, answering every call to its account, speaking,
		// then staying on the line (the walkthrough ends the call).
		"In another terminal: ": func(ctx context.Context, text string) error {
			cmd := strings.TrimPrefix(text, "In another terminal: ")
			if strings.HasPrefix(cmd, "baresip ") {
				b := siptest.StartBaresip(t, siptest.BaresipConfig{User: readmeSoftphone, Audio: speech.WAV, Tail: 2 * time.Minute, Timeout: 3 * time.Minute})
				r.Replace = append(r.Replace, "127.0.0.1:5080", b.Addr())
				return nil
			}
			_, code, err := sh.Run(ctx, "( "+cmd+" ) >"+terminal+" 2>&1 &", 10*time.Second)
			if err == nil && code != 0 {
				err = fmt.Errorf("exit status %d", code)
			}
			return err
		},
		// What that command printed, by now or within the time given.
		"In the listener's terminal, within ": func(ctx context.Context, text string) error {
			m := regexp.MustCompile(`within (\d+) s: (".*")$`).FindStringSubmatch(text)
			if m == nil {
				return fmt.Errorf("want: within N s: \"text\"")
			}
			var want string
			if err := json.Unmarshal([]byte(m[2]), &want); err != nil {
				return err
			}
			secs, _ := strconv.Atoi(m[1])
			for deadline := time.Now().Add(time.Duration(secs) * time.Second); ; time.Sleep(500 * time.Millisecond) {
				out, _ := os.ReadFile(terminal)
				if strings.Contains(string(out), want) {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the terminal does not show %q within %s s; it shows:\n%s", want, m[1], out)
				}
			}
		},
		// Step 8's inbound call: a softphone that dials at start stands in
		// for typing /dial at the first one's prompt.
		"In baresip's terminal, type: /dial ": func(ctx context.Context, text string) error {
			uri := strings.TrimPrefix(text, "In baresip's terminal, type: /dial ")
			siptest.StartBaresip(t, siptest.BaresipConfig{User: readmeSoftphone, Dial: uri, Audio: speech.WAV, Tail: 5 * time.Second, Timeout: 30 * time.Second})
			return nil
		},
		// Step 9's inbound call from "your phone".
		"From your phone: call ": func(ctx context.Context, text string) error {
			_, err := fake.Dial(ctx, strings.TrimPrefix(text, "From your phone: call "), readmeYourPhone)
			return err
		},
	}
	ran := 0
	for _, b := range blocks {
		if b.Skip != "" {
			t.Logf("README.md:%d (%s): not run: %s", b.Line, b.Heading, b.Skip)
			continue
		}
		steps, err := doctest.Steps(ctx, b, r.Prefixes()...)
		if err != nil {
			t.Fatalf("README.md:%d: %v", b.Line, err)
		}
		if err := r.Run(ctx, steps); err != nil {
			t.Fatalf("README.md (%s): %v", b.Heading, err)
		}
		ran += len(steps)
	}
	if ran < 40 {
		t.Fatalf("ran %d statements of the README; the walkthrough has more: is its heading gone?", ran)
	}
}

// TestREADMEConfigurationTable: every flag `serve --help` lists has a row
// in README.md's Configuration table, so a new flag cannot go
// undocumented.
func TestREADMEConfigurationTable(t *testing.T) {
	help, _, err := runBoth(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]] = true
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(help, -1)
	if len(flags) < 30 {
		t.Fatalf("serve --help lists %d flags; want them all:\n%s", len(flags), help)
	}
	for _, f := range flags {
		if !rows[f[1]] {
			t.Errorf("serve flag --%s has no row in README.md's Configuration table", f[1])
		}
	}
}

// docServer builds the server with tags and starts it in work as `make
// run` does (SQLite in ./data, its first key printed) with args added; its
// log is shown when the test fails.
func docServer(ctx context.Context, t *testing.T, mod, work string, tags []string, args ...string) *nodetest.Node {
	t.Helper()
	// The walkthrough runs bin/switchboard, as a reader of the README
	// does after make run: the run's build of the server, linked here.
	bin := filepath.Join(work, "bin", "switchboard")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(serverBin(t, tags...), bin); err != nil {
		t.Fatal(err)
	}
	node, err := nodetest.Start(ctx, nodetest.Options{Name: "server", Bin: bin, Dir: work, LogDir: work, FirstStart: true,
		DB: "sqlite:./data/switchboard.db", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", nodetest.Logs(work, 8000))
		}
	})
	return node
}
