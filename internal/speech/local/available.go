package local

import "strings"

// Available reports what this build on this machine can do, for the
// server's startup log: tts when espeak-ng is usable (the linked library
// in a speech_native build, else the program), stt when the build has
// pocketsphinx and its en-us model is installed. why says which engine
// serves each, or what to install.
func Available() (tts, stt bool, why string) {
	tts, ttsWhy, stt, sttWhy := nativeAvailable()
	if !tts {
		if path, err := lookEspeak(""); err == nil {
			tts, ttsWhy = true, "tts: espeak-ng program "+path
		} else if ttsWhy == "" {
			ttsWhy = "tts: no espeak-ng (install the espeak-ng package)"
		} else {
			ttsWhy += "; no espeak-ng program either (install the espeak-ng package)"
		}
	}
	return tts, stt, strings.Join([]string{ttsWhy, sttWhy}, "; ")
}
