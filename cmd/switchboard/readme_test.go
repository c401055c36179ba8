package main

import (
	"os"
	"regexp"
	"testing"
)

// TestREADMEConfigurationTable: every flag `serve --help` lists has a row
// in README.md's Configuration table, so a new flag cannot go
// undocumented.
func TestREADMEConfigurationTable(t *testing.T) {
	help, _, err := runBoth(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]] = true
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(help, -1)
	if len(flags) < 30 {
		t.Fatalf("serve --help lists %d flags; want them all:\n%s", len(flags), help)
	}
	for _, f := range flags {
		if !rows[f[1]] {
			t.Errorf("serve flag --%s has no row in README.md's Configuration table", f[1])
		}
	}
}
