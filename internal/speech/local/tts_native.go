//go:build cgo && speech_native

package local

/*
#cgo pkg-config: espeak-ng
#include <stdlib.h>
#include <string.h>
#include <espeak-ng/speak_lib.h>

// espeak-ng has one engine per process: one voice, one callback. Its
// output is collected here, in C, so no Go callback is needed; the Go
// side holds espeakMu around every call.
static short *sb_pcm;
static int sb_len, sb_cap, sb_max, sb_overflow;

static int sb_collect(short *wav, int n, espeak_EVENT *events) {
	if (wav == NULL || n <= 0) return 0;
	if (sb_len + n > sb_max) { sb_overflow = 1; return 1; }  // 1 aborts synthesis
	if (sb_len + n > sb_cap) {
		int c = sb_cap ? sb_cap : 1 << 15;
		while (c < sb_len + n) c *= 2;
		short *p = realloc(sb_pcm, (size_t)c * sizeof(short));
		if (p == NULL) { sb_overflow = 1; return 1; }
		sb_pcm = p;
		sb_cap = c;
	}
	memcpy(sb_pcm + sb_len, wav, (size_t)n * sizeof(short));
	sb_len += n;
	return 0;
}

// Without DONT_EXIT, a failed initialization calls exit(1).
static int sb_espeak_init(void) {
	int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, NULL, espeakINITIALIZE_DONT_EXIT);
	if (rate > 0) espeak_SetSynthCallback(sb_collect);
	return rate;
}

// Like the espeak-ng program's -v: a voice name, else a language.
static int sb_espeak_voice(const char *name) {
	if (espeak_SetVoiceByName(name) == EE_OK) return 0;
	espeak_VOICE spec;
	memset(&spec, 0, sizeof spec);
	spec.languages = name;
	return espeak_SetVoiceByProperties(&spec) == EE_OK ? 0 : -1;
}

// sb_espeak_speak synthesizes text into sb_pcm (at most max samples).
// It returns 0, 1 on overflow, or -1.
static int sb_espeak_speak(const char *text, int max) {
	sb_len = 0;
	sb_overflow = 0;
	sb_max = max;
	if (espeak_Synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0,
			espeakCHARS_UTF8 | espeakENDPAUSE, NULL, NULL) != EE_OK) return -1;
	if (espeak_Synchronize() != EE_OK) return -1;
	return sb_overflow;
}

static short *sb_espeak_pcm(void) { return sb_pcm; }
static int sb_espeak_len(void) { return sb_len; }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"switchboard/internal/speech"
)

// espeakMu serializes every use of the process-global espeak-ng engine.
// Synthesis runs at ~1000× real time, so the wait is negligible.
var (
	espeakMu    sync.Mutex
	espeakRate  int // output rate once initialized (22050)
	espeakErr   error
	espeakTried bool
	espeakVoice string
	espeakWPM   int
)

func espeakInitLocked() (int, error) {
	if !espeakTried {
		espeakTried = true
		if r := int(C.sb_espeak_init()); r > 0 {
			espeakRate = r
		} else {
			espeakErr = unavailable("espeak-ng library failed to initialize (install espeak-ng-data)")
		}
	}
	return espeakRate, espeakErr
}

// nativeSynthesizer speaks through the linked espeak-ng library.
type nativeSynthesizer struct {
	opts SynthesizerOptions
	rate int
}

func newNativeSynthesizer(opts SynthesizerOptions) (speech.Synthesizer, error) {
	espeakMu.Lock()
	rate, err := espeakInitLocked()
	espeakMu.Unlock()
	if err != nil {
		return nil, err
	}
	return &nativeSynthesizer{opts: opts, rate: rate}, nil
}

// Name implements speech.Synthesizer.
func (s *nativeSynthesizer) Name() string { return Name }

// nativeChunk is how many engine samples go to out at a time: ~93 ms.
const nativeChunk = 2048

// Synthesize implements speech.Synthesizer. The text is spoken a sentence
// at a time: each is synthesized under the engine's lock (a millisecond
// or two), then handed to out without it, so a caller pacing out in real
// time does not hold up the other calls.
func (s *nativeSynthesizer) Synthesize(ctx context.Context, text string, vo speech.VoiceOptions, out func(pcm []int16) error) error {
	text, err := checkRequest(text, vo)
	if err != nil || text == "" {
		return err
	}
	voice, err := voiceFor(vo, s.opts.Voice)
	if err != nil {
		return err
	}
	rs := newResampler(s.rate, vo.SampleRate)
	budget := s.rate * maxSpeechSecond
	for _, sentence := range splitSentences(text) {
		if err := ctx.Err(); err != nil {
			return err
		}
		pcm, err := espeakSpeak(voice, s.opts.Rate, sentence, budget)
		if err != nil {
			return err
		}
		budget -= len(pcm)
		for len(pcm) > 0 {
			n := min(len(pcm), nativeChunk)
			chunk := rs.process(nil, pcm[:n])
			pcm = pcm[n:]
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := out(chunk); err != nil {
				return err
			}
		}
	}
	if tail := rs.flush(nil); len(tail) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		return out(tail)
	}
	return nil
}

// espeakSpeak synthesizes one piece of text at the engine's rate.
func espeakSpeak(voice string, wpm int, text string, max int) ([]int16, error) {
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	espeakMu.Lock()
	defer espeakMu.Unlock()
	if _, err := espeakInitLocked(); err != nil {
		return nil, err
	}
	if voice != espeakVoice {
		cv := C.CString(voice)
		rc := C.sb_espeak_voice(cv)
		C.free(unsafe.Pointer(cv))
		if rc != 0 {
			espeakVoice = ""
			return nil, fmt.Errorf("local: espeak-ng has no voice %q", voice)
		}
		espeakVoice = voice
		espeakWPM = 0 // a new voice resets the parameters
	}
	if wpm != espeakWPM {
		if C.espeak_SetParameter(C.espeakRATE, C.int(wpm), 0) != C.EE_OK {
			return nil, fmt.Errorf("local: espeak-ng refused rate %d wpm", wpm)
		}
		espeakWPM = wpm
	}
	switch C.sb_espeak_speak(ctext, C.int(max)) {
	case 0:
	case 1:
		return nil, fmt.Errorf("local: espeak-ng spoke for more than %d s; stopped", maxSpeechSecond)
	default:
		return nil, errors.New("local: espeak-ng synthesis failed")
	}
	n := int(C.sb_espeak_len())
	if n == 0 {
		return nil, nil
	}
	pcm := make([]int16, n)
	copy(pcm, unsafe.Slice((*int16)(unsafe.Pointer(C.sb_espeak_pcm())), n))
	return pcm, nil
}

// nativeAvailable reports the linked engines.
func nativeAvailable() (tts bool, ttsWhy string, stt bool, sttWhy string) {
	espeakMu.Lock()
	rate, err := espeakInitLocked()
	espeakMu.Unlock()
	if err == nil {
		tts, ttsWhy = true, fmt.Sprintf("tts: espeak-ng %s library (%d Hz)", C.GoString(C.espeak_Info(nil)), rate)
	} else {
		ttsWhy = "tts: " + strings.TrimPrefix(err.Error(), speech.ErrUnavailable.Error()+": local: ")
	}
	if _, _, _, err := modelPaths(defaultModelDir); err != nil {
		sttWhy = "stt: " + strings.TrimPrefix(err.Error(), speech.ErrUnavailable.Error()+": local: ")
	} else {
		stt, sttWhy = true, "stt: pocketsphinx en-us ("+defaultModelDir+")"
	}
	return tts, ttsWhy, stt, sttWhy
}
