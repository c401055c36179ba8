//go:build !(cgo && speech_native)

package amdtest

const nativeBuild = false
