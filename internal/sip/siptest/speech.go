package siptest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/audio"
)

// PhoneRate is the sample rate of G.711 phone audio, and of every file
// SpeechWAV writes.
const PhoneRate = 8000

// SpeechTail is the silence SpeechWAV puts after the words. A phone line
// never goes quiet at the RTP level, and a turn detector waiting for the
// caller to stop needs to hear that pause; baresip, which hangs up when
// its audio file ends, stays on the line that much longer too.
const SpeechTail = 1500 * time.Millisecond

// Speech is a sentence spoken by espeak-ng in the two forms the peers
// play, both 8 kHz mono and ending in SpeechTail of silence.
type Speech struct {
	Text string
	// WAV is 16-bit PCM (S16LE) WAV: baresip's audio source
	// (BaresipConfig.Audio), or anything that plays a WAV file.
	WAV string
	// Ulaw is the same audio as headerless G.711 μ-law, which SIPp 3.6.1's
	// rtp_stream sends byte for byte (a WAV header would be heard as a
	// click): SIPpConfig.Audio.
	Ulaw string
	// Samples are WAV's samples.
	Samples []int16
	// Spoken is how long the words last, before the silence.
	Spoken time.Duration
}

// Duration returns how long the files last, silence included.
func (s Speech) Duration() time.Duration {
	return time.Duration(len(s.Samples)) * time.Second / PhoneRate
}

// RTPStream returns the value of SIPp's rtp_stream action (the scenarios'
// "audio" key) that plays Ulaw loops times as PCMU; -1 plays it until the
// call ends.
func (s Speech) RTPStream(loops int) string {
	return fmt.Sprintf("%s,%d,0", s.Ulaw, loops)
}

// SpeechWAV speaks text with the espeak-ng program (en-us, 150 words a
// minute, the local voice's defaults) and writes it, resampled to 8 kHz by
// internal/audio's resampler, as a PCM WAV and as μ-law into a fresh
// directory of the test's. It skips or fails like Require when espeak-ng
// is missing.
func SpeechWAV(t testing.TB, text string) Speech {
	t.Helper()
	prog := requireEspeak(t)
	if strings.TrimSpace(text) == "" {
		t.Fatal("siptest.SpeechWAV: empty text")
	}
	ctx, cancel := contextFor(t, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "--stdout", "--stdin", "-v", "en-us", "-s", "150")
	cmd.Stdin = strings.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("siptest.SpeechWAV(%q): espeak-ng: %v: %s", text, err, stderr.String())
	}
	raw, err := decodeWAV(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("siptest.SpeechWAV(%q): espeak-ng output: %v", text, err)
	}
	rs := audio.NewResampler(raw.Rate, PhoneRate)
	pcm := rs.Flush(rs.Process(nil, raw.Samples))
	spoken := time.Duration(len(pcm)) * time.Second / PhoneRate
	pcm = append(pcm, make([]int16, int(SpeechTail*PhoneRate/time.Second))...)

	dir := t.TempDir()
	s := Speech{
		Text:    text,
		WAV:     filepath.Join(dir, "speech8k.wav"),
		Ulaw:    filepath.Join(dir, "speech8k.ulaw"),
		Samples: pcm,
		Spoken:  spoken,
	}
	if err := WriteWAV(s.WAV, WAV{Rate: PhoneRate, Samples: pcm}); err != nil {
		t.Fatalf("siptest.SpeechWAV: %v", err)
	}
	if err := os.WriteFile(s.Ulaw, audio.MulawEncode(nil, pcm), 0o644); err != nil {
		t.Fatalf("siptest.SpeechWAV: %v", err)
	}
	return s
}

// writeSilenceUlaw writes d of μ-law silence (0xFF is +0) to path: the
// audio of a scenario that must send RTP but was given nothing to say.
func writeSilenceUlaw(path string, d time.Duration) error {
	return os.WriteFile(path, bytes.Repeat([]byte{0xFF}, int(d*PhoneRate/time.Second)), 0o644)
}
