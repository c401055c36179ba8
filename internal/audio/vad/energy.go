package vad

import (
	"switchboard/internal/apperr"
	"switchboard/internal/audio"
)

// EnergyConfig tunes an Energy detector. Zero fields take the defaults.
type EnergyConfig struct {
	// ThresholdDB is how far above the noise floor a frame must be to count
	// as speech. Default 10.
	ThresholdDB float64
	// MinDBFS is a gate: quieter frames are never speech, whatever the floor
	// (after digital silence the floor is very low). Default −50.
	MinDBFS float64
	// FloorWindowMs is how far back the noise floor looks: the floor is the
	// quietest frame in this window, so it follows a rising background within
	// one window yet does not climb during speech, whose pauses dip to the
	// floor. Sound with no such dip for a whole window (a hum, a held note)
	// becomes the floor. Default 3000, at most 30000.
	FloorWindowMs int
	// InitialFloorDBFS is the floor assumed until a full window has been
	// heard, so a caller who speaks at once is not taken for the background.
	// Default −60.
	InitialFloorDBFS float64
}

// Defaults of EnergyConfig.
const (
	DefaultEnergyThresholdDB  = 10
	DefaultEnergyMinDBFS      = -50
	DefaultEnergyFloorWindow  = 3000
	DefaultEnergyInitialFloor = -60
	maxEnergyFloorWindow      = 30000
)

// silenceDBFS stands for the level of digital silence (−Inf): below any
// real signal, and finite so the floor arithmetic stays sane.
const silenceDBFS = -120.0

func (c EnergyConfig) withDefaults() EnergyConfig {
	if c.ThresholdDB == 0 {
		c.ThresholdDB = DefaultEnergyThresholdDB
	}
	if c.MinDBFS == 0 {
		c.MinDBFS = DefaultEnergyMinDBFS
	}
	if c.FloorWindowMs == 0 {
		c.FloorWindowMs = DefaultEnergyFloorWindow
	}
	if c.InitialFloorDBFS == 0 {
		c.InitialFloorDBFS = DefaultEnergyInitialFloor
	}
	return c
}

// Validate reports every bad field of c (zero fields meaning defaults).
func (c EnergyConfig) Validate() error {
	c = c.withDefaults()
	var f apperr.Fields
	if !(c.ThresholdDB > 0 && c.ThresholdDB <= 60) {
		f.Add("thresholdDb", "must be above 0 and at most 60, got %v", c.ThresholdDB)
	}
	if !(c.MinDBFS >= silenceDBFS && c.MinDBFS < 0) {
		f.Add("minDbfs", "must be from %v to below 0, got %v", silenceDBFS, c.MinDBFS)
	}
	if c.FloorWindowMs < frameMs || c.FloorWindowMs > maxEnergyFloorWindow {
		f.Add("floorWindowMs", "must be from %d to %d, got %d", frameMs, maxEnergyFloorWindow, c.FloorWindowMs)
	}
	if !(c.InitialFloorDBFS >= silenceDBFS && c.InitialFloorDBFS < 0) {
		f.Add("initialFloorDbfs", "must be from %v to below 0, got %v", silenceDBFS, c.InitialFloorDBFS)
	}
	return f.Err()
}

// Energy is a level detector: a frame is speech when it is ThresholdDB above
// the noise floor and above MinDBFS. It knows nothing of spectra, so steady
// loud noise within the window reads as speech; it is the fallback when the
// WebRTC detector is unavailable, and on clean synthetic signals it is exact,
// which makes it the oracle for the Endpointer's tests.
type Energy struct {
	cfg    EnergyConfig
	levels []float64 // ring of recent frame levels, dBFS
	next   int       // slot the next level goes into
	floor  float64   // min(levels)
}

// NewEnergy returns an Energy detector configured by cfg.
func NewEnergy(cfg EnergyConfig) (*Energy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	e := &Energy{cfg: cfg, levels: make([]float64, framesFor(cfg.FloorWindowMs))}
	e.Reset()
	return e, nil
}

// Reset forgets the noise floor, as at the start of a new stream.
func (e *Energy) Reset() {
	for i := range e.levels {
		e.levels[i] = e.cfg.InitialFloorDBFS
	}
	e.next = 0
	e.floor = e.cfg.InitialFloorDBFS
}

// FloorDBFS is the current noise floor estimate.
func (e *Energy) FloorDBFS() float64 { return e.floor }

// IsSpeech classifies frame and updates the noise floor with its level.
func (e *Energy) IsSpeech(frame []int16) (bool, error) {
	if len(frame) != audio.FrameSamples {
		return false, frameSizeError(len(frame))
	}
	level := max(audio.DBFS(frame), silenceDBFS) // −Inf for digital silence
	evicted := e.levels[e.next]
	e.levels[e.next] = level
	e.next = (e.next + 1) % len(e.levels)
	switch {
	case level <= e.floor:
		e.floor = level
	case evicted == e.floor:
		e.floor = minOf(e.levels)
	}
	return level >= e.floor+e.cfg.ThresholdDB && level >= e.cfg.MinDBFS, nil
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}
