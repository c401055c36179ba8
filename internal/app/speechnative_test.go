//go:build cgo && speech_native

package app

func init() { speechNativeBuild = true }
