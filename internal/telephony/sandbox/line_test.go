package sandbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/telephony"
)

// texts is a Receiver that keeps what the persona says.
type texts chan string

func (texts) Audio([]byte)       {}
func (texts) DTMF(byte)          {}
func (t texts) Text(s string)    { t <- s }
func (texts) Mark(string, int64) {}
func (texts) StartAudio(audio.Format) error {
	return errors.New("the persona's line does not turn audio on")
}

// TestLinesHandOver: with Lines, an answered call's event carries a text
// line (no speech engines); the persona answers each turn it hears, a
// hang-up ends the line with no Ended event, and the busy and voicemail
// scripts keep their events (no line: nobody talks to them).
func TestLinesHandOver(t *testing.T) {
	lines := make(chan telephony.Line, 4)
	var mu sync.Mutex
	var got []telephony.Event
	n := New(Config{RingTime: time.Millisecond, Lines: &Lines{Think: time.Millisecond}}, func(e telephony.Event) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		if e.Line != nil {
			lines <- e.Line
		}
	}, nil)
	defer n.Close()
	if err := n.Place(t.Context(), telephony.PlaceRequest{CallID: "c1", To: "+14155551234"}); err != nil {
		t.Fatal(err)
	}
	var l telephony.Line
	select {
	case l = <-lines:
	case <-time.After(5 * time.Second):
		t.Fatal("no line")
	}
	if l.Format() != (audio.Format{}) {
		t.Fatalf("line without speech engines has format %+v, want text", l.Format())
	}
	rx := make(texts, 4)
	ended := make(chan telephony.End, 1)
	go func() { ended <- l.Receive(context.Background(), rx) }()
	l.TurnDone("turn_1", "Hi! What day would suit you?", false)
	select {
	case s := <-rx:
		if s == "" {
			t.Error("the persona said nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the persona did not answer")
	}
	if err := n.Hangup(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ended:
		if e != (telephony.End{}) {
			t.Errorf("a line hung up by this side ended %+v, want the zero End", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not return after Hangup")
	}
	if err := n.Place(t.Context(), telephony.PlaceRequest{CallID: "c2", To: "+1415555" + SuffixVoicemail}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.CallID+":"+e.Kind.String())
		if e.CallID == "c2" && e.Line != nil {
			t.Error("a voicemail answer carried a line")
		}
	}
	want := "c1:ringing c1:answered c2:ringing c2:answered c2:ended"
	if s := strings.Join(kinds, " "); s != want {
		t.Errorf("events %s, want %s", s, want)
	}
}
