package main

import (
	"strings"
	"testing"

	"switchboard/internal/catalog"
)

// TestCatalogNamesServeFlags: every flag the provider catalog tells users
// to set (in "not configured on this server" errors, the dashboard and
// GET /v1/providers) is a flag of `switchboard serve` whose help names the
// same environment variable, so a renamed flag cannot leave the hints
// stale.
func TestCatalogNamesServeFlags(t *testing.T) {
	help, _, err := runBoth(t, "serve", "-h")
	if err != nil {
		t.Fatalf("serve -h: %v", err)
	}
	usage := map[string]string{} // flag → its help text
	var cur string
	for line := range strings.SplitSeq(help, "\n") {
		if name, ok := strings.CutPrefix(line, "  -"); ok {
			cur = strings.Fields(name)[0]
			continue
		}
		if cur != "" {
			usage[cur] += line
		}
	}
	for _, p := range catalog.All() {
		for _, s := range p.Enable {
			help, ok := usage[strings.TrimPrefix(s.Flag, "--")]
			switch {
			case !ok:
				t.Errorf("catalog %s %s names %s, which serve does not have", p.Role, p.Name, s.Flag)
			case !strings.Contains(help, s.Env):
				t.Errorf("catalog %s %s pairs %s with %s; serve's help of the flag says %q", p.Role, p.Name, s.Flag, s.Env, help)
			}
		}
	}
}
