package app

import (
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/callrun"
	"switchboard/internal/cluster"
	"switchboard/internal/telephony"
)

// callEvents is what call control tells the parts above it: an answered
// line runs on this node's runtime; an ended call stops here, and the
// node that holds its line hears of it (cluster.Node.Ended).
type callEvents struct {
	runtime *callrun.Runtime
	node    *cluster.Node
}

var _ callctl.Listener = callEvents{}

func (e callEvents) Answered(c call.Call, line telephony.Line) bool { return e.runtime.Start(c, line) }

func (e callEvents) Ended(c call.Call) { e.node.Ended(c) }
