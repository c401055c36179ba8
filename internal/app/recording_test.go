package app

import (
	"encoding/binary"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/auth"
	"switchboard/internal/gateway/protocol"
)

// recordedWAV is a downloaded recording: its format and each channel's
// loudness.
type recordedWAV struct {
	channels, rate      int
	seconds             float64
	leftRMS, rightRMS   float64
	contentType, length string
	bytes               int
}

// parseRecording checks a WAV's RIFF header and measures its channels.
func parseRecording(t *testing.T, what string, b []byte) recordedWAV {
	t.Helper()
	if len(b) < 44 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" || string(b[36:40]) != "data" {
		t.Fatalf("%s: not a WAV file (%d bytes)", what, len(b))
	}
	if got := int(binary.LittleEndian.Uint32(b[4:])); got != len(b)-8 {
		t.Fatalf("%s: RIFF size %d, want %d", what, got, len(b)-8)
	}
	data := int(binary.LittleEndian.Uint32(b[40:]))
	if data != len(b)-44 {
		t.Fatalf("%s: data size %d, want %d", what, data, len(b)-44)
	}
	w := recordedWAV{channels: int(binary.LittleEndian.Uint16(b[22:])), rate: int(binary.LittleEndian.Uint32(b[24:])), bytes: len(b)}
	if w.channels != 2 || binary.LittleEndian.Uint16(b[34:]) != 16 {
		t.Fatalf("%s: %d channels of %d bits, want 2 of 16", what, w.channels, binary.LittleEndian.Uint16(b[34:]))
	}
	n := data / 4
	w.seconds = float64(n) / float64(w.rate)
	var l, r float64
	for i := range n {
		lv := float64(int16(binary.LittleEndian.Uint16(b[44+4*i:])))
		rv := float64(int16(binary.LittleEndian.Uint16(b[44+4*i+2:])))
		l += lv * lv
		r += rv * rv
	}
	w.leftRMS, w.rightRMS = math.Sqrt(l/float64(max(n, 1))), math.Sqrt(r/float64(max(n, 1)))
	return w
}

// getRecording downloads a call's recording with key.
func (b *testBundle) getRecording(key, callID string) (int, recordedWAV) {
	b.t.Helper()
	r := b.req("GET", "/v1/calls/"+callID+"/recording", key, nil)
	if r.Status != 200 {
		return r.Status, recordedWAV{}
	}
	w := parseRecording(b.t, "recording of "+callID, []byte(r.Raw))
	w.contentType, w.length = r.Header.Get("Content-Type"), r.Header.Get("Content-Length")
	return r.Status, w
}

// checkRecorded: the ended call has a recordingUrl, and the recording is a
// two-channel WAV about as long as the call, with speech on both sides.
func (b *testBundle) checkRecorded(callID string, c map[string]any) {
	t := b.t
	t.Helper()
	want := strings.TrimRight(b.m.URL(), "/") + "/v1/calls/" + callID + "/recording"
	if c["recordingUrl"] != want {
		t.Fatalf("call %s: recordingUrl = %v, want %s", callID, c["recordingUrl"], want)
	}
	status, w := b.getRecording(b.key, callID)
	if status != 200 {
		t.Fatalf("GET /v1/calls/%s/recording = %d, want 200", callID, status)
	}
	if w.contentType != "audio/wav" || w.length != strconv.Itoa(w.bytes) {
		t.Errorf("recording: Content-Type %q, Content-Length %q; want audio/wav, %d", w.contentType, w.length, w.bytes)
	}
	dur := c["durationSeconds"].(float64)
	t.Logf("call %s: %.1f s; recording %.1f s at %d Hz, RMS caller %.0f, assistant %.0f", callID, dur, w.seconds, w.rate, w.leftRMS, w.rightRMS)
	// Not longer than the call; shorter by the time between the audio's
	// end and the call's recorded end, which a loaded machine stretches to
	// seconds (2.1 s under make test with a CPU hog).
	if w.rate != 16000 || w.seconds > dur+2 || w.seconds < dur-5 || w.seconds < 2 {
		t.Errorf("recording lasts %.2f s at %d Hz; want about the call's %.2f s (at most 5 s less) at 16000 Hz", w.seconds, w.rate, dur)
	}
	if w.leftRMS < 100 || w.rightRMS < 100 {
		t.Errorf("recording RMS: caller (left) %.0f, assistant (right) %.0f; want speech on both sides", w.leftRMS, w.rightRMS)
	}
}

// recordingAssistant is the booking flow with recording set as asked,
// patient with a sandbox persona whose own recognizer a loaded machine
// slows down (it answered the greeting 20 s late under make test with a
// CPU hog).
func (b *testBundle) recordingAssistant(enabled bool) string {
	b.t.Helper()
	id := b.bookingAssistant(b.key)
	b.must(200, "PATCH", "/v1/assistants/"+id, map[string]any{"recording": map[string]any{"enabled": enabled}, "silenceTimeoutSeconds": 90})
	return id
}

// TestRecording: sandbox phone calls spoken over μ-law at 8 kHz. The call
// of an assistant with recording on has a recordingUrl once it has ended,
// and its recording downloads as a two-channel WAV (caller left, assistant
// right) as long as the call, with speech on both channels, kept under the
// data directory (by default the SQLite database's). Another organization
// gets 404 for it. The call of an assistant without recording (on SQLite,
// alongside) has no recordingUrl and its recording is 404. A web voice call
// of the recording assistant (on SQLite) is recorded too.
func TestRecording(t *testing.T) {
	t.Parallel()
	requireLocal(t)
	eachDB(t, func(t *testing.T, dbURL string) {
		cfg := testConfig(dbURL)
		cfg.SandboxVoice = true
		cfg.Sandbox.TalkTime = 2 * time.Minute // a loaded machine slows the persona's answers
		sqlite := strings.HasPrefix(dbURL, "sqlite:")
		dataDir := filepath.Dir(strings.TrimPrefix(dbURL, "sqlite:"))
		if !sqlite {
			dataDir = t.TempDir()
			cfg.DataDir = dataDir
		}
		b := start(t, cfg)
		recorded, plain := b.recordingAssistant(true), b.recordingAssistant(false)
		p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100"}).data()["id"].(string)
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "outboundAssistantId": recorded})
		callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": p, "phoneNumber": "+14155551234"}).Body["callId"].(string)

		if sqlite {
			p2 := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550101"}).data()["id"].(string)
			b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p2, "outboundAssistantId": plain})
			plainID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": p2, "phoneNumber": "+14155551235"}).Body["callId"].(string)
			// The phone calls go on on the server meanwhile.
			b.webRecording(recorded, dataDir)
			defer func() {
				c := b.waitCall(b.key, plainID, 150*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
				if c["outcome"] != "completed" || c["recordingUrl"] != nil {
					t.Errorf("unrecorded call = %v/%v, recordingUrl %v; want completed without a recordingUrl", c["outcome"], c["endedReason"], c["recordingUrl"])
				}
				if status, _ := b.getRecording(b.key, plainID); status != 404 {
					t.Errorf("GET /v1/calls/%s/recording (not recorded) = %d, want 404", plainID, status)
				}
			}()
		}

		c := b.waitCall(b.key, callID, 150*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		if c["outcome"] != "completed" {
			t.Errorf("recorded call = %v/%v, want completed", c["outcome"], c["endedReason"])
		}
		b.checkRecorded(callID, c)
		if _, err := os.Stat(filepath.Join(dataDir, "recordings", b.org, callID+".wav")); err != nil {
			t.Errorf("the recording is not under the data directory: %v", err)
		}
		// The listing shows it too.
		for _, lc := range b.must(200, "GET", "/v1/calls", nil).list() {
			if lc["id"] == callID && lc["recordingUrl"] != c["recordingUrl"] {
				t.Errorf("GET /v1/calls: recordingUrl = %v, want %v", lc["recordingUrl"], c["recordingUrl"])
			}
		}
		other := b.newKey(createOrg(t, b.m.DB(), "Other"), auth.CallsRead)
		if status, _ := b.getRecording(other, callID); status != 404 {
			t.Errorf("GET /v1/calls/%s/recording with another organization's key = %d, want 404", callID, status)
		}
		noScope := b.newKey(b.org, auth.AssistantsRead)
		if r := b.req("GET", "/v1/calls/"+callID+"/recording", noScope, nil); r.Status != http.StatusForbidden {
			t.Errorf("GET /v1/calls/%s/recording without calls:read = %d, want 403", callID, r.Status)
		}
	})
}

// webRecording: a web call in audio mode of a recording assistant: the
// caller answers the first question, then hangs up; the call is recorded.
func (b *testBundle) webRecording(assistantID, dataDir string) {
	t := b.t
	tts := localVoice(t)
	callID, ws := b.dialWebCall(assistantID)
	c := newVoiceClient(t, ws.conn)
	c.send(protocol.SessionUpdate{TextOnly: new(false)})
	c.until(30*time.Second, "the question", isTurnDoneWith("What day would suit you?"))
	c.say <- speak(t, tts, "next tuesday")
	c.until(30*time.Second, "the reply", isTurnDoneWith("")) // whatever was heard
	_ = ws.conn.Close(websocket.StatusNormalClosure, "bye")
	ended := b.waitCall(b.key, callID, 30*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	b.checkRecorded(callID, ended)
	if _, err := os.Stat(filepath.Join(dataDir, "recordings", b.org, callID+".wav")); err != nil {
		t.Errorf("the web call's recording is not under the data directory: %v", err)
	}
}
