// Package amdtest builds the labelled set of answers that package amd is
// measured on — people saying "Hello?" and voicemail greetings with and
// without a beep, spoken by espeak-ng and carried as a phone line would
// (8 kHz, G.711 μ-law) — and runs the detector over one, in simulated
// time. The unit tests (a few clips) and `make bench-voicemail` (all of
// them, with the local recognizer) share it.
package amdtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/audio/amd"
	"switchboard/internal/audio/vad"
)

// Rate is the phone line's sample rate, at which clips are made.
const Rate = 8000

// Clip is one labelled answer.
type Clip struct {
	Name    string
	Machine bool   // the label: a voicemail greeting
	Text    string // what is said
	Voice   string // espeak-ng voice
	Speed   int    // espeak-ng words a minute
	Beep    bool   // a 1000 Hz 400 ms beep after the greeting
	Noise   bool   // low-level background noise (−45 dBFS white noise)
}

// The answer's timing on the line.
const (
	// AnswerDelay is the silence between the answer and the first word.
	AnswerDelay = 400 * time.Millisecond
	// BeepGap is the silence between the greeting and the beep.
	BeepGap = 500 * time.Millisecond
	// BeepLength and BeepHz describe the beep (at −12 dBFS).
	BeepLength = 400 * time.Millisecond
	BeepHz     = 1000
	// ClipLength is how long every clip lasts: the greeting and then
	// silence (a person waiting, a machine recording), at least 3 s of it.
	ClipLength = 8 * time.Second
)

// HumanTexts and MachineTexts are what the set's people and machines say.
var (
	HumanTexts = []string{
		"Hello?", "Hi, this is Dana.", "Yeah, hello.", "Hello, who is this?", "Speaking.",
		"Hello, Dana speaking.",
		// A receptionist's long answer: the hard case for rule 3.
		"Good afternoon, Bright Smile Dental, this is Dana speaking, how can I help you?",
	}
	MachineTexts = []string{
		"Hi, you've reached Dana. I can't take your call right now, please leave a message after the tone.",
		"Hello, you have reached the voicemail of John Smith. Please leave your name and number and I will call you back.",
		"The person you are calling is not available. Please record your message at the tone.",
		"Hi, this is Mike. Sorry I missed you. Leave a message and I'll get back to you as soon as I can.",
		"Thanks for calling Acme Dental. Our office is currently closed. Please leave a message.",
		"You've reached Sam, leave a message.",
		"Leave a message.",
	}
	voices = []string{"en-us", "en-gb", "en-gb-scotland", "en-029"}
	speeds = []int{130, 150, 180}
)

// Set returns the full labelled set: every human text in three
// voice/speed pairs, every machine text in two, with and without a beep,
// and a noisy copy of one of each text's clips.
func Set() []Clip {
	var set []Clip
	k := 0
	pick := func() (string, int) {
		k++
		return voices[k%len(voices)], speeds[(k/len(voices)+k)%len(speeds)]
	}
	for i, t := range HumanTexts {
		for j := range 3 {
			v, s := pick()
			set = append(set, Clip{Name: fmt.Sprintf("human%d-%d", i+1, j+1), Text: t, Voice: v, Speed: s})
		}
		v, s := pick()
		set = append(set, Clip{Name: fmt.Sprintf("human%d-noise", i+1), Text: t, Voice: v, Speed: s, Noise: true})
	}
	for i, t := range MachineTexts {
		for j := range 2 {
			v, s := pick()
			for _, beep := range []bool{false, true} {
				name := fmt.Sprintf("machine%d-%d", i+1, j+1)
				if beep {
					name += "-beep"
				}
				set = append(set, Clip{Name: name, Machine: true, Text: t, Voice: v, Speed: s, Beep: beep})
			}
		}
		v, s := pick()
		set = append(set, Clip{Name: fmt.Sprintf("machine%d-noise-beep", i+1), Machine: true, Text: t, Voice: v, Speed: s, Beep: true, Noise: true})
	}
	return set
}

// Audio is a clip as the line carried it.
type Audio struct {
	Clip Clip
	// PCM is 8 kHz after the μ-law round trip.
	PCM []int16
	// Spoken is when the greeting ends (after AnswerDelay).
	Spoken time.Duration
	// BeepStart and BeepEnd are the beep's true bounds (zero without one).
	BeepStart, BeepEnd time.Duration
}

// Synthesize speaks the clip with the espeak-ng program and lays it out
// on the line: AnswerDelay, the words, [BeepGap and the beep], silence to
// ClipLength (noise throughout for Noise), through μ-law.
func Synthesize(ctx context.Context, c Clip) (Audio, error) {
	prog, err := exec.LookPath("espeak-ng")
	if err != nil {
		return Audio{}, fmt.Errorf("amdtest: espeak-ng: %w", err)
	}
	cmd := exec.CommandContext(ctx, prog, "--stdout", "-v", c.Voice, "-s", strconv.Itoa(c.Speed), "--", c.Text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Audio{}, fmt.Errorf("amdtest: espeak-ng %q: %v: %s", c.Text, err, stderr.String())
	}
	raw, rate, err := parseWAV(out)
	if err != nil {
		return Audio{}, fmt.Errorf("amdtest: espeak-ng %q: %w", c.Text, err)
	}
	rs := audio.NewResampler(rate, Rate)
	words := trimSilence(rs.Flush(rs.Process(nil, raw)))

	samples := func(d time.Duration) int { return int(d * Rate / time.Second) }
	pcm := make([]int16, samples(AnswerDelay), samples(ClipLength))
	pcm = append(pcm, words...)
	a := Audio{Clip: c, Spoken: time.Duration(len(pcm)) * time.Second / Rate}
	if c.Beep {
		pcm = append(pcm, make([]int16, samples(BeepGap))...)
		a.BeepStart = time.Duration(len(pcm)) * time.Second / Rate
		amp := 32768 * math.Pow(10, -12.0/20)
		for i := range samples(BeepLength) {
			pcm = append(pcm, int16(amp*math.Sin(2*math.Pi*BeepHz*float64(i)/Rate)))
		}
		a.BeepEnd = time.Duration(len(pcm)) * time.Second / Rate
	}
	tail := max(samples(ClipLength)-len(pcm), samples(3*time.Second))
	pcm = append(pcm, make([]int16, tail)...)
	pcm = pcm[:len(pcm)/(Rate/50)*(Rate/50)] // whole frames
	if c.Noise {
		r := rand.New(rand.NewPCG(uint64(len(c.Name)), uint64(c.Speed)))
		sd := 32768 * math.Pow(10, -45.0/20)
		for i, s := range pcm {
			pcm[i] = clamp(float64(s) + r.NormFloat64()*sd)
		}
	}
	a.PCM = audio.MulawDecode(nil, audio.MulawEncode(nil, pcm))
	return a, nil
}

func clamp(v float64) int16 {
	return int16(max(-32768, min(32767, math.Round(v))))
}

// trimSilence drops espeak-ng's leading and trailing near-silence, so
// AnswerDelay and the clip's timing are exact.
func trimSilence(pcm []int16) []int16 {
	const quiet = 200
	i, j := 0, len(pcm)
	for i < j && abs16(pcm[i]) < quiet {
		i++
	}
	for j > i && abs16(pcm[j-1]) < quiet {
		j--
	}
	return pcm[i:j]
}

func abs16(s int16) int {
	if s < 0 {
		return -int(s)
	}
	return int(s)
}

// parseWAV reads espeak-ng's mono PCM16 WAV (whose data size may be a
// placeholder: the data runs to the end).
func parseWAV(b []byte) ([]int16, int, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, 0, errors.New("not a WAV file")
	}
	rate := 0
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), int(binary.LittleEndian.Uint32(b[p+4:p+8]))
		p += 8
		switch id {
		case "fmt ":
			if p+16 > len(b) {
				return nil, 0, errors.New("short fmt chunk")
			}
			if ch, bits := binary.LittleEndian.Uint16(b[p+2:]), binary.LittleEndian.Uint16(b[p+14:]); ch != 1 || bits != 16 {
				return nil, 0, fmt.Errorf("want mono 16-bit, got %d channels of %d bits", ch, bits)
			}
			rate = int(binary.LittleEndian.Uint32(b[p+4:]))
		case "data":
			if rate == 0 {
				return nil, 0, errors.New("data before fmt")
			}
			data := b[p:]
			if size >= 0 && size < len(data) {
				data = data[:size]
			}
			pcm, err := audio.DecodePCM16(nil, data[:len(data)/2*2])
			return pcm, rate, err
		}
		if size < 0 || p+size > len(b) {
			break
		}
		p += size + size%2
	}
	return nil, 0, errors.New("no data chunk")
}

// Transcribe returns the recognizer's final text for 8 kHz audio (one
// utterance). nil runs without phrases.
type Transcribe func(ctx context.Context, pcm []int16) (string, error)

// Options tune Run.
type Options struct {
	Config amd.Config // SampleRate is set to Rate
	// VADMode is the WebRTC detector's mode (0–3); −1 uses the Energy
	// detector.
	VADMode int
	// Transcribe, when set, is asked for the transcript of the callee's
	// speech so far every PartialEvery of speech (a partial result) and
	// at the first pause longer than the detector's GapMs (the final of
	// the first utterance), and the text is given to the detector at that
	// audio time. Recognition latency is not counted: the local decoder
	// runs 4–5× faster than real time.
	Transcribe   Transcribe
	PartialEvery time.Duration
}

// Outcome is what the detector made of a clip.
type Outcome struct {
	Audio    Audio
	Decision amd.Decision
	// BeepOK: a beep was reported; BeepStart/BeepEnd are its bounds.
	BeepOK             bool
	BeepStart, BeepEnd time.Duration
	// Cue is when a message would start (CueOK false: never within the clip).
	Cue   time.Duration
	CueOK bool
	// Transcripts are the texts given to the detector, in order.
	Transcripts []string
}

// Run feeds a clip to a fresh detector frame by frame, with the VAD's
// decision for each (on the 16 kHz upsampled audio, as the pipeline runs
// it) and the transcripts (Options.Transcribe), until the clip ends.
func Run(ctx context.Context, a Audio, o Options) (Outcome, error) {
	cfg := o.Config
	cfg.SampleRate = Rate
	d, err := amd.New(cfg)
	if err != nil {
		return Outcome{}, err
	}
	var det vad.Detector
	if o.VADMode < 0 {
		det, err = vad.NewEnergy(vad.EnergyConfig{})
	} else {
		det, err = vad.NewWebRTC(o.VADMode)
	}
	if err != nil {
		return Outcome{}, err
	}
	gapMs := cfg.GapMs
	if gapMs == 0 {
		gapMs = amd.DefaultGapMs
	}
	rs := audio.NewResampler(Rate, audio.PipelineRate)
	wide := rs.Flush(rs.Process(nil, a.PCM))
	n8, n16 := Rate/50, audio.FrameSamples
	frames := min(len(a.PCM)/n8, len(wide)/n16)
	out := Outcome{Audio: a}
	speechStart, lastVoiced, nextPartial := -1, -1, 0
	finalDone := false
	partialFrames := int(o.PartialEvery / amd.FrameDuration)
	for i := range frames {
		speech, err := det.IsSpeech(wide[i*n16 : (i+1)*n16])
		if err != nil {
			return out, err
		}
		if _, err := d.Frame(a.PCM[i*n8:(i+1)*n8], speech); err != nil {
			return out, err
		}
		if speech {
			if speechStart < 0 {
				speechStart, nextPartial = i, i+partialFrames
			}
			lastVoiced = i
		}
		if o.Transcribe == nil || d.Decision().Final || speechStart < 0 || finalDone {
			continue
		}
		var text string
		from := max(0, speechStart-10) * n8 // 200 ms of pre-roll
		switch {
		case !speech && (i-lastVoiced)*int(amd.FrameDuration/time.Millisecond) > gapMs:
			finalDone = true
			text, err = o.Transcribe(ctx, a.PCM[from:(i+1)*n8])
		case partialFrames > 0 && i == nextPartial:
			nextPartial += partialFrames
			text, err = o.Transcribe(ctx, a.PCM[from:(i+1)*n8])
		default:
			continue
		}
		if err != nil {
			return out, err
		}
		if strings.TrimSpace(text) != "" {
			out.Transcripts = append(out.Transcripts, text)
			d.Transcript(text)
		}
	}
	out.Decision = d.Decision()
	s, e, ended, ok := d.Beep()
	out.BeepOK, out.BeepStart = ok, s
	if ended {
		out.BeepEnd = e
	}
	out.Cue, _, out.CueOK = d.Cue()
	return out, nil
}
