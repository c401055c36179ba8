//go:build !(cgo && speech_native)

package local

import "switchboard/internal/speech"

// NewTranscriber returns the pocketsphinx transcriber; this build has
// none, so it returns an error wrapping speech.ErrUnavailable that says
// how to get one.
func NewTranscriber(opts TranscriberOptions) (speech.Transcriber, error) {
	return nil, unavailable("%s", sttNotBuilt)
}

const sttNotBuilt = "built without speech_native; install libpocketsphinx-dev pocketsphinx-en-us and build with -tags speech_native"

func newNativeSynthesizer(SynthesizerOptions) (speech.Synthesizer, error) {
	return nil, errNotBuilt
}

func nativeAvailable() (tts bool, ttsWhy string, stt bool, sttWhy string) {
	return false, "", false, "stt: " + sttNotBuilt
}

// nativeBuild reports whether this build links the native engines.
const nativeBuild = false
