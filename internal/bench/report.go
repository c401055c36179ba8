package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// ReplaceSection returns doc with the section that starts with the line
// heading (e.g. "## bench-api") replaced by section, which must start with
// that heading. The section runs to the next heading of the same or a
// higher level, or the end. A missing section is appended; an empty doc
// becomes "# Benchmarks" plus the section.
func ReplaceSection(doc, heading, section string) string {
	section = strings.TrimRight(section, "\n") + "\n"
	if strings.TrimSpace(doc) == "" {
		return "# Benchmarks\n\n" + section
	}
	level := strings.IndexFunc(heading, func(r rune) bool { return r != '#' })
	lines := strings.SplitAfter(doc, "\n")
	start, end := -1, len(lines)
	inFence := false
	for i, l := range lines {
		t := strings.TrimRight(l, "\r\n")
		if strings.HasPrefix(t, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if start < 0 {
			if strings.TrimSpace(t) == heading {
				start = i
			}
			continue
		}
		if lv := headingLevel(t); lv > 0 && lv <= level {
			end = i
			break
		}
	}
	if start < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	after := strings.Join(lines[end:], "")
	if after != "" {
		section += "\n"
	}
	return strings.Join(lines[:start], "") + section + after
}

func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}

// WriteSection replaces (or adds) the section in the file at path.
func WriteSection(path, heading, section string) error {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, []byte(ReplaceSection(string(b), heading, section)), 0o644)
}

// Ms formats a duration in milliseconds with two decimals.
func Ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// Pct formats a share (0..1) as a whole percentage.
func Pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// PerSec formats a CPU time per second (of a call, say) in microseconds.
func PerSec(d time.Duration) string { return fmt.Sprintf("%dµs/s", d.Microseconds()) }

// Median of xs (mean of the middle two for an even count).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// MedianDur is Median over durations.
func MedianDur(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(Median(xs))
}
