//go:build cgo && speech_native

package amdtest

// nativeBuild: `make test` builds with the speech engines installed, so a
// missing espeak-ng fails the tests there instead of skipping them.
const nativeBuild = true
