//go:build !speech_native

package main

// buildTags: the pure-Go build (see tags_native_test.go).
var buildTags []string
