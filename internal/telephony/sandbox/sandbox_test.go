package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nyaruka/phonenumbers"

	"switchboard/internal/telephony"
)

// testConfig uses timings distinct from each other and from the defaults,
// so a mixed-up duration shows up as a wrong event time.
var testConfig = Config{RingTime: 2 * time.Second, NoAnswerTimeout: 20 * time.Second, TalkTime: 7 * time.Second}

// ev is an Event reduced to what the tests compare, with At made relative to
// the start of the test's bubble.
type ev struct {
	CallID  string
	Kind    telephony.EventKind
	After   time.Duration
	Outcome string
	Reason  string
}

func (e ev) String() string {
	s := fmt.Sprintf("%s %s@%v", e.CallID, e.Kind, e.After)
	if e.Kind == telephony.Ended {
		s += fmt.Sprintf("(%q, %q)", e.Outcome, e.Reason)
	}
	return s
}

// recorder is a thread-safe EventSink that remembers every event.
type recorder struct {
	start  time.Time
	mu     sync.Mutex
	events []ev
}

// started is a network of cfg started with sink as its call control.
func started(t *testing.T, cfg Config, sink telephony.EventSink) *Network {
	t.Helper()
	n := New(cfg, nil)
	if err := n.Start(t.Context(), telephony.CallControlFuncs{Sink: sink}); err != nil {
		t.Fatal(err)
	}
	return n
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) sink(e telephony.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev{e.CallID, e.Kind, e.At.Sub(r.start), e.Outcome, e.Reason})
}

// all returns every event recorded so far.
func (r *recorder) all() []ev {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// of returns the events of one call, in emission order.
func (r *recorder) of(callID string) []ev {
	var out []ev
	for _, e := range r.all() {
		if e.CallID == callID {
			out = append(out, e)
		}
	}
	return out
}

func ringing(id string, at time.Duration) ev  { return ev{id, telephony.Ringing, at, "", ""} }
func answered(id string, at time.Duration) ev { return ev{id, telephony.Answered, at, "", ""} }
func ended(id string, at time.Duration, outcome, reason string) ev {
	return ev{id, telephony.Ended, at, outcome, reason}
}

// wantEvents fails the test if got differs from want.
func wantEvents(t *testing.T, what string, got, want []ev) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: events\n got  %v\n want %v", what, got, want)
	}
}

// wantLive fails the test if n.Live() differs from want.
func wantLive(t *testing.T, what string, n *Network, want int) {
	t.Helper()
	if got := n.Live(); got != want {
		t.Errorf("%s: Live() = %d, want %d", what, got, want)
	}
}

func place(t *testing.T, n *Network, id, to string) {
	t.Helper()
	req := telephony.PlaceRequest{CallID: id, From: "+14155550100", To: to}
	if err := n.Place(t.Context(), req); err != nil {
		t.Fatalf("Place(%+v) = %v, want nil", req, err)
	}
}

func TestConfigWithDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	if got.RingTime != time.Second || got.NoAnswerTimeout != 30*time.Second || got.TalkTime != 10*time.Minute {
		t.Errorf("Config{}.withDefaults() times = %v/%v/%v, want 1s/30s/10m", got.RingTime, got.NoAnswerTimeout, got.TalkTime)
	}
	if !reflect.DeepEqual(got.Numbers, DefaultNumbers()) {
		t.Errorf("Config{}.withDefaults().Numbers has %d numbers, want DefaultNumbers() (%d)", len(got.Numbers), len(DefaultNumbers()))
	}

	custom := Config{Numbers: []telephony.Number{{Number: "+15555550123"}}, RingTime: 3, NoAnswerTimeout: 4, TalkTime: 5}
	if got := custom.withDefaults(); !reflect.DeepEqual(got, custom) {
		t.Errorf("%+v.withDefaults() = %+v, want it unchanged", custom, got)
	}
}

func TestDefaultNumbers(t *testing.T) {
	nums := DefaultNumbers()
	if len(nums) != 300 {
		t.Fatalf("len(DefaultNumbers()) = %d, want 300", len(nums))
	}
	localities := map[string]string{"212": "New York, NY", "312": "Chicago, IL", "415": "San Francisco, CA"}
	seen := make(map[string]bool)
	for i, n := range nums {
		p, err := phonenumbers.Parse(n.Number, "")
		if err != nil {
			t.Errorf("phonenumbers.Parse(%q, \"\") error = %v, want nil", n.Number, err)
			continue
		}
		if !phonenumbers.IsValidNumber(p) {
			t.Errorf("phonenumbers.IsValidNumber(%q) = false, want true", n.Number)
		}
		if got := phonenumbers.Format(p, phonenumbers.E164); got != n.Number {
			t.Errorf("E.164 format of %q = %q, want it unchanged", n.Number, got)
		}
		if got := phonenumbers.GetRegionCodeForNumber(p); got != "US" {
			t.Errorf("GetRegionCodeForNumber(%q) = %q, want US", n.Number, got)
		}
		area, line := n.Number[2:5], n.Number[5:]
		if want, ok := localities[area]; !ok || n.Locality != want {
			t.Errorf("DefaultNumbers()[%d] = %q with Locality %q, want area 212/312/415 and Locality %q", i, n.Number, n.Locality, want)
		}
		if !strings.HasPrefix(line, "55501") || len(line) != 7 {
			t.Errorf("DefaultNumbers()[%d] = %q, want a 555-01xx line", i, n.Number)
		}
		if n.Provider != "sandbox" || n.Region != "US" || !slices.Equal(n.Capabilities, []string{"voice"}) {
			t.Errorf("DefaultNumbers()[%d] = %+v, want Provider sandbox, Region US, Capabilities [voice]", i, n)
		}
		if seen[n.Number] {
			t.Errorf("DefaultNumbers() lists %q twice", n.Number)
		}
		seen[n.Number] = true
		if i > 0 && nums[i-1].Number >= n.Number {
			t.Errorf("DefaultNumbers() not sorted: [%d] %q >= [%d] %q", i-1, nums[i-1].Number, i, n.Number)
		}
	}
	if first, last := nums[0].Number, nums[len(nums)-1].Number; first != "+12125550100" || last != "+14155550199" {
		t.Errorf("DefaultNumbers() spans %q…%q, want +12125550100…+14155550199", first, last)
	}
}

func TestInventoryPurchaseRelease(t *testing.T) {
	ctx := t.Context()
	n := New(Config{}, nil)
	defer n.Close()

	if got := n.Name(); got != "sandbox" {
		t.Errorf("Name() = %q, want sandbox", got)
	}
	inv, err := n.Inventory(ctx)
	if err != nil || !reflect.DeepEqual(inv, DefaultNumbers()) {
		t.Fatalf("Inventory() = %d numbers, %v; want DefaultNumbers(), nil", len(inv), err)
	}
	// The result is a copy: scribbling on it must not change the inventory.
	inv[0].Number = "+19999999999"
	inv[1].Capabilities[0] = "sms"
	if again, _ := n.Inventory(ctx); !reflect.DeepEqual(again, DefaultNumbers()) {
		t.Errorf("Inventory() after modifying an earlier result = %v…, want DefaultNumbers()", again[:2])
	}

	for _, tc := range []struct {
		number string
		want   error
	}{
		{"+14155550100", nil},
		{"+12125550199", nil},
		{"+13125550150", nil},
		{"+14155550200", telephony.ErrNumberUnavailable},
		{"+19999999999", telephony.ErrNumberUnavailable},
		{"", telephony.ErrNumberUnavailable},
	} {
		if err := n.Purchase(ctx, tc.number); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("Purchase(%q) = %v, want %v", tc.number, err, tc.want)
		}
		// Ownership lives in the database: buying twice is fine here.
		if err := n.Purchase(ctx, tc.number); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("second Purchase(%q) = %v, want %v", tc.number, err, tc.want)
		}
		if err := n.Release(ctx, tc.number); err != nil {
			t.Errorf("Release(%q) = %v, want nil", tc.number, err)
		}
	}
}

func TestCustomNumbers(t *testing.T) {
	ctx := t.Context()
	nums := []telephony.Number{{Number: "+16505550100", Provider: "sandbox", Region: "US", Capabilities: []string{"voice"}}}
	n := New(Config{Numbers: nums}, nil)
	defer n.Close()
	nums[0].Number = "+10000000000" // New must have copied its config.

	inv, err := n.Inventory(ctx)
	if err != nil || len(inv) != 1 || inv[0].Number != "+16505550100" {
		t.Errorf("Inventory() = %v, %v; want [+16505550100], nil", inv, err)
	}
	if err := n.Purchase(ctx, "+16505550100"); err != nil {
		t.Errorf("Purchase(+16505550100) = %v, want nil", err)
	}
	if err := n.Purchase(ctx, "+14155550100"); !errors.Is(err, telephony.ErrNumberUnavailable) {
		t.Errorf("Purchase(+14155550100) with a custom inventory = %v, want ErrNumberUnavailable", err)
	}
}

func TestPlaceScripts(t *testing.T) {
	rt, nat, tt := testConfig.RingTime, testConfig.NoAnswerTimeout, testConfig.TalkTime
	tests := []struct {
		name string
		to   string
		want []ev
	}{
		{"busy", "+14155550001", []ev{ringing("c", 0), ended("c", rt, "busy", "customer-busy")}},
		{"no answer", "+14155550002", []ev{ringing("c", 0), ended("c", nat, "no-answer", "customer-did-not-answer")}},
		{"voicemail", "+14155550003", []ev{ringing("c", 0), answered("c", rt), ended("c", rt, "voicemail", "customer-voicemail")}},
		{"failed", "+14155550004", []ev{ringing("c", 0), ended("c", rt, "failed", "provider-failed")}},
		{"completed", "+14155550100", []ev{ringing("c", 0), answered("c", rt), ended("c", rt+tt, "completed", "customer-ended-call")}},
		{"completed other area", "+12125550000", []ev{ringing("c", 0), answered("c", rt), ended("c", rt+tt, "completed", "customer-ended-call")}},
		{"suffix in the middle only", "+14150001555", []ev{ringing("c", 0), answered("c", rt), ended("c", rt+tt, "completed", "customer-ended-call")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRecorder()
				n := started(t, testConfig, r.sink)
				defer n.Close()

				place(t, n, "c", tc.to)
				synctest.Wait()
				what := fmt.Sprintf("Place(To %s)", tc.to)
				wantLive(t, what+" while in progress", n, 1)
				wantEvents(t, what+" at once", r.all(), tc.want[:1])

				time.Sleep(time.Hour)
				synctest.Wait()
				wantEvents(t, what, r.all(), tc.want)
				wantLive(t, what+" after the call ended", n, 0)
			})
		})
	}
}

func TestPlaceDefaultTimings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		n := started(t, Config{}, r.sink)
		defer n.Close()

		place(t, n, "talk", "+14155550100")
		place(t, n, "noanswer", "+14155550002")
		time.Sleep(time.Hour)
		synctest.Wait()
		wantEvents(t, "Place(To +14155550100) with Config{}", r.of("talk"),
			[]ev{ringing("talk", 0), answered("talk", time.Second), ended("talk", time.Second+10*time.Minute, "completed", "customer-ended-call")})
		wantEvents(t, "Place(To +14155550002) with Config{}", r.of("noanswer"),
			[]ev{ringing("noanswer", 0), ended("noanswer", 30*time.Second, "no-answer", "customer-did-not-answer")})
	})
}

func TestPlaceRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		n := started(t, testConfig, r.sink)
		defer n.Close()

		empty := telephony.PlaceRequest{To: "+14155550100"}
		if err := n.Place(t.Context(), empty); !errors.Is(err, ErrNoCallID) {
			t.Errorf("Place(%+v) = %v, want ErrNoCallID", empty, err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		done := telephony.PlaceRequest{CallID: "done", To: "+14155550100"}
		if err := n.Place(ctx, done); !errors.Is(err, context.Canceled) {
			t.Errorf("Place(canceled ctx, %+v) = %v, want context.Canceled", done, err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		wantEvents(t, "rejected Place calls", r.all(), nil)
		wantLive(t, "rejected Place calls", n, 0)
	})
}

func TestPlaceDuplicateCallID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		n := started(t, testConfig, r.sink)
		defer n.Close()

		place(t, n, "dup", "+14155550100")
		time.Sleep(time.Second)
		again := telephony.PlaceRequest{CallID: "dup", To: "+14155550001"}
		if err := n.Place(t.Context(), again); !errors.Is(err, ErrDuplicateCall) {
			t.Errorf("Place(%+v) while dup is live = %v, want ErrDuplicateCall", again, err)
		}
		wantLive(t, "duplicate Place", n, 1)

		time.Sleep(time.Hour)
		synctest.Wait()
		rt, tt := testConfig.RingTime, testConfig.TalkTime
		first := []ev{ringing("dup", 0), answered("dup", rt), ended("dup", rt+tt, "completed", "customer-ended-call")}
		wantEvents(t, "Place(dup) twice", r.all(), first)

		// Once ended, the id is no longer live and may be placed again.
		place(t, n, "dup", "+14155550001")
		time.Sleep(time.Hour)
		synctest.Wait()
		second := []ev{ringing("dup", time.Hour+time.Second), ended("dup", time.Hour+time.Second+rt, "busy", "customer-busy")}
		wantEvents(t, "Place(dup) after it ended", r.all(), append(first, second...))
	})
}

func TestHangup(t *testing.T) {
	rt := testConfig.RingTime
	tests := []struct {
		name     string
		to       string
		hangupAt time.Duration
		want     []ev
	}{
		{"while ringing", "+14155550100", rt / 2, []ev{ringing("c", 0), ended("c", rt/2, "canceled", "")}},
		{"while ringing no answer", "+14155550002", 10 * time.Second, []ev{ringing("c", 0), ended("c", 10*time.Second, "canceled", "")}},
		{"after answer", "+14155550100", rt + time.Second, []ev{ringing("c", 0), answered("c", rt), ended("c", rt+time.Second, "completed", "")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRecorder()
				n := started(t, testConfig, r.sink)
				defer n.Close()

				place(t, n, "c", tc.to)
				time.Sleep(tc.hangupAt)
				what := fmt.Sprintf("Hangup(c) at %v of a call to %s", tc.hangupAt, tc.to)
				if err := n.Hangup(t.Context(), "c"); err != nil {
					t.Errorf("%s = %v, want nil", what, err)
				}
				wantLive(t, what, n, 0)
				synctest.Wait()
				wantEvents(t, what, r.all(), tc.want)

				// Hanging up again, or an unknown call, is a silent no-op.
				if err := n.Hangup(t.Context(), "c"); err != nil {
					t.Errorf("second Hangup(c) = %v, want nil", err)
				}
				if err := n.Hangup(t.Context(), "unknown"); err != nil {
					t.Errorf("Hangup(unknown) = %v, want nil", err)
				}
				time.Sleep(time.Hour)
				synctest.Wait()
				wantEvents(t, what+", then a second Hangup and an hour", r.all(), tc.want)
			})
		})
	}
}

func TestHangupAfterEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		n := started(t, testConfig, r.sink)
		defer n.Close()

		place(t, n, "c", "+14155550001")
		time.Sleep(time.Hour)
		synctest.Wait()
		before := r.all()
		if err := n.Hangup(t.Context(), "c"); err != nil {
			t.Errorf("Hangup(c) after it ended = %v, want nil", err)
		}
		synctest.Wait()
		wantEvents(t, "Hangup(c) after it ended", r.all(), before)
	})
}

// TestHangupFromSink checks that the sink may hang up a call while handling
// its events, as a call service reacting to Answered might.
func TestHangupFromSink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		var n *Network
		n = started(t, testConfig, func(e telephony.Event) {
			r.sink(e)
			if e.Kind == telephony.Answered {
				n.Hangup(context.Background(), e.CallID)
			}
		})
		defer n.Close()

		place(t, n, "c", "+14155550100")
		time.Sleep(time.Hour)
		synctest.Wait()
		rt := testConfig.RingTime
		wantEvents(t, "Hangup(c) from the sink on Answered", r.all(),
			[]ev{ringing("c", 0), answered("c", rt), ended("c", rt, "completed", "")})
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		n := started(t, testConfig, r.sink)

		place(t, n, "talking", "+14155550100")
		place(t, n, "ringing", "+14155550002")
		place(t, n, "busy", "+14155550001")
		time.Sleep(3 * time.Second)
		wantLive(t, "before Close", n, 2)

		if err := n.Close(); err != nil {
			t.Errorf("Close() = %v, want nil", err)
		}
		// No synctest.Wait: Close itself waits for every call to end.
		wantLive(t, "after Close", n, 0)
		rt := testConfig.RingTime
		wantEvents(t, "Close() with an answered call", r.of("talking"),
			[]ev{ringing("talking", 0), answered("talking", rt), ended("talking", 3*time.Second, "completed", "system-shutdown")})
		wantEvents(t, "Close() with a ringing call", r.of("ringing"),
			[]ev{ringing("ringing", 0), ended("ringing", 3*time.Second, "canceled", "system-shutdown")})
		wantEvents(t, "Close() after a call ended by itself", r.of("busy"),
			[]ev{ringing("busy", 0), ended("busy", rt, "busy", "customer-busy")})

		before := r.all()
		req := telephony.PlaceRequest{CallID: "late", To: "+14155550100"}
		if err := n.Place(t.Context(), req); !errors.Is(err, ErrClosed) {
			t.Errorf("Place(%+v) after Close = %v, want ErrClosed", req, err)
		}
		if err := n.Close(); err != nil {
			t.Errorf("second Close() = %v, want nil", err)
		}
		if err := n.Hangup(t.Context(), "talking"); err != nil {
			t.Errorf("Hangup(talking) after Close = %v, want nil", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		wantEvents(t, "Place, Close and Hangup after Close", r.all(), before)
		wantLive(t, "Place after Close", n, 0)
	})
}

// TestConcurrentCalls races many Place, Hangup and a Close against scripted
// call ends and checks the invariant that matters most to the call service:
// every placed call gets exactly one Ended, always last, and a refused call
// gets no event at all.
func TestConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		n := started(t, testConfig, r.sink)

		const workers, perWorker = 8, 50
		suffixes := []string{"0001", "0002", "0003", "0004", "0100", "0199"}
		var mu sync.Mutex
		placed := make(map[string]bool)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for i := range perWorker {
					id := fmt.Sprintf("w%d-%d", w, i)
					to := "+1415555" + suffixes[rng.IntN(len(suffixes))]
					err := n.Place(context.Background(), telephony.PlaceRequest{CallID: id, To: to})
					if err != nil && !errors.Is(err, ErrClosed) {
						t.Errorf("Place(%s to %s) = %v, want nil or ErrClosed", id, to, err)
					}
					mu.Lock()
					placed[id] = err == nil
					mu.Unlock()
					// Whole seconds so hangups tie with scripted ends.
					time.Sleep(time.Duration(rng.IntN(4)) * time.Second)
					if rng.IntN(2) == 0 {
						n.Hangup(context.Background(), id)
					}
				}
			})
		}
		time.Sleep(60 * time.Second)
		n.Close()
		wg.Wait()
		time.Sleep(time.Hour)
		synctest.Wait()

		byCall := make(map[string][]ev)
		for _, e := range r.all() {
			byCall[e.CallID] = append(byCall[e.CallID], e)
		}
		var ok, refused int
		for id, wasPlaced := range placed {
			evs := byCall[id]
			if !wasPlaced {
				refused++
				if len(evs) != 0 {
					t.Errorf("call %s: Place failed but got events %v, want none", id, evs)
				}
				continue
			}
			ok++
			var ends int
			for _, e := range evs {
				if e.Kind == telephony.Ended {
					ends++
				}
			}
			if ends != 1 || evs[len(evs)-1].Kind != telephony.Ended {
				t.Errorf("call %s: events %v, want exactly one Ended, last", id, evs)
			}
		}
		if ok == 0 || refused == 0 {
			t.Errorf("placed %d and refused %d calls, want some of each (test timing is off)", ok, refused)
		}
		wantLive(t, "after Close", n, 0)
	})
}

func TestParseNumbers(t *testing.T) {
	got, err := ParseNumbers(" +44 20 7183 8750, +14155550100,+14155550100 ")
	if err != nil {
		t.Fatalf("ParseNumbers = %v", err)
	}
	if len(got) != 2 || got[0].Number != "+14155550100" || got[1].Number != "+442071838750" || got[1].Region != "GB" || got[0].Provider != "sandbox" {
		t.Errorf("ParseNumbers = %+v, want two sorted numbers, US and GB", got)
	}
	for _, bad := range []string{"", "+1415", "4155550100", " , "} {
		if _, err := ParseNumbers(bad); err == nil {
			t.Errorf("ParseNumbers(%q) = nil error", bad)
		}
	}
}

func TestPersonaAlex(t *testing.T) {
	p := PersonaFor("+14155551234")
	steps := []struct {
		assistant, say string
		hangup         bool
	}{
		{"Hi! I can book your appointment. What day would suit you?", "Tomorrow, please.", false},
		{"Sorry, I didn't catch that. Could you say it again?", "Tomorrow, please.", false}, // his answer was lost
		{"So Tuesday, December 1, is that right?", "Yes, that's right.", false},
		{"What time works best? What time would you like?", "At 3 pm.", false},
		{"You're booked. Goodbye!", "Thanks, bye!", true},
	}
	for _, s := range steps {
		say, hangup := p.Reply(s.assistant)
		if say != s.say || hangup != s.hangup {
			t.Errorf("alex.Reply(%q) = %q, %v; want %q, %v", s.assistant, say, hangup, s.say, s.hangup)
		}
	}
	if say, _ := PersonaFor("+14155550005").Reply("What day?"); say != "" {
		t.Errorf("silent persona said %q", say)
	}
	imp := PersonaFor("+14155550006")
	imp.Reply("What day?")
	imp.Reply("Is that right?")
	if say, hangup := imp.Reply("And what time?"); !hangup || say == "" {
		t.Errorf("impatient persona third answer = %q, %v; want a goodbye and hang-up", say, hangup)
	}
}

// TestPersonaHear: over audio, Alex answers what he recognizes by the
// script and, when he misheard, states his business, then agrees.
func TestPersonaHear(t *testing.T) {
	a := PersonaFor("+14155551234")
	steps := []struct{ heard, want string }{
		{"i can look at your what what what do you", "I would like to book an appointment for tomorrow."},
		{"so sunday november twenty second is that right", "Yes, that's right."},
		{"sorry i didn't catch that could you say it again", "Yes, that's right."},
		{"the two big league", "Yes, that's right."},
		{"", ""},
	}
	for _, s := range steps {
		if got, hangup := a.Hear(s.heard); got != s.want || hangup {
			t.Errorf("Hear(%q) = %q, %v; want %q", s.heard, got, hangup, s.want)
		}
	}
	if got, hangup := a.Hear("goodbye"); !hangup || got != "Thanks, bye!" {
		t.Errorf("Hear(goodbye) = %q, %v", got, hangup)
	}
	if got, _ := PersonaFor("+14155550005").Hear("what day would suit you"); got != "" {
		t.Errorf("the silent persona said %q", got)
	}
}
