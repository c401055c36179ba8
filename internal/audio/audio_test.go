package audio

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestFrameSamples(t *testing.T) {
	if FrameSamples != 320 {
		t.Errorf("FrameSamples = %d, want 320", FrameSamples)
	}
}

func TestFormatValidate(t *testing.T) {
	tests := []struct {
		f       Format
		wantErr string // "" for valid
	}{
		{Format{PCM16, 8000}, ""},
		{Format{PCM16, 16000}, ""},
		{Format{PCM16, 24000}, ""},
		{Format{PCM16, 48000}, ""},
		{Format{Mulaw, 8000}, ""},
		{Format{PCM16, 44100}, "sampleRate must be one of 8000, 16000, 24000, 48000 for pcm16, got 44100"},
		{Format{PCM16, 0}, "got 0"},
		{Format{PCM16, -16000}, "got -16000"},
		{Format{Mulaw, 16000}, "sampleRate must be 8000 for mulaw, got 16000"},
		{Format{"", 16000}, "encoding is required"},
		{Format{"opus", 48000}, `encoding must be pcm16 or mulaw, got "opus"`},
		{Format{"PCM16", 16000}, `got "PCM16"`},
	}
	for _, tt := range tests {
		err := tt.f.Validate()
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("Format%+v.Validate() = %v, want nil", tt.f, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidFormat) {
			t.Errorf("Format%+v.Validate() = %v, want an ErrInvalidFormat containing %q", tt.f, err, tt.wantErr)
		}
	}
}

func TestFormatFrameSizes(t *testing.T) {
	tests := []struct {
		f                    Format
		wantSamples, wantLen int
	}{
		{Format{PCM16, 8000}, 160, 320},
		{Format{PCM16, 16000}, 320, 640},
		{Format{PCM16, 24000}, 480, 960},
		{Format{PCM16, 48000}, 960, 1920},
		{Format{Mulaw, 8000}, 160, 160},
		{PipelineFormat, FrameSamples, 2 * FrameSamples},
	}
	for _, tt := range tests {
		if got := tt.f.SamplesPerFrame(); got != tt.wantSamples {
			t.Errorf("Format%+v.SamplesPerFrame() = %d, want %d", tt.f, got, tt.wantSamples)
		}
		if got := tt.f.BytesPerFrame(); got != tt.wantLen {
			t.Errorf("Format%+v.BytesPerFrame() = %d, want %d", tt.f, got, tt.wantLen)
		}
	}
	if got, want := (Format{Mulaw, 8000}).String(), "mulaw/8000"; got != want {
		t.Errorf("Format.String() = %q, want %q", got, want)
	}
}

func TestSilence(t *testing.T) {
	s := Silence(FrameSamples)
	if len(s) != FrameSamples || RMS(s) != 0 {
		t.Errorf("Silence(%d): len %d, RMS %v; want len %d, RMS 0", FrameSamples, len(s), RMS(s), FrameSamples)
	}
}

func TestRMSAndDBFS(t *testing.T) {
	tests := []struct {
		name             string
		pcm              []int16
		wantRMS, wantDBF float64
	}{
		{"empty", nil, 0, math.Inf(-1)},
		{"silence", Silence(320), 0, math.Inf(-1)},
		{"full-scale square", []int16{-32768, -32768, -32768, -32768}, 32768, 0},
		{"half-scale square", []int16{16384, -16384, 16384, -16384}, 16384, -6.0206},
		{"full-scale sine", sine(16000, 1000, 32767, 16000), 32767 / math.Sqrt2, -3.0103},
	}
	for _, tt := range tests {
		if got := RMS(tt.pcm); math.Abs(got-tt.wantRMS) > 0.5 {
			t.Errorf("RMS(%s) = %v, want %v", tt.name, got, tt.wantRMS)
		}
		got := DBFS(tt.pcm)
		if math.IsInf(tt.wantDBF, -1) {
			if !math.IsInf(got, -1) {
				t.Errorf("DBFS(%s) = %v, want -Inf", tt.name, got)
			}
		} else if math.Abs(got-tt.wantDBF) > 0.01 {
			t.Errorf("DBFS(%s) = %v, want %v", tt.name, got, tt.wantDBF)
		}
	}
}
