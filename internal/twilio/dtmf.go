package twilio

import (
	"errors"
	"fmt"
	"math"

	"switchboard/internal/audio"
)

// Media Streams carry no DTMF toward the call, so digits are played in
// band: each key is its two standard tones (ITU-T Q.23: rows 697, 770,
// 852, 941 Hz; columns 1209, 1336, 1477, 1633 Hz) for 100 ms, then 100 ms
// of silence, which the far end's detector (or the network's) hears as a
// key press (Q.24 asks for at least 40 ms of each).

const (
	dtmfToneMs = 100
	dtmfGapMs  = 100
	// dtmfAmplitude is each tone's peak, about -9 dBm0 (μ-law's full
	// scale is 32124): twice it stays well clear of clipping.
	dtmfAmplitude = 9000
)

var dtmfRows = [4]float64{697, 770, 852, 941}
var dtmfCols = [4]float64{1209, 1336, 1477, 1633}

// dtmfKeys lays out the keypad: row by row, column by column.
const dtmfKeys = "123A456B789C*0#D"

func validDigit(d byte) bool {
	for i := 0; i < len(dtmfKeys); i++ {
		if dtmfKeys[i] == d {
			return true
		}
	}
	return false
}

// DTMFFrequencies returns the row and column tones of key d (0-9, *, #,
// A-D), for twiliotest's detector and tests.
func DTMFFrequencies(d byte) (row, col float64, ok bool) {
	if d >= 'a' && d <= 'd' {
		d -= 'a' - 'A'
	}
	for i := 0; i < len(dtmfKeys); i++ {
		if dtmfKeys[i] == d {
			return dtmfRows[i/4], dtmfCols[i%4], true
		}
	}
	return 0, 0, false
}

// checkDigits validates a SendDTMF argument, naming the first bad key.
func checkDigits(digits string) error {
	if digits == "" {
		return errors.New("twilio: no DTMF digits to send")
	}
	if len(digits) > 64 {
		return fmt.Errorf("twilio: %d DTMF digits, at most 64 at once", len(digits))
	}
	for i := 0; i < len(digits); i++ {
		if _, _, ok := DTMFFrequencies(digits[i]); !ok {
			return fmt.Errorf("twilio: DTMF digit %q at %d is not one of 0-9 * # A-D", digits[i], i)
		}
	}
	return nil
}

// dtmfTone is key d's 100 ms tone as μ-law at 8 kHz.
func dtmfTone(d byte) []byte {
	row, col, _ := DTMFFrequencies(d)
	n := 8000 * dtmfToneMs / 1000
	pcm := make([]int16, n)
	for i := range pcm {
		t := float64(i) / 8000
		v := dtmfAmplitude * (math.Sin(2*math.Pi*row*t) + math.Sin(2*math.Pi*col*t))
		pcm[i] = int16(v)
	}
	return audio.MulawEncode(nil, pcm)
}
