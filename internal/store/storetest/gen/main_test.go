package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGenerated fails when the recorder in internal/store/storetest is not
// what the generator writes from package store today: a method added to,
// changed in or removed from the contract without `go generate
// ./internal/store/storetest`.
func TestGenerated(t *testing.T) {
	want, err := generate("../..")
	if err != nil {
		t.Fatalf("generate(../..): %v", err)
	}
	got, err := os.ReadFile("../recorder_gen.go")
	if err != nil {
		t.Fatalf("read the recorder: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("internal/store/storetest/recorder_gen.go is stale: run go generate ./internal/store/storetest")
	}
}
