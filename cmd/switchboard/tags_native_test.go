//go:build speech_native

package main

// buildTags are this test binary's speech build tags, for the servers the
// tests build: with the native engines when the tests have them, as
// `make run` builds when it can.
var buildTags = []string{"speech_native"}
