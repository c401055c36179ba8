package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"switchboard/internal/app"
	"switchboard/internal/sip"
)

// runBoth runs the CLI and returns its stdout and stderr apart.
func runBoth(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// TestHelp: -h, -help and --help of every command, and help itself, print
// the usage on stdout and succeed (exit 0); a bad flag prints it on
// stderr and fails. serve's placeholders are words, not the usage's
// back-quoted example (flag.UnquoteUsage takes the back-quoted word).
func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--help"}, {"serve", "-h"}, {"serve", "-help"}, {"help"}, {"--help"}, {"-h"},
		{"migrate", "-h"}, {"org", "create", "-h"}, {"key", "create", "--help"}, {"key", "list", "-h"},
		{"key", "revoke", "-h"}, {"user", "list", "-h"}, {"webhooks", "listen", "-h"}, {"call", "web", "-h"},
	} {
		out, errOut, err := runBoth(t, args...)
		if err != nil || !strings.Contains(out, "usage: switchboard") || errOut != "" {
			t.Errorf("switchboard %s: err %v, stdout %d bytes (usage: %v), stderr %q; want the usage on stdout, nothing on stderr, success",
				strings.Join(args, " "), err, len(out), strings.Contains(out, "usage: switchboard"), errOut)
		}
	}
	out, _, _ := runBoth(t, "serve", "--help")
	for _, want := range []string{"  -secret-key-file FILE\n", "  -sip-addr address\n", "  -addr string\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q (the flag and its placeholder)", want)
		}
	}
	if strings.Contains(out, "-secret-key-file openssl") {
		t.Errorf("serve --help shows the openssl command as -secret-key-file's placeholder")
	}
	out, errOut, err := runBoth(t, "serve", "--no-such-flag")
	if err == nil || out != "" || !strings.Contains(errOut, "flag provided but not defined") || !strings.Contains(errOut, "usage: switchboard serve") {
		t.Errorf("serve --no-such-flag: err %v, stdout %q, stderr %q; want a failure with the usage on stderr", err, out, errOut)
	}
	if out, _, err := runBoth(t, "help"); err != nil || !strings.Contains(out, "webhooks listen") || !strings.Contains(out, "call web ASSISTANT_ID") {
		t.Errorf("help: %v; want it to list webhooks listen and call web:\n%s", err, out)
	}
}

// TestCLIDatabase: run outside the directory that holds ./data, the
// commands that need existing records refuse the missing database,
// naming its path and saying what to do, and create nothing; org create
// says it creates a new database; every command names its database.
func TestCLIDatabase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("SWITCHBOARD_DB", "")
	want := filepath.Join(dir, "data", "switchboard.db")
	for _, args := range [][]string{
		{"key", "list", "--org", "org_x"},
		{"key", "create", "--org", "org_x", "--scopes", "calls:read"},
		{"key", "create", "--public", "--org", "org_x", "--assistants", "asst_" + strings.Repeat("a", 26), "--origins", "http://localhost:3000"},
		{"key", "revoke", "key_x"},
		{"user", "list", "--org", "org_x"},
		{"user", "delete", "op_x"},
	} {
		_, _, err := runBoth(t, args...)
		if err == nil || !strings.Contains(err.Error(), "no database at sqlite:"+want) || !strings.Contains(err.Error(), "--db") ||
			!strings.Contains(err.Error(), "./data") {
			t.Errorf("switchboard %s with no ./data: err = %v; want a refusal naming %s, ./data and --db", strings.Join(args, " "), err, want)
		}
		if _, err := os.Stat(want); err == nil {
			t.Fatalf("switchboard %s created %s", strings.Join(args, " "), want)
		}
	}
	out, errOut, err := runBoth(t, "org", "create", "--name", "Acme")
	if err != nil || !strings.Contains(errOut, "database sqlite:"+want+" does not exist: creating a new, empty one") {
		t.Fatalf("org create with no ./data: err %v, stderr %q; want it to say it creates %s", err, errOut, want)
	}
	org := lastLine(out)
	_, errOut, err = runBoth(t, "key", "list", "--org", org)
	if err != nil || strings.TrimSpace(errOut) != "switchboard: database sqlite:"+want {
		t.Errorf("key list: err %v, stderr %q; want the database named: sqlite:%s", err, errOut, want)
	}
	pg := "postgres://sb:hunter2@db.example.com:5432/sb"
	if name, missing, err := describeDB(pg); err != nil || missing || strings.Contains(name, "hunter2") || !strings.Contains(name, "db.example.com:5432/sb") {
		t.Errorf("describeDB(%s) = %q, %v, %v; want the URL without its password", pg, name, missing, err)
	}
}

// TestDefaultSIPAddr: without --sip-addr, SIP listens on --addr's host,
// port 5060: loopback for the default --addr (local by default, like
// HTTP), every interface for an --addr that serves every interface.
func TestDefaultSIPAddr(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:8080", "127.0.0.1:5060"},
		{"localhost:8080", "127.0.0.1:5060"},
		{"[::1]:8080", "[::1]:5060"},
		{"0.0.0.0:8080", "0.0.0.0:5060"},
		{":8080", "0.0.0.0:5060"},
		{"10.0.0.11:8080", "10.0.0.11:5060"},
		{"calls.example.com:8080", "0.0.0.0:5060"},
	} {
		if got := defaultSIPAddr(tc.addr); got != tc.want {
			t.Errorf("defaultSIPAddr(--addr %s) = %s; want %s", tc.addr, got, tc.want)
		}
	}
	if got := defaultSIPAddr(app.DefaultConfig().Addr); got != "127.0.0.1:5060" {
		t.Errorf("the default --addr's SIP address = %s; want 127.0.0.1:5060", got)
	}
}

// TestDocsBaresipRTPPorts: the baresip configuration docs/telephony.md
// gives (README step 14) uses RTP ports outside the server's default
// --rtp-ports, so both run on one machine with their defaults.
func TestDocsBaresipRTPPorts(t *testing.T) {
	doc, err := os.ReadFile("../../docs/telephony.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)
	i := strings.Index(sec, "## Trying it with baresip")
	if i < 0 {
		t.Fatal(`docs/telephony.md has no "Trying it with baresip" section`)
	}
	m := regexp.MustCompile(`(?m)^rtp_ports (\d+)-(\d+)$`).FindStringSubmatch(sec[i:])
	if m == nil {
		t.Fatal("the baresip config in docs/telephony.md sets no rtp_ports")
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	if def := sip.DefaultRTPPorts; lo <= def.Max && hi >= def.Min {
		t.Errorf("docs/telephony.md: baresip's rtp_ports %d-%d overlap the server's default --rtp-ports %d-%d", lo, hi, def.Min, def.Max)
	}
}
