//go:build failpoints

package app

import (
	"context"
	"os"

	"switchboard/internal/store"
)

// FailpointHoldDials is the environment variable that, in a binary built
// with -tags failpoints (tests only, never a release), makes every dial
// this process's dialer claims wait until its context ends before doing
// anything: the attempt is held by this node's dialer while still pending,
// which is what a process killed mid-dial leaves behind. The crash-recovery test
// (cmd/switchboard/recovery_test.go) starts a node so, kills it with
// SIGKILL, and checks that the attempts are still dialed, once each.
const FailpointHoldDials = "SWITCHBOARD_FAILPOINT_HOLD_DIALS"

func withFailpoint(dial func(ctx context.Context, ds []store.Dial) error) func(ctx context.Context, ds []store.Dial) error {
	if os.Getenv(FailpointHoldDials) == "" {
		return dial
	}
	return func(ctx context.Context, _ []store.Dial) error {
		<-ctx.Done()
		return ctx.Err()
	}
}
