// Command benchvoicemail measures voicemail detection (package amd) on the
// labelled set of package amdtest — espeak-ng people ("Hello?", "Hi, this
// is Dana") and voicemail greetings with and without a beep, over a μ-law
// phone line — with the WebRTC VAD and, in a speech_native build, the
// local recognizer (pocketsphinx) for the phrase rule, in simulated time.
// It writes the "## bench-voicemail" section of docs/benchmarks.md.
//
//	CGO_ENABLED=1 go run -tags speech_native ./internal/bench/cmd/benchvoicemail -out docs/benchmarks.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"switchboard/internal/audio/amd"
	"switchboard/internal/audio/amd/amdtest"
	"switchboard/internal/bench"
	"switchboard/internal/speech"
	"switchboard/internal/speech/local"
)

func main() {
	out := flag.String("out", "", "markdown file whose \"## bench-voicemail\" section is written (empty: print it)")
	vadMode := flag.Int("vad", 2, "WebRTC VAD mode (0–3), −1 for the energy detector")
	useSTT := flag.Bool("stt", true, "use the local recognizer for the phrase rule (needs -tags speech_native)")
	partial := flag.Duration("partial-every", time.Second, "a partial transcript every this much audio after the first speech")
	workers := flag.Int("workers", 2, "clips measured at once")
	verbose := flag.Bool("v", false, "print every clip's outcome")
	flag.Parse()
	if err := run(*out, *vadMode, *useSTT, *partial, *workers, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "benchvoicemail:", err)
		os.Exit(1)
	}
}

func run(out string, vadMode int, useSTT bool, partial time.Duration, workers int, verbose bool) error {
	ctx := context.Background()
	start := time.Now()
	load := bench.LoadAvg()
	opts := amdtest.Options{VADMode: vadMode, PartialEvery: partial}
	sttNote := "the local recognizer (pocketsphinx en-us, `-tags speech_native`)"
	if useSTT {
		tr, err := local.NewTranscriber(local.TranscriberOptions{Decoders: workers})
		switch {
		case errors.Is(err, speech.ErrUnavailable):
			fmt.Fprintln(os.Stderr, "benchvoicemail: no local recognizer, measuring without phrases:", err)
			sttNote = "**no recognizer** (this build lacks pocketsphinx: the phrase rule is not measured)"
		case err != nil:
			return err
		default:
			opts.Transcribe = transcriber(tr)
		}
	} else {
		sttNote = "no recognizer (`-stt=false`: the phrase rule is not measured)"
	}

	set := amdtest.Set()
	outcomes := make([]amdtest.Outcome, len(set))
	wholes := make([]string, len(set)) // the whole greeting's transcript
	errs := make([]error, len(set))
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, workers) {
		wg.Go(func() {
			for i := range next {
				a, err := amdtest.Synthesize(ctx, set[i])
				if err != nil {
					errs[i] = err
					continue
				}
				outcomes[i], errs[i] = amdtest.Run(ctx, a, opts)
				if errs[i] == nil && opts.Transcribe != nil {
					from := int((amdtest.AnswerDelay - 200*time.Millisecond) * amdtest.Rate / time.Second)
					to := min(len(a.PCM), int((a.Spoken+300*time.Millisecond)*amdtest.Rate/time.Second))
					wholes[i], errs[i] = opts.Transcribe(ctx, a.PCM[from:to])
				}
			}
		})
	}
	for i := range set {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if verbose {
		for _, o := range outcomes {
			c := o.Audio.Clip
			fmt.Printf("%-22s %-15s %3d %-7v spoken %5v → %-9v %-14v at %5v beep %v %v-%v (true %v-%v) cue %v %v %q\n",
				c.Name, c.Voice, c.Speed, c.Machine, o.Audio.Spoken, o.Decision.Result, o.Decision.Reason, o.Decision.At,
				o.BeepOK, o.BeepStart, o.BeepEnd, o.Audio.BeepStart, o.Audio.BeepEnd, o.CueOK, o.Cue, o.Transcripts)
		}
	}
	section := report(outcomes, wholes, opts.Transcribe != nil, vadMode, sttNote, partial, start, load)
	if out == "" {
		fmt.Print(section)
		return nil
	}
	fmt.Print(section)
	return bench.WriteSection(out, "## bench-voicemail", section)
}

// transcriber makes one-shot transcriptions with tr: a stream per call,
// the audio written at once, Finish, the final result.
func transcriber(tr speech.Transcriber) amdtest.Transcribe {
	return func(ctx context.Context, pcm []int16) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		s, err := tr.Start(ctx, speech.TranscribeOptions{SampleRate: amdtest.Rate, Language: "en-US"})
		if err != nil {
			return "", err
		}
		defer s.Close()
		for i := 0; i < len(pcm); i += 1600 { // 200 ms writes
			if err := s.Write(pcm[i:min(i+1600, len(pcm))]); err != nil {
				return "", err
			}
		}
		if err := s.Finish(); err != nil {
			return "", err
		}
		for r := range s.Results() {
			if r.Final {
				return r.Text, nil
			}
		}
		return "", fmt.Errorf("recognizer ended without a final result: %v", s.Err())
	}
}

func pct(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func report(outs []amdtest.Outcome, wholes []string, stt bool, vadMode int, sttNote string, partial time.Duration, start time.Time, load string) string {
	type row struct{ human, machine, undecided int }
	var hum, mach row
	var tHuman, tMachine, tAll []time.Duration
	reasons := map[string]int{}
	var beeps, beepFound, falseBeeps, cues, cuesAfterBeep int
	var beepErrs []time.Duration
	var misses []string
	for _, o := range outs {
		c, d := o.Audio.Clip, o.Decision
		r := &hum
		if c.Machine {
			r = &mach
		}
		switch d.Result {
		case amd.Human:
			r.human++
		case amd.Machine:
			r.machine++
		default:
			r.undecided++
		}
		if (d.Result == amd.Machine) != c.Machine || d.Result == amd.Undecided {
			misses = append(misses, fmt.Sprintf("%s (%s, %d wpm%s: %q) → %s by %s at %s; heard %q",
				c.Name, c.Voice, c.Speed, map[bool]string{true: ", noise"}[c.Noise], c.Text, d.Result, d.Reason, ms(d.At), o.Transcripts))
		}
		if d.Result != amd.Undecided {
			reasons[d.Result.String()+" by "+d.Reason.String()]++
		}
		tAll = append(tAll, d.At)
		switch {
		case !c.Machine && d.Result == amd.Human:
			tHuman = append(tHuman, d.At)
		case c.Machine && d.Result == amd.Machine:
			tMachine = append(tMachine, d.At)
		}
		if c.Beep {
			beeps++
			if o.BeepOK && o.BeepEnd > 0 {
				beepFound++
				e := o.BeepEnd - o.Audio.BeepEnd
				beepErrs = append(beepErrs, max(e, -e))
			}
			if d.Result == amd.Machine && o.CueOK && o.Cue >= o.Audio.BeepEnd-100*time.Millisecond {
				cuesAfterBeep++
			}
		} else if o.BeepOK {
			falseBeeps++
		}
		if c.Machine && d.Result == amd.Machine && o.CueOK {
			cues++
		}
	}
	nh, nm := hum.human+hum.machine+hum.undecided, mach.human+mach.machine+mach.undecided
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	vadName := fmt.Sprintf("the WebRTC VAD in mode %d", vadMode)
	if vadMode < 0 {
		vadName = "the energy VAD"
	}
	w("## bench-voicemail\n\n")
	w("Voicemail detection on outbound calls (issue 9 §3, package `internal/audio/amd`; the rules and thresholds are in its\n")
	w("package documentation and in docs/telephony.md \"Voicemail\"). The labelled set (`internal/audio/amd/amdtest.Set`):\n")
	w("%d people (%d texts such as \"Hello?\", \"Hi, this is Dana.\", \"Hello, who is this?\", \"Speaking.\",\n", nh, len(amdtest.HumanTexts))
	w("and the hard case, a receptionist's 4 s \"Good afternoon, Bright Smile Dental, this is Dana speaking, how can I help you?\") and %d voicemail\n", nm)
	w("greetings (%d texts from \"Leave a message.\" to 7 s greetings, half of them followed by a 1000 Hz 400 ms beep %s after the\n",
		len(amdtest.MachineTexts), ms(amdtest.BeepGap))
	w("words), spoken by espeak-ng in 4 voices (en-us, en-gb, en-gb-scotland, en-029) at 130–180 words a minute, %s after the\n", ms(amdtest.AnswerDelay))
	w("answer, then silence (the person waits, the machine records), one clip of each text also over white noise at −45 dBFS;\n")
	w("carried at 8 kHz through G.711 μ-law as a phone line does. Each clip runs through a fresh detector in simulated time\n")
	w("(frames as fast as they come) with %s on the 16 kHz upsampled audio and %s: a\n", vadName, sttNote)
	w("partial transcript of the speech so far every %s of audio after the first speech and the final one at the first pause,\n", ms(partial))
	w("given to the detector at that audio time (recognition latency not counted; the decoder runs 4–5× faster than real time).\n\n")
	w("- **Date:** %s\n", start.UTC().Format("2006-01-02 15:04 UTC"))
	w("- **Machine:** %d CPUs (%s), GOMAXPROCS %d, %s %s/%s; 1-minute load average %s at the start\n",
		runtime.NumCPU(), bench.CPUModel(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, load)
	w("- **Command:** `make bench-voicemail` (`CGO_ENABLED=1 go run -tags speech_native ./internal/bench/cmd/benchvoicemail -out docs/benchmarks.md`), %s\n\n",
		time.Since(start).Round(time.Second))
	w("| answered by ↓ / decided → | human | machine | undecided |\n|---|---:|---:|---:|\n")
	w("| person (%d) | **%d** | %d | %d |\n", nh, hum.human, hum.machine, hum.undecided)
	w("| voicemail (%d) | %d | **%d** | %d |\n\n", nm, mach.human, mach.machine, mach.undecided)
	w("- **Accuracy:** %d of %d (%.1f%%); undecided counts as wrong.\n", hum.human+mach.machine, nh+nm, 100*float64(hum.human+mach.machine)/float64(nh+nm))
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var rs []string
	for _, k := range keys {
		rs = append(rs, fmt.Sprintf("%s %d", k, reasons[k]))
	}
	w("- **Deciding rule:** %s.\n", strings.Join(rs, ", "))
	w("- **Time to decision** (from the answer): people p50 %s, p95 %s; voicemail p50 %s, p95 %s; all p50 %s, p95 %s.\n",
		ms(pct(tHuman, .5)), ms(pct(tHuman, .95)), ms(pct(tMachine, .5)), ms(pct(tMachine, .95)), ms(pct(tAll, .5)), ms(pct(tAll, .95)))
	w("- **Beep:** found in %d of %d clips with one, end off by p50 %s, max %s (20 ms frames); false beeps in %d of %d clips without one.\n",
		beepFound, beeps, ms(pct(beepErrs, .5)), ms(pct(beepErrs, 1)), falseBeeps, len(outs)-beeps)
	w("- **leaveMessage cue:** given on %d of %d voicemails decided; on %d of %d with a beep it came at the beep's end or later (a message not clipped by the beep).\n",
		cues, mach.machine, cuesAfterBeep, beeps)
	if stt {
		var hit, falseHit, n int
		var heard []string
		for i, o := range outs {
			p := amd.MatchPhrase(wholes[i])
			switch {
			case o.Audio.Clip.Machine:
				n++
				if p != "" {
					hit++
				}
				if len(heard) < 3 && !o.Audio.Clip.Beep && !o.Audio.Clip.Noise && (len(heard) == 0 || !strings.Contains(heard[len(heard)-1], o.Audio.Clip.Text)) {
					heard = append(heard, fmt.Sprintf("%q → %q", o.Audio.Clip.Text, wholes[i]))
				}
			case p != "":
				falseHit++
			}
		}
		w("- **Phrase rule alone** (the whole greeting transcribed at once, whatever decided first): a voicemail phrase heard in %d of %d greetings, in %d of %d people's words. What the recognizer made of some greetings:\n",
			hit, n, falseHit, len(outs)-n)
		for _, h := range heard {
			w("  - %s\n", h)
		}
	}
	if len(misses) > 0 {
		w("- **Wrong or undecided:**\n")
		for _, m := range misses {
			w("  - %s\n", m)
		}
	}
	return b.String()
}
