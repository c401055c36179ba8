package ui

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// flowGraph is an assistant's flow drawn as an SVG on the server: a box a
// node (its id, type and text), an arrow an edge labelled with what takes
// it (a branch's match, "no match", "on error"), in layers from the start
// node down. It is drawn from the flow as written, valid or not, so that
// the node an error names can be shown in the graph (Bad); a reference to
// a node that does not exist is drawn as a dashed box.
type flowGraph struct {
	W, H       float64
	BoxW, BoxH float64
	// TypeDX places a node's type at its right edge.
	TypeDX float64
	Nodes  []graphNode
	Edges  []graphEdge
}

type graphNode struct {
	ID, Type string
	// Lines are the node's text, wrapped and cut to fit the box.
	Lines   []graphLine
	X, Y    float64
	Start   bool
	Missing bool // named by an edge, not in the flow
	Bad     bool // an error names it
	// Title is the tooltip: the full text and the node's errors.
	Title string
}

// graphLine is a line of a node's text, placed.
type graphLine struct {
	X, Y float64
	Text string
}

type graphEdge struct {
	// D is the path; LX, LY the label's place.
	D      string
	Label  string
	LX, LY float64
	Back   bool // goes up or sideways: a loop
	Bad    bool // the field an error names
}

// Layout of the drawing, in SVG user units.
const (
	boxW, boxH = 190.0, 74.0
	gapX, gapY = 40.0, 70.0
	pad        = 20.0
	lineChars  = 30
)

// looseFlow is a flow read leniently: whatever of it has the right shape.
type looseFlow struct {
	Start string                     `json:"start"`
	Nodes map[string]json.RawMessage `json:"nodes"`
}

type looseNode struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Next     string `json:"next"`
	OnError  string `json:"onError"`
	Branches []struct {
		Match json.RawMessage `json:"match"`
		Next  string          `json:"next"`
	} `json:"branches"`
	NoMatch *struct {
		Next string `json:"next"`
	} `json:"noMatch"`
}

// looseEdge is a way out of a node, named by its field.
type looseEdge struct{ field, to, label string }

func (n looseNode) edges() []looseEdge {
	var es []looseEdge
	if n.Next != "" {
		es = append(es, looseEdge{"next", n.Next, ""})
	}
	for i, b := range n.Branches {
		if b.Next != "" {
			es = append(es, looseEdge{"branches[" + strconv.Itoa(i) + "]", b.Next, matchLabel(b.Match)})
		}
	}
	if n.NoMatch != nil && n.NoMatch.Next != "" {
		es = append(es, looseEdge{"noMatch", n.NoMatch.Next, "no match"})
	}
	if n.OnError != "" {
		es = append(es, looseEdge{"onError", n.OnError, "on error"})
	}
	return es
}

// matchLabel says in a few words what a branch's match accepts.
func matchLabel(raw json.RawMessage) string {
	var m struct {
		Kind    string   `json:"kind"`
		Any     []string `json:"any"`
		Pattern string   `json:"pattern"`
		Value   any      `json:"value"`
		Min     *float64 `json:"min"`
		Max     *float64 `json:"max"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return "?"
	}
	var s string
	switch m.Kind {
	case "keywords":
		s = strings.Join(m.Any, " / ")
	case "regex":
		s = "/" + m.Pattern + "/"
	case "yesno":
		switch m.Value {
		case true:
			s = "yes"
		case false:
			s = "no"
		default:
			s = "yes or no"
		}
	case "number":
		s = "number"
		if m.Min != nil || m.Max != nil {
			lo, hi := "…", "…"
			if m.Min != nil {
				lo = strconv.FormatFloat(*m.Min, 'g', -1, 64)
			}
			if m.Max != nil {
				hi = strconv.FormatFloat(*m.Max, 'g', -1, 64)
			}
			s += " " + lo + "–" + hi
		}
	case "dtmf":
		if v, ok := m.Value.(string); ok && v != "" {
			s = "keys " + v
		} else {
			s = "keys"
		}
	case "":
		s = "?"
	default:
		s = m.Kind
	}
	return cut(s, 24)
}

// cut shortens s to n runes, with an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// wrap breaks text into at most two lines of lineChars runes.
func wrap(text string) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		switch {
		case cur == "":
			cur = w
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w) <= lineChars:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
		if len(lines) == 2 {
			break
		}
	}
	if cur != "" && len(lines) < 2 {
		lines = append(lines, cur)
	}
	for i := range lines {
		lines[i] = cut(lines[i], lineChars)
	}
	if len(lines) == 2 && strings.Join(lines, " ") != strings.Join(strings.Fields(text), " ") {
		lines[1] = cut(lines[1], lineChars-1) + "…"
	}
	return lines
}

// buildGraph lays out raw (a flow's JSON); bad names the nodes and
// fields errors point at (flowErrorTargets). It returns nil when raw is
// not a flow with nodes.
func buildGraph(raw json.RawMessage, bad map[string][]string) *flowGraph {
	var lf looseFlow
	if len(raw) == 0 || json.Unmarshal(raw, &lf) != nil || len(lf.Nodes) == 0 {
		return nil
	}
	ids := make([]string, 0, len(lf.Nodes))
	nodes := map[string]looseNode{}
	for nid, rn := range lf.Nodes {
		var n looseNode
		if json.Unmarshal(rn, &n) != nil { // a field of the wrong type: show the node all the same
			var typ struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(rn, &typ)
			n = looseNode{Type: typ.Type}
		}
		nodes[nid] = n
		ids = append(ids, nid)
	}
	slices.Sort(ids)

	// Layers: breadth first from the start, so each node sits one below
	// the first node that reaches it; nodes the start does not reach go
	// in a layer of their own at the bottom, and so do missing ones.
	layer := map[string]int{}
	var order []string
	visit := func(root string) {
		if _, ok := nodes[root]; !ok {
			return
		}
		if _, seen := layer[root]; seen {
			return
		}
		layer[root] = 0
		queue := []string{root}
		for len(queue) > 0 {
			id := queue[0]
			queue = queue[1:]
			order = append(order, id)
			for _, e := range nodes[id].edges() {
				if _, ok := nodes[e.to]; !ok {
					continue
				}
				if _, seen := layer[e.to]; !seen {
					layer[e.to] = layer[id] + 1
					queue = append(queue, e.to)
				}
			}
		}
	}
	visit(lf.Start)
	depth := 0
	for _, l := range layer {
		depth = max(depth, l+1)
	}
	for _, id := range ids {
		if _, seen := layer[id]; !seen {
			layer[id] = depth
			order = append(order, id)
		}
	}
	var missing []string
	for _, id := range order {
		for _, e := range nodes[id].edges() {
			if _, ok := nodes[e.to]; !ok && !slices.Contains(missing, e.to) {
				missing = append(missing, e.to)
			}
		}
	}
	g := &flowGraph{BoxW: boxW, BoxH: boxH, TypeDX: boxW - 10}
	pos := map[string]int{}
	rows := map[int][]string{}
	for _, id := range order {
		l := layer[id]
		pos[id] = len(rows[l])
		rows[l] = append(rows[l], id)
	}
	// A missing node goes one layer under the first node that names it.
	for _, id := range missing {
		l := 0
		for _, from := range order {
			if slices.ContainsFunc(nodes[from].edges(), func(e looseEdge) bool { return e.to == id }) {
				l = layer[from] + 1
				break
			}
		}
		layer[id] = l
		pos[id] = len(rows[l])
		rows[l] = append(rows[l], id)
	}
	order = append(order, missing...)
	widest, last := 0, 0
	for l, r := range rows {
		widest = max(widest, len(r))
		last = max(last, l)
	}
	g.W = pad*2 + float64(widest)*boxW + float64(widest-1)*gapX
	g.H = pad*2 + float64(last+1)*boxH + float64(last)*gapY
	layoutW := g.W // rows are centred in it; loops may widen g.W later
	at := func(id string) (x, y float64) {
		r := rows[layer[id]]
		rowW := float64(len(r))*boxW + float64(len(r)-1)*gapX
		x = (layoutW-rowW)/2 + float64(pos[id])*(boxW+gapX)
		y = pad + float64(layer[id])*(boxH+gapY)
		return x, y
	}
	for _, id := range order {
		x, y := at(id)
		n, ok := nodes[id]
		gn := graphNode{ID: id, Type: n.Type, X: x, Y: y, Start: id == lf.Start, Missing: !ok}
		text := wrap(n.Text)
		if !ok {
			gn.Type = "missing"
			text = []string{"no such node"}
		}
		for i, l := range text {
			gn.Lines = append(gn.Lines, graphLine{X: x + 10, Y: y + 42 + float64(i)*17, Text: l})
		}
		if msgs := bad[id]; len(msgs) > 0 {
			gn.Bad = true
		}
		gn.Title = strings.TrimSpace(n.Text + "\n" + strings.Join(bad[id], "\n"))
		g.Nodes = append(g.Nodes, gn)
	}
	for _, id := range order {
		n, ok := nodes[id]
		if !ok {
			continue
		}
		es := n.edges()
		// Spread a node's edges along its bottom edge in the order of
		// their targets, left to right, so that they do not cross.
		slot := make([]int, len(es))
		for i := range es {
			xi, _ := at(es[i].to)
			for j := range es {
				if xj, _ := at(es[j].to); xj < xi || (xj == xi && j < i) {
					slot[i]++
				}
			}
		}
		for i, e := range es {
			fx, fy := at(id)
			tx, ty := at(e.to)
			sx := fx + boxW*float64(slot[i]+1)/float64(len(es)+1)
			sy := fy + boxH
			ge := graphEdge{Label: e.label, Bad: slices.ContainsFunc(bad[id], func(m string) bool {
				return strings.HasPrefix(m, e.field+".") || strings.HasPrefix(m, e.field+":")
			})}
			ex, ey := tx+boxW/2, ty
			switch {
			case ty > fy: // down: a curve from the bottom to the top
				midY := (sy + ey) / 2
				ge.D = fmt.Sprintf("M%.1f %.1f C%.1f %.1f %.1f %.1f %.1f %.1f", sx, sy, sx, midY, ex, midY, ex, ey-2)
				ge.LX, ge.LY = (sx+ex)/2, midY
			case ty == fy && tx > fx: // along a row, rightwards: side to side
				sx, sy, ex, ey = fx+boxW, fy+boxH/2, tx, ty+boxH/2
				ge.D = fmt.Sprintf("M%.1f %.1f L%.1f %.1f", sx, sy, ex-2, ey)
				ge.LX, ge.LY = (sx+ex)/2, sy-6
			default: // up (a loop) or leftwards: around the right of every box in between
				ge.Back = true
				sx, sy, ex, ey = fx+boxW, fy+boxH*0.65, tx+boxW, ty+boxH*0.35
				side := 0.0
				for _, other := range order {
					if l := layer[other]; l >= layer[e.to] && l <= layer[id] {
						ox, _ := at(other)
						side = math.Max(side, ox+boxW)
					}
				}
				side += gapX * 0.6
				g.W = math.Max(g.W, side+pad)
				ge.D = fmt.Sprintf("M%.1f %.1f C%.1f %.1f %.1f %.1f %.1f %.1f", sx, sy, side, sy, side, ey, ex+2, ey)
				ge.LX, ge.LY = side-8, (sy+ey)/2
			}
			g.Edges = append(g.Edges, ge)
		}
	}
	return g
}

// flowErrorTargets sorts errors by the flow node they name: field
// "flow.nodes.ask.branches[1].match" gives bad["ask"] the message
// "branches[1].match: …". Errors of the flow as a whole are left out.
func flowErrorTargets(fields map[string][]string) map[string][]string {
	bad := map[string][]string{}
	for field, msgs := range fields {
		rest, ok := strings.CutPrefix(field, "flow.nodes.")
		if !ok {
			continue
		}
		nid, sub, _ := strings.Cut(rest, ".")
		for _, m := range msgs {
			if sub != "" {
				m = sub + ": " + m
			}
			bad[nid] = append(bad[nid], m)
		}
	}
	return bad
}
