package siptest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each scenario file is run here against a real peer, SIPp or baresip,
// and checked from both sides: SIPp's own verdict on its scenario, and
// what the peer saw.

func TestUACExpectGetsBusy(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASBusy, Timeout: 10 * time.Second})
	caller := StartSIPp(t, SIPpConfig{Scenario: UACExpect, Remote: callee.Addr(),
		Keys: map[string]string{"code": "486"}, Timeout: 10 * time.Second})
	caller.WaitOK()
	callee.WaitOK()
}

// uac_expect must fail when the refusal is not the one it expects, and
// still ACK it (the callee's scenario ends with the ACK).
func TestUACExpectFailsOnOtherCode(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASBusy, Timeout: 10 * time.Second})
	caller := StartSIPp(t, SIPpConfig{Scenario: UACExpect, Remote: callee.Addr(),
		Keys: map[string]string{"code": "404"}, Timeout: 10 * time.Second})
	r := caller.Wait()
	if r.ExitCode != 1 || r.Failed != 1 || r.Successful != 0 {
		t.Errorf("uac_expect code 404 against a 486: %s; want exit 1, 0 successful, 1 failed", r)
	}
	if !strings.Contains(r.Errors, `status:"486" and want:"404"`) {
		t.Errorf("uac_expect errors.log = %q; want it to name both codes", r.Errors)
	}
	callee.WaitOK()
}

// An answer is not a refusal: uac_expect fails, after hanging up the
// call properly (the callee's uas_answer succeeds only with the BYE).
func TestUACExpectFailsWhenAnswered(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASAnswer, Timeout: 10 * time.Second})
	caller := StartSIPp(t, SIPpConfig{Scenario: UACExpect, Remote: callee.Addr(),
		Keys: map[string]string{"code": "404"}, Timeout: 10 * time.Second})
	if r := caller.Wait(); r.ExitCode != 1 || r.Failed != 1 || !strings.Contains(r.Errors, "answered (200), want 404") {
		t.Errorf("uac_expect code 404 against an answer: %s, errors %q; want exit 1, 1 failed, the answer named", r, r.Errors)
	}
	callee.WaitOK()
}

// refuser writes a UAS scenario answering every INVITE with code.
func refuser(t *testing.T, code int, reason string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("uas_%d.xml", code))
	xml := fmt.Sprintf(`<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="uas_%[1]d">
  <recv request="INVITE"/>
  <send retrans="500"><![CDATA[

      SIP/2.0 %[1]d %[2]s
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

  ]]></send>
  <recv request="ACK"/>
</scenario>
`, code, reason)
	if err := os.WriteFile(path, []byte(xml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The refusals the server sends to inbound calls (404 unknown number, 480
// no assistant, 403 source not allowed), and others of the status table.
func TestUACExpectRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code   int
		reason string
	}{
		{403, "Forbidden"}, {404, "Not Found"}, {480, "Temporarily Unavailable"},
		{487, "Request Terminated"}, {503, "Service Unavailable"}, {603, "Decline"},
	} {
		t.Run(fmt.Sprint(c.code), func(t *testing.T) {
			t.Parallel()
			callee := StartSIPp(t, SIPpConfig{File: refuser(t, c.code, c.reason), Timeout: 10 * time.Second})
			caller := StartSIPp(t, SIPpConfig{Scenario: UACExpect, Remote: callee.Addr(), Service: "+16175550100",
				Keys: map[string]string{"code": fmt.Sprint(c.code)}, Timeout: 10 * time.Second})
			r := caller.WaitOK()
			if want := fmt.Sprintf("final response %d, want %d", c.code, c.code); !strings.Contains(r.Log, want) {
				t.Errorf("uac_expect log = %q; want %q", r.Log, want)
			}
			if !strings.Contains(r.Messages, "INVITE sip:+16175550100@"+callee.Addr()) {
				t.Errorf("uac_expect sent no INVITE to +16175550100@%s:\n%s", callee.Addr(), r.Messages)
			}
			callee.WaitOK()
		})
	}
}

func TestUACRefersToUASRefer(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASRefer, Timeout: 10 * time.Second})
	caller := StartSIPp(t, SIPpConfig{Scenario: UACRefer, Remote: callee.Addr(),
		Keys: map[string]string{"refer_to": "sip:+16175550199@127.0.0.1"}, Timeout: 10 * time.Second})
	cr := caller.WaitOK()
	r := callee.WaitOK()
	if !strings.Contains(r.Messages, "Refer-To: <sip:+16175550199@127.0.0.1>") {
		t.Errorf("uas_refer's messages.log has no Refer-To for the destination:\n%s", r.Messages)
	}
	if !strings.Contains(r.Log, "REFER to") || !strings.Contains(cr.Log, "NOTIFY reports SIP/2.0 200") {
		t.Errorf("logs: uas_refer %q, uac_refer %q; want the REFER and the NOTIFY's sipfrag", r.Log, cr.Log)
	}
}

// The scenarios over TCP. (SIPp's built-in uas fails over TCP against a
// SIPp uac: the caller exits and closes the connection before the callee
// reaches its timewait.)
func TestOverTCP(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASBusy, Transport: "tcp", Timeout: 10 * time.Second})
	caller := StartSIPp(t, SIPpConfig{Scenario: UACExpect, Transport: "tcp", Remote: callee.Addr(),
		Keys: map[string]string{"code": "486"}, Timeout: 10 * time.Second})
	r := caller.WaitOK()
	callee.WaitOK()
	if !strings.Contains(r.Messages, "TCP message sent") {
		t.Errorf("uac_expect over TCP sent no TCP message:\n%s", r.Messages)
	}
}

// Exit statuses and counts, as SIPpResult documents them.
func TestSIPpResultWithoutCalls(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASBusy, Timeout: time.Second})
	start := time.Now()
	r := callee.Wait()
	if r.ExitCode != 97 || r.Successful != 0 || r.Failed != 0 || r.Succeeded(1) {
		t.Errorf("SIPp with no caller until its -timeout: %s, Succeeded(1) = %v; want exit 97, 0 successful, 0 failed, false",
			r, r.Succeeded(1))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("SIPp with -timeout 1s ran %v", d)
	}
}

func TestStartSIPpChecksConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]SIPpConfig{
		"unknown scenario": {Scenario: "uas_nope"},
		"missing key":      {Scenario: UACExpect, Remote: "127.0.0.1:5060"},
		"unknown key":      {Scenario: UASBusy, Keys: map[string]string{"code": "1"}},
		"uac no remote":    {Scenario: UACRefer, Keys: map[string]string{"refer_to": "sip:a@b"}},
		"bad transport":    {Scenario: UASBusy, Transport: "sctp"},
	} {
		ft := &fakeT{TB: t}
		ft.run(func() { StartSIPp(ft, cfg) })
		if !ft.failed {
			t.Errorf("StartSIPp(%s: %+v) did not fail the test", name, cfg)
		}
	}
}

func TestLastCount(t *testing.T) {
	t.Parallel()
	screen := `  Successful call        |        0                  |        0
  Failed call            |        0                  |        0
------
  Successful call        |        1                  |        3
  Failed call            |        0                  |        2  `
	if got := lastCount(screen, "Successful call"); got != 3 {
		t.Errorf("lastCount(Successful call) = %d, want 3", got)
	}
	if got := lastCount(screen, "Failed call"); got != 2 {
		t.Errorf("lastCount(Failed call) = %d, want 2", got)
	}
	if got := lastCount("no screen", "Failed call"); got != -1 {
		t.Errorf("lastCount(no screen) = %d, want -1", got)
	}
}
