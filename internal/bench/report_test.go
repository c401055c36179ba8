package bench

import (
	"strings"
	"testing"
	"time"
)

func TestReplaceSection(t *testing.T) {
	sec := "## bench-api\n\nnew\n"
	tests := []struct{ name, doc, want string }{
		{"empty", "", "# Benchmarks\n\n## bench-api\n\nnew\n"},
		{"append", "# Benchmarks\n\n## other\n\nx\n", "# Benchmarks\n\n## other\n\nx\n\n## bench-api\n\nnew\n"},
		{"replace last", "# Benchmarks\n\n## bench-api\n\nold\n", "# Benchmarks\n\n## bench-api\n\nnew\n"},
		{"replace middle", "# B\n\n## bench-api\n\nold\n### sub\nold\n\n## other\nkeep\n", "# B\n\n## bench-api\n\nnew\n\n## other\nkeep\n"},
		{"heading in fence", "# B\n\n## bench-api\nold\n```\n## not a heading\n```\n## next\n", "# B\n\n## bench-api\n\nnew\n\n## next\n"},
		{"similar heading kept", "# B\n\n## bench-api-notes\nkeep\n", "# B\n\n## bench-api-notes\nkeep\n\n## bench-api\n\nnew\n"},
	}
	for _, tt := range tests {
		if got := ReplaceSection(tt.doc, "## bench-api", sec); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	var l Latencies
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i))
	}
	if l.Q(.5) != 50 || l.Q(.99) != 99 || l.Q(1) != 100 || l.Q(0) != 1 {
		t.Fatalf("Q: %v %v %v %v", l.Q(.5), l.Q(.99), l.Q(1), l.Q(0))
	}
	if Median([]float64{3, 1, 2}) != 2 || Median([]float64{4, 1, 3, 2}) != 2.5 {
		t.Fatal("Median")
	}
}

func TestInsertSQL(t *testing.T) {
	q := insertSQL(true, 2)
	if !strings.Contains(q, "$32)") || strings.Contains(q, "?") {
		t.Fatalf("insertSQL: %s", q)
	}
}
