//go:build cgo && speech_native

package local

import "switchboard/internal/speech"

// NewTranscriber returns the pocketsphinx transcriber (en-us, 16 kHz;
// 8 kHz streams are upsampled). Decoders are created on first need, up to
// opts.Decoders; the value also has a Close method (io.Closer) that frees
// them. It returns an error wrapping speech.ErrUnavailable when the model
// is not installed.
func NewTranscriber(opts TranscriberOptions) (speech.Transcriber, error) {
	opts = opts.withDefaults()
	if _, _, _, err := modelPaths(opts.ModelDir); err != nil {
		return nil, err
	}
	dir := opts.ModelDir
	return newTranscriber(opts, func() (decoder, error) { return newPSDecoder(dir) }), nil
}

// nativeBuild reports whether this build links the native engines.
const nativeBuild = true
