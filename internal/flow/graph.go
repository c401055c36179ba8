package flow

import (
	"slices"
	"strconv"
	"strings"

	"switchboard/internal/apperr"
)

// edge is one way out of a node: the field that names the target, and the target.
type edge struct{ field, to string }

// edges lists the node's ways out in field order.
func (n Node) edges() []edge {
	var es []edge
	if n.Next != "" {
		es = append(es, edge{"next", n.Next})
	}
	for i, b := range n.Branches {
		if b.Next != "" {
			es = append(es, edge{"branches[" + strconv.Itoa(i) + "].next", b.Next})
		}
	}
	if n.NoMatch != nil && n.NoMatch.Next != "" {
		es = append(es, edge{"noMatch.next", n.NoMatch.Next})
	}
	if n.OnError != "" {
		es = append(es, edge{"onError", n.OnError})
	}
	return es
}

// checkGraph validates what needs the whole flow: the start and every
// reference name existing nodes, every node is reachable, no loop can run
// without waiting for the caller, and no run of says is long enough to trip
// the runner's guard.
func checkGraph(f *Flow, fs *apperr.Fields) {
	ids := sortedKeys(f.Nodes)
	_, startOK := f.Nodes[f.Start]
	if f.Start != "" && !startOK {
		fs.Add("flow.start", "unknown node %q", f.Start)
	}
	for _, id := range ids {
		for _, e := range f.Nodes[id].edges() {
			if _, ok := f.Nodes[e.to]; !ok {
				fs.Add(nodeField(id)+"."+e.field, "unknown node %q", e.to)
			}
		}
	}
	if startOK {
		seen := map[string]bool{f.Start: true}
		queue := []string{f.Start}
		for len(queue) > 0 {
			id := queue[0]
			queue = queue[1:]
			for _, e := range f.Nodes[id].edges() {
				if _, ok := f.Nodes[e.to]; ok && !seen[e.to] {
					seen[e.to] = true
					queue = append(queue, e.to)
				}
			}
		}
		for _, id := range ids {
			if !seen[id] {
				fs.Add(nodeField(id), "is unreachable from the start node %q", f.Start)
			}
		}
	}
	if !checkLoops(f, ids, fs) {
		checkSayRuns(f, ids, fs)
	}
}

// checkLoops reports every loop made only of nodes that do not wait for the
// caller (say, tool, sendDTMF, transfer): a flow in one would talk (call
// tools, send keys, try transfers) forever without letting the caller
// answer. It reports each loop once, at its node with the smallest id, and
// says whether it found any.
func checkLoops(f *Flow, ids []string, fs *apperr.Fields) bool {
	silent := func(id string) bool {
		n, ok := f.Nodes[id]
		return ok && (n.Type == typeSay || n.Type == typeTool || n.Type == typeSendDTMF || n.Type == typeTransfer)
	}
	succ := func(id string) []edge {
		var out []edge
		for _, e := range f.Nodes[id].edges() {
			if silent(e.to) {
				out = append(out, e)
			}
		}
		return out
	}
	// Tarjan's strongly connected components over the say/tool subgraph.
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var sccs [][]string
	var strong func(v string)
	strong = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range succ(v) {
			if _, seen := index[e.to]; !seen {
				strong(e.to)
				low[v] = min(low[v], low[e.to])
			} else if onStack[e.to] {
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] == index[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			slices.Sort(scc)
			sccs = append(sccs, scc)
		}
	}
	for _, id := range ids {
		if _, seen := index[id]; !seen && silent(id) {
			strong(id)
		}
	}
	slices.SortFunc(sccs, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	found := false
	for _, scc := range sccs {
		in := map[string]bool{}
		for _, id := range scc {
			in[id] = true
		}
		path, field := loopPath(scc[0], in, succ)
		if path == nil {
			continue // a single node that does not loop to itself
		}
		found = true
		fs.Add(nodeField(scc[0])+"."+field,
			"loops back through %s with no ask node in between, so the caller could never answer",
			strings.Join(path, " → "))
	}
	return found
}

// loopPath finds the shortest loop from start back to itself inside one
// strongly connected component, and the field of start's edge it leaves by.
func loopPath(start string, in map[string]bool, succ func(string) []edge) ([]string, string) {
	parent := map[string]string{}
	via := map[string]string{} // the field of start's edge that reached a node first
	queue := []string{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range succ(u) {
			if !in[e.to] {
				continue
			}
			first := via[u]
			if u == start {
				first = e.field
			}
			if e.to == start {
				path := []string{start}
				for w := u; w != start; w = parent[w] {
					path = append(path, w)
				}
				slices.Reverse(path[1:])
				return append(path, start), first
			}
			if _, seen := parent[e.to]; !seen {
				parent[e.to], via[e.to] = u, first
				queue = append(queue, e.to)
			}
		}
	}
	return nil, ""
}

// checkSayRuns reports say nodes that start a run of more says than one step
// may visit. It runs only on flows without say/tool loops, so the runs end.
func checkSayRuns(f *Flow, ids []string, fs *apperr.Fields) {
	memo := map[string]int{}
	var run func(id string) int
	run = func(id string) int {
		n, ok := f.Nodes[id]
		if !ok || n.Type != typeSay {
			return 0
		}
		if v, ok := memo[id]; ok {
			return v
		}
		memo[id] = 1 + run(n.Next)
		return memo[id]
	}
	followed := map[string]bool{} // says that come right after another say
	for _, id := range ids {
		if n := f.Nodes[id]; n.Type == typeSay {
			followed[n.Next] = true
		}
	}
	limit := MaxStepVisits - 1 // the step also enters the ask, tool or end after the says
	for _, id := range ids {
		if f.Nodes[id].Type != typeSay || followed[id] {
			continue
		}
		if n := run(id); n > limit {
			fs.Add(nodeField(id), "begins %d say nodes in a row; at most %d may follow one another before an ask, tool or end node", n, limit)
		}
	}
}
