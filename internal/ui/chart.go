package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"switchboard/internal/call"
)

// The latency chart's geometry (SVG user units; the SVG scales to its box).
const (
	chartW, chartH        = 640, 220
	plotLeft, plotRight   = 68, 628
	plotTop, plotBottom   = 12, 190
	maxBarW, barGapFactor = 36, 0.25
)

// chart is a server-rendered SVG of a call's per-turn latency: one bar per
// assistant reply, stacked by stage when the turn has a voice breakdown
// (call.Breakdown), one block of its latency otherwise (text turns). Every
// bar has a <title> with its numbers, so the chart needs no script.
type chart struct {
	W, H                            int
	Left, Right, Top, Bottom        int
	Bars                            []bar
	Ticks                           []tick
	Stages                          []stage // the legend, when a bar is stacked
	AxisLabelX, AxisLabelY, BottomY float64
}

type bar struct {
	X, W, LabelX float64
	Label, Title string
	Segs         []seg
}

type seg struct {
	Y, H  float64
	Class string
}

type tick struct {
	Y     float64
	Label string
}

type stage struct{ Class, Label string }

// stages are a breakdown's parts, bottom to top, with their CSS classes.
var stages = []stage{
	{"seg-endpointing", "endpointing"}, {"seg-transcriber", "transcriber"}, {"seg-model", "model"},
	{"seg-voice", "voice"}, {"seg-platform", "platform"},
}

// latencyChart draws the assistant turns' latency, or returns nil when no
// turn has any.
func latencyChart(turns []call.Turn) *chart {
	type point struct {
		t     call.Turn
		total time.Duration
	}
	var pts []point
	var top time.Duration
	for _, t := range turns {
		if t.Role != call.RoleAssistant {
			continue
		}
		total := t.Latency
		if t.Breakdown != nil {
			total = t.Breakdown.Total
		}
		if total <= 0 {
			continue
		}
		pts = append(pts, point{t, total})
		top = max(top, total)
	}
	if len(pts) == 0 {
		return nil
	}
	scale := niceCeil(top)
	c := &chart{W: chartW, H: chartH, Left: plotLeft, Right: plotRight, Top: plotTop, Bottom: plotBottom, BottomY: plotBottom + 16}
	for i := 0; i <= 4; i++ {
		v := scale * time.Duration(i) / 4
		c.Ticks = append(c.Ticks, tick{Y: y(v, scale), Label: msLabel(v)})
	}
	slot := float64(plotRight-plotLeft) / float64(len(pts))
	w := math.Min(slot*(1-barGapFactor), maxBarW)
	stacked := false
	for i, p := range pts {
		x := plotLeft + slot*float64(i) + (slot-w)/2
		b := bar{X: round1(x), W: round1(w), LabelX: round1(x + w/2), Label: fmt.Sprintf("#%d", p.t.Seq)}
		if bd := p.t.Breakdown; bd != nil {
			stacked = true
			parts := []time.Duration{bd.Endpointing, bd.Transcriber, bd.Model, bd.Voice, bd.Platform}
			var below time.Duration
			var lines []string
			for j, d := range parts {
				d = max(d, 0)
				if d > 0 {
					b.Segs = append(b.Segs, seg{Y: y(below+d, scale), H: round1(y(below, scale) - y(below+d, scale)), Class: stages[j].Class})
				}
				below += d
				lines = append(lines, fmt.Sprintf("%s %s", stages[j].Label, msLabel(d)))
			}
			b.Title = fmt.Sprintf("Turn %d: %s (%s)", p.t.Seq, msLabel(bd.Total), strings.Join(lines, ", "))
		} else {
			b.Segs = []seg{{Y: y(p.total, scale), H: round1(plotBottom - y(p.total, scale)), Class: "seg-total"}}
			b.Title = fmt.Sprintf("Turn %d: %s to the first reply", p.t.Seq, msLabel(p.total))
		}
		if p.t.Interrupted {
			b.Title += "; interrupted"
		}
		c.Bars = append(c.Bars, b)
	}
	if stacked {
		c.Stages = stages
	}
	return c
}

// y is the SVG y of a latency on a scale whose top is scale.
func y(d, scale time.Duration) float64 {
	return round1(plotBottom - float64(d)/float64(scale)*(plotBottom-plotTop))
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// niceCeil rounds d up to 1, 2 or 5 times a power of ten (at least 1 µs),
// so the axis reads in round numbers; text turns answer in well under a
// millisecond, voice turns in about a second.
func niceCeil(d time.Duration) time.Duration {
	if d <= time.Microsecond {
		return time.Microsecond
	}
	p := math.Pow(10, math.Floor(math.Log10(float64(d))))
	for _, m := range []float64{1, 2, 5, 10} {
		if float64(d) <= m*p {
			return time.Duration(math.Round(m * p))
		}
	}
	return d
}

// msLabel shows a latency in seconds from one second, else in
// milliseconds, with three significant digits below 10 ms.
func msLabel(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.0f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= 10*time.Millisecond || d == 0:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
}
