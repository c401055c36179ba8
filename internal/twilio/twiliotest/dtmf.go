package twiliotest

import "math"

// dtmfDetector hears DTMF keys in played μ-law audio, 20 ms at a time: a
// Goertzel filter at each of the eight standard frequencies (ITU-T Q.23),
// a key when one row and one column tone hold most of the frame's energy
// for two frames in a row, reported once until the tones stop.
type dtmfDetector struct {
	last    byte // key of the previous frame, 0 none
	run     int  // frames in a row with last
	pressed bool // last was reported
}

var (
	rowFreqs = [4]float64{697, 770, 852, 941}
	colFreqs = [4]float64{1209, 1336, 1477, 1633}
)

const keypadKeys = "123A456B789C*0#D"

func goertzel(x []float64, freq float64) float64 {
	k := 2 * math.Cos(2*math.Pi*freq/8000)
	var s1, s2 float64
	for _, v := range x {
		s := v + k*s1 - s2
		s2, s1 = s1, s
	}
	return s1*s1 + s2*s2 - k*s1*s2
}

// mulawToLinear decodes one G.711 μ-law byte.
func mulawToLinear(u byte) float64 {
	u = ^u
	t := (int(u&0x0F) << 3) + 0x84
	t <<= (u & 0x70) >> 4
	if u&0x80 != 0 {
		return float64(0x84 - t)
	}
	return float64(t - 0x84)
}

// frame takes one frame of played audio and reports a key that has just
// been pressed.
func (d *dtmfDetector) frame(ulaw []byte) (byte, bool) {
	key := byte(0)
	if len(ulaw) >= 80 {
		x := make([]float64, len(ulaw))
		var energy float64
		for i, u := range ulaw {
			x[i] = mulawToLinear(u)
			energy += x[i] * x[i]
		}
		best := func(freqs [4]float64) (int, float64) {
			bi, bp := 0, 0.0
			for i, f := range freqs {
				if p := goertzel(x, f); p > bp {
					bi, bp = i, p
				}
			}
			return bi, bp
		}
		r, rp := best(rowFreqs)
		c, cp := best(colFreqs)
		// A pure tone of amplitude A over N samples gives a Goertzel power
		// of about (A·N/2)², and energy N·A²/2: compare in those units.
		n := float64(len(x))
		if energy > 1e6 && (rp+cp)*2/n > 0.6*energy {
			key = keypadKeys[r*4+c]
		}
	}
	if key != 0 && key == d.last {
		d.run++
	} else {
		d.last, d.run, d.pressed = key, 1, false
	}
	if key != 0 && d.run >= 2 && !d.pressed {
		d.pressed = true
		return key, true
	}
	return 0, false
}
