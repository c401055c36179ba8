package siptest

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// RequireEnv is the environment variable that turns a missing SIP peer
// from a skip into a failure. make test sets it to 1, so a machine where
// scripts/ensure-deps.sh could not install the peers fails loudly instead
// of passing with every SIP test skipped.
const RequireEnv = "SWITCHBOARD_REQUIRE_SIP"

// Require stops a test that needs the real SIP peers when they are not
// here: it skips when sipp or baresip is missing (or under -short), or
// fails instead when SWITCHBOARD_REQUIRE_SIP=1. Every test that starts
// SIPp or baresip calls it first; StartSIPp and StartBaresip call it too.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	for _, prog := range []string{"sipp", "baresip"} {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, prog)
		}
	}
	switch {
	case len(missing) > 0:
		unavailable(t, "siptest: %v not installed (./scripts/ensure-deps.sh sip installs SIPp and baresip)", missing)
	case testing.Short() && !required():
		t.Skip("siptest: real SIP peers are skipped under -short")
	}
}

// RequireRawSockets stops a test whose SIPp scenario plays pcap files
// (uac_pcap, uac_dtmf): SIPp sends those packets through a raw socket,
// which needs root or CAP_NET_RAW. Like Require, it skips, or fails when
// SWITCHBOARD_REQUIRE_SIP=1.
func RequireRawSockets(t testing.TB) {
	t.Helper()
	Require(t)
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_UDP)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			unavailable(t, "siptest: SIPp's pcap playback needs root or CAP_NET_RAW: %v", err)
			return
		}
		t.Fatalf("siptest: opening a raw socket: %v", err)
	}
	_ = syscall.Close(fd)
}

// requireEspeak stops a test that needs espeak-ng (SpeechWAV) when it is
// not installed, by the same rule as Require.
func requireEspeak(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("espeak-ng")
	if err != nil {
		unavailable(t, "siptest: espeak-ng is not installed (./scripts/speech-deps.sh installs it)")
	}
	return path
}

func required() bool { return os.Getenv(RequireEnv) == "1" }

// unavailable skips the test, or fails it when the peers are required.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if required() {
		t.Fatalf(format+" and "+RequireEnv+"=1", args...)
	}
	t.Skipf(format, args...)
}
