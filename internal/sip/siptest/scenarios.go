package siptest

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"testing"
)

// The SIPp scenarios a test can name in SIPpConfig.Scenario. The first
// three are built into SIPp (sipp -sd NAME prints them); the rest are
// files in internal/sip/testdata, each verified against a real peer by
// this package's tests, and each documented (what it does, its keys, how
// to run it by hand) in a comment at its top.
const (
	// UAS answers (PCMU), waits for the caller's BYE; with RTPEcho it sends
	// back every RTP packet it receives. Built in.
	UAS = "uas"
	// UAC calls Remote, ACKs the 200, hangs up at once. Built in.
	UAC = "uac"
	// UACPcap calls Remote offering PCMA and telephone-event 101, plays
	// about 7 s of speech and the DTMF digit 1 from pcaps, then hangs up.
	// Built in; needs raw sockets (RequireRawSockets).
	UACPcap = "uac_pcap"

	// UASBusy answers 486 Busy Here.
	UASBusy = "uas_busy"
	// UASNoAnswer rings (180) until CANCEL, then 200 and 487.
	UASNoAnswer = "uas_noanswer"
	// UASAnswer answers, plays the key "audio" (μ-law, see Speech.RTPStream),
	// and waits for the caller's BYE.
	UASAnswer = "uas_answer"
	// UASAnswerBye answers, plays "audio" and hangs up itself after
	// "hold_ms" milliseconds.
	UASAnswerBye = "uas_answer_bye"
	// UASAuth demands digest credentials ("user", "password") with 401,
	// then answers; wrong credentials get 403 and fail the call.
	UASAuth = "uas_auth"
	// UASRefer answers, accepts a REFER with 202 and a NOTIFY carrying
	// "SIP/2.0 200 OK", then takes the BYE.
	UASRefer = "uas_refer"
	// UASSilent answers with SDP and never sends RTP (a media timeout).
	UASSilent = "uas_silent"
	// UACExpect calls Remote and succeeds only if the final response is
	// the key "code" (e.g. 404), which it ACKs.
	UACExpect = "uac_expect"
	// UACDTMF calls Remote, plays "voice_pcap" for "voice_ms", then the
	// RFC 2833 digit of "dtmf_pcap" (DTMFPcap), and hangs up unless the
	// callee does first. Needs raw sockets.
	UACDTMF = "uac_dtmf"
	// UACRefer calls Remote and transfers the call to the key "refer_to"
	// with REFER; the peer of UASRefer in this package's tests.
	UACRefer = "uac_refer"
)

// PcapDir holds the RTP recordings Debian's sip-tester ships: g711a.pcap
// (7.05 s of A-law speech) and dtmf_2833_N.pcap (one RFC 2833 digit,
// payload type 101).
const PcapDir = "/usr/share/sip-tester"

// DTMFPcap returns the pcap of one RFC 2833 key press: digit is 0–9, '*'
// or '#'; the value of uac_dtmf's "dtmf_pcap" key.
func DTMFPcap(digit byte) string {
	name := string(digit)
	switch digit {
	case '*':
		name = "star"
	case '#':
		name = "pound"
	}
	return filepath.Join(PcapDir, "dtmf_2833_"+name+".pcap")
}

// scenario is what StartSIPp knows about a named scenario.
type scenario struct {
	builtin bool // -sn rather than -sf
	uac     bool // places the call: needs Remote
	pcap    bool // plays pcaps: needs raw sockets
	// keys are the scenario's -key variables and their defaults; "" marks
	// a key the test must give. "audio" defaults to silence, looped.
	keys map[string]string
}

var scenarios = map[string]scenario{
	UAS:          {builtin: true},
	UAC:          {builtin: true, uac: true},
	UACPcap:      {builtin: true, uac: true, pcap: true},
	UASBusy:      {},
	UASNoAnswer:  {},
	UASAnswer:    {keys: map[string]string{"audio": ""}},
	UASAnswerBye: {keys: map[string]string{"audio": "", "hold_ms": "3000"}},
	UASAuth:      {keys: map[string]string{"user": "alice", "password": "s3cret"}},
	UASRefer:     {},
	UASSilent:    {},
	UACExpect:    {uac: true, keys: map[string]string{"code": ""}},
	UACDTMF: {uac: true, pcap: true, keys: map[string]string{
		"voice_pcap": filepath.Join(PcapDir, "g711a.pcap"),
		"voice_ms":   "7100",
		"dtmf_pcap":  DTMFPcap('1'),
	}},
	UACRefer: {uac: true, keys: map[string]string{"refer_to": ""}},
}

// Scenarios returns the names StartSIPp accepts, sorted.
func Scenarios() []string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ScenarioFile returns the path of a scenario file of internal/sip/testdata
// (name without .xml), for a test that runs SIPp some other way or reads
// the file. It fails the test when the file is not there.
func ScenarioFile(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(testdataDir(t), name+".xml")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("siptest: scenario %q: %v", name, err)
	}
	return path
}

// testdataDir finds internal/sip/testdata: above the test's working
// directory (a package directory of this module), or else next to this
// source file.
func testdataDir(t testing.TB) string {
	t.Helper()
	const rel = "internal/sip/testdata"
	if dir, err := os.Getwd(); err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				if st, err := os.Stat(filepath.Join(dir, rel)); err == nil && st.IsDir() {
					return filepath.Join(dir, rel)
				}
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		dir := filepath.Join(filepath.Dir(file), "..", "testdata")
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	t.Fatalf("siptest: cannot find %s above the working directory", rel)
	return ""
}

// itoa is strconv.Itoa, shorter at the many call sites building argv.
func itoa(n int) string { return strconv.Itoa(n) }
