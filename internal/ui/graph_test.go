package ui

import (
	"encoding/json"
	"testing"
)

// TestBuildGraph: nodes are layered from the start, edges carry their
// match, a loop goes back up, a missing node is drawn dashed under its
// referrer, and the nodes errors name are marked.
func TestBuildGraph(t *testing.T) {
	raw := json.RawMessage(`{"start":"hi","nodes":{
	  "hi":{"type":"say","text":"Hello there, and welcome to a very long greeting that will not fit in one box at all","next":"ask"},
	  "ask":{"type":"ask","text":"Yes or no?","branches":[{"match":{"kind":"yesno","value":true},"next":"end"},{"match":{"kind":"number","min":1,"max":5},"next":"ghost"}],
	         "noMatch":{"next":"ask"}},
	  "end":{"type":"end","text":"Bye."},
	  "orphan":{"type":"end"}}}`)
	g := buildGraph(raw, flowErrorTargets(map[string][]string{"flow.nodes.ask.branches[1].next": {`unknown node "ghost"`}, "flow.start": {"x"}}))
	if g == nil {
		t.Fatal("buildGraph: nil")
	}
	nodes := map[string]graphNode{}
	for _, n := range g.Nodes {
		nodes[n.ID] = n
	}
	if !nodes["hi"].Start || nodes["ask"].Y <= nodes["hi"].Y || nodes["end"].Y <= nodes["ask"].Y {
		t.Errorf("layers: hi %v, ask %v, end %v; want hi (start) above ask above end", nodes["hi"].Y, nodes["ask"].Y, nodes["end"].Y)
	}
	if !nodes["ghost"].Missing || nodes["ghost"].Y != nodes["end"].Y {
		t.Errorf("ghost = %+v; want a missing node in the layer under ask", nodes["ghost"])
	}
	if nodes["orphan"].Y <= nodes["end"].Y {
		t.Errorf("an unreachable node should sit below the reachable ones")
	}
	if !nodes["ask"].Bad || nodes["hi"].Bad {
		t.Errorf("bad: ask %v, hi %v; want only ask", nodes["ask"].Bad, nodes["hi"].Bad)
	}
	if n := len(nodes["hi"].Lines); n != 2 || nodes["hi"].Lines[1].Text[len(nodes["hi"].Lines[1].Text)-3:] != "…" {
		t.Errorf("hi's text lines = %+v; want two, the second cut with …", nodes["hi"].Lines)
	}
	labels := map[string]graphEdge{}
	for _, e := range g.Edges {
		labels[e.Label] = e
	}
	if _, ok := labels["yes"]; !ok {
		t.Errorf("edges %+v: want one labelled yes", g.Edges)
	}
	if e := labels["number 1–5"]; !e.Bad {
		t.Errorf("the edge to ghost = %+v; want it labelled number 1–5 and marked bad", e)
	}
	if e := labels["no match"]; !e.Back {
		t.Errorf("ask's noMatch loop = %+v; want a back edge", e)
	}
	for _, bad := range []string{``, `[]`, `{"nodes":{}}`, `not json`} {
		if buildGraph(json.RawMessage(bad), nil) != nil {
			t.Errorf("buildGraph(%q) = a graph; want nil", bad)
		}
	}
}
