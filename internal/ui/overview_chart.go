package ui

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The overview's charts, drawn on the server as SVG (no script): a
// column per day, stacked by series, and horizontal bars with labels.
// Each column and bar has a <title> with its numbers.

// Geometry of the day charts (SVG user units; the SVG scales to its box).
const (
	dayW, dayH             = 640, 200
	dayLeft, dayRight      = 48, 632
	dayTop, dayBottom      = 10, 172
	barRowH, barLabelW     = 26, 150
	barW, barRight         = 640, 530
	maxDayLabels, colGapFr = 8, 0.2
)

// vchart is a column chart over days.
type vchart struct {
	ID, Title                string
	W, H                     int
	Left, Right, Top, Bottom float64
	LabelY                   float64
	Ticks                    []tick
	Cols                     []vcol
	XLabels                  []xlabel
	Legend                   []stage
}

// vcol is a day's column: its link (that day's calls), its tooltip, and
// its shapes: the hover area and a rect per segment.
type vcol struct {
	Href, Title string
	// Rects is the column's rects, written here rather than by the
	// template: they are numbers and class names from this file alone,
	// and html/template's escaping of each attribute of each rect was 90%
	// of the page's time over 92 days.
	Rects template.HTML
}

// rect writes an SVG rect of a class of this file.
func rect(b *strings.Builder, class string, x, y, w, h float64) {
	b.WriteString(`<rect class="`)
	b.WriteString(class)
	for _, a := range []struct {
		name string
		v    float64
	}{{"x", x}, {"y", y}, {"width", w}, {"height", h}} {
		b.WriteString(`" `)
		b.WriteString(a.name)
		b.WriteString(`="`)
		b.WriteString(strconv.FormatFloat(a.v, 'f', -1, 64))
	}
	b.WriteString(`"></rect>`)
}

type xlabel struct {
	X     float64
	Label string
}

// dayChart draws values (per day, one per series) stacked bottom to top;
// label and href name a day, title describes a column, and tickLabel
// writes an axis value.
func dayChart(id, title string, values [][]float64, series []stage, label, href func(int) string,
	titleOf func(int, []float64) string, tickLabel func(float64) string) *vchart {
	top := 0.0
	for _, v := range values {
		top = math.Max(top, sum(v))
	}
	scale := niceCeilF(top)
	c := &vchart{ID: id, Title: title, W: dayW, H: dayH, Left: dayLeft, Right: dayRight, Top: dayTop, Bottom: dayBottom, LabelY: dayBottom + 16}
	if len(series) > 1 {
		c.Legend = series
	}
	yOf := func(v float64) float64 { return round1(dayBottom - v/scale*(dayBottom-dayTop)) }
	for i := 0; i <= 4; i++ {
		v := scale * float64(i) / 4
		c.Ticks = append(c.Ticks, tick{Y: yOf(v), Label: tickLabel(v)})
	}
	n := len(values)
	slot := float64(dayRight-dayLeft) / float64(max(n, 1))
	w := slot * (1 - colGapFr)
	every := max(1, int(math.Ceil(float64(n)/maxDayLabels)))
	for i, v := range values {
		x := dayLeft + slot*float64(i) + (slot-w)/2
		cx, cw := round1(x), round1(math.Max(w, 1))
		var r strings.Builder
		rect(&r, "hit", cx, dayTop, cw, dayBottom-dayTop)
		below := 0.0
		for j, part := range v {
			if part <= 0 {
				continue
			}
			rect(&r, series[j].Class, cx, yOf(below+part), cw, round1(yOf(below)-yOf(below+part)))
			below += part
		}
		c.Cols = append(c.Cols, vcol{Href: href(i), Title: titleOf(i, v), Rects: template.HTML(r.String())}) //nolint:gosec // numbers and this file's class names only (rect)
		if i%every == 0 {
			c.XLabels = append(c.XLabels, xlabel{X: round1(x + w/2), Label: label(i)})
		}
	}
	return c
}

// hchart is a chart of labelled horizontal bars, a group per row.
type hchart struct {
	ID, Title   string
	W, H        int
	LabelW      float64
	Rows        []hrowView
	LegendClass []string
}

// hrow is a row as computed: its label, values (one per bar of the
// group), the text shown after each bar, and its tooltip.
type hrow struct {
	Label  string
	Values []float64
	Texts  []string
	Title  string
}

type hrowView struct {
	Y, LabelY float64
	Label     string
	Title     string
	Bars      []hbar
}

type hbar struct {
	Y, W, H, TextX, TextY float64
	Class, Text           string
}

// barChart draws rows of bars on one scale (the largest value); classes
// style the bars of a group in order. nil when there is no row.
func barChart(id, title string, rows []hrow, classes []string) *hchart {
	if len(rows) == 0 {
		return nil
	}
	top := 0.0
	for _, r := range rows {
		for _, v := range r.Values {
			top = math.Max(top, v)
		}
	}
	if top <= 0 {
		top = 1
	}
	per := len(classes)
	barH := float64(barRowH-6) / float64(per)
	c := &hchart{ID: id, Title: title, W: barW, H: len(rows)*barRowH + 8, LabelW: barLabelW}
	for i, r := range rows {
		y0 := float64(4 + i*barRowH)
		v := hrowView{Y: y0, LabelY: round1(y0 + float64(barRowH)/2 + 1), Label: r.Label, Title: r.Title}
		for j, val := range r.Values {
			w := round1(math.Max(val/top*(barRight-barLabelW), 1))
			y := round1(y0 + 3 + barH*float64(j))
			v.Bars = append(v.Bars, hbar{Y: y, W: w, H: round1(barH - 1), TextX: round1(barLabelW + w + 6), TextY: round1(y + barH - 3),
				Class: classes[j%per], Text: r.Texts[j]})
		}
		c.Rows = append(c.Rows, v)
	}
	return c
}

// niceCeilF rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeilF(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return v
}

func countTick(v float64) string {
	if v >= 10_000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

func percentTick(v float64) string { return fmt.Sprintf("%.0f%%", v) }
