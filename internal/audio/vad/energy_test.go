package vad

import (
	"errors"
	"math"
	"testing"

	"switchboard/internal/apperr"
	"switchboard/internal/audio"
)

// newEnergy is an Energy detector with the defaults.
func newEnergy(t testing.TB) *Energy {
	t.Helper()
	e, err := NewEnergy(EnergyConfig{})
	if err != nil {
		t.Fatalf("NewEnergy(EnergyConfig{}) error %v", err)
	}
	return e
}

// TestEnergyExact checks the property the Endpointer tests rely on: on the
// synthetic signals Energy's decisions are the labels, frame for frame.
func TestEnergyExact(t *testing.T) {
	tests := map[string]*signal{
		"speech first":              newSignal(1).voiced(60).noise(60),
		"utterances with pauses":    newSignal(2).noise(50).voiced(50).noise(15).voiced(25).noise(100).voiced(10).noise(30),
		"blips":                     newSignal(3).noise(30).blip().noise(19).blip().noise(5).blip().blip().noise(10),
		"after digital silence":     newSignal(4).zeros(20).noise(30).voiced(30).noise(30),
		"speech over a quiet floor": newSignal(5).tone(50, 300, -75, false).voiced(50).tone(50, 300, -75, false),
	}
	for name, s := range tests {
		e := newEnergy(t)
		for i, f := range s.frames() {
			got, err := e.IsSpeech(f)
			if err != nil || got != s.labels[i] {
				t.Errorf("Energy.IsSpeech(%s, frame %d at %.1f dBFS, floor %.1f) = %v, %v; want %v, nil",
					name, i, audio.DBFS(f), e.FloorDBFS(), got, err, s.labels[i])
			}
		}
	}
}

// TestEnergyFloorFollowsNoise: after the background rises, the floor
// catches up within one window, and louder noise stops counting as speech.
func TestEnergyFloorFollowsNoise(t *testing.T) {
	s := newSignal(1).noise(50).tone(250, 1000, -35, false) // 1 s quiet, then 5 s of a loud steady hum
	e := newEnergy(t)
	window := framesFor(DefaultEnergyFloorWindow)
	for i, f := range s.frames() {
		got, err := e.IsSpeech(f)
		if err != nil {
			t.Fatalf("Energy.IsSpeech(frame %d) error %v", i, err)
		}
		if i >= 50+window && got {
			t.Errorf("Energy.IsSpeech(frame %d, %d frames into a −35 dBFS hum) = true, want false once a %d-frame window has passed (floor %.1f)",
				i, i-50, window, e.FloorDBFS())
		}
	}
	if got := e.FloorDBFS(); math.Abs(got+35) > 0.1 {
		t.Errorf("Energy.FloorDBFS() after 5 s of −35 dBFS hum = %.2f, want −35", got)
	}
	e.Reset()
	if got := e.FloorDBFS(); got != DefaultEnergyInitialFloor {
		t.Errorf("Energy.FloorDBFS() after Reset = %v, want %v", got, DefaultEnergyInitialFloor)
	}
}

func TestEnergyConfigValidate(t *testing.T) {
	tests := []struct {
		cfg   EnergyConfig
		field string // "" for valid
	}{
		{EnergyConfig{}, ""},
		{EnergyConfig{ThresholdDB: 6, MinDBFS: -45, FloorWindowMs: 20, InitialFloorDBFS: -70}, ""},
		{EnergyConfig{ThresholdDB: -1}, "thresholdDb"},
		{EnergyConfig{ThresholdDB: 61}, "thresholdDb"},
		{EnergyConfig{ThresholdDB: math.NaN()}, "thresholdDb"},
		{EnergyConfig{MinDBFS: 3}, "minDbfs"},
		{EnergyConfig{MinDBFS: -121}, "minDbfs"},
		{EnergyConfig{FloorWindowMs: 19}, "floorWindowMs"},
		{EnergyConfig{FloorWindowMs: -20}, "floorWindowMs"},
		{EnergyConfig{FloorWindowMs: 30001}, "floorWindowMs"},
		{EnergyConfig{InitialFloorDBFS: 1}, "initialFloorDbfs"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if !fieldErr(err, tt.field) {
			t.Errorf("%+v.Validate() = %v, want %s", tt.cfg, err, wantField(tt.field))
		}
		if _, err := NewEnergy(tt.cfg); (err == nil) != (tt.field == "") {
			t.Errorf("NewEnergy(%+v) error = %v, want %s", tt.cfg, err, wantField(tt.field))
		}
	}
}

// fieldErr reports whether err is nil for field "" and otherwise an
// Invalid error naming field.
func fieldErr(err error, field string) bool {
	if field == "" {
		return err == nil
	}
	var e *apperr.Error
	return errors.As(err, &e) && e.Kind == apperr.Invalid && apperr.Fields(e.Fields).Has(field)
}

func wantField(field string) string {
	if field == "" {
		return "nil"
	}
	return "an Invalid error naming " + field
}

func BenchmarkEnergy(b *testing.B) {
	e := newEnergy(b)
	frames := newSignal(1).noise(50).voiced(50).frames()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := e.IsSpeech(frames[i]); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(frames)
	}
}
