//go:build !failpoints

package app

import "context"

// withFailpoint returns dial unchanged; binaries built with -tags failpoints
// can hold their dials for the crash-recovery tests (failpoint_on.go).
func withFailpoint(dial func(ctx context.Context, attemptID string) error) func(ctx context.Context, attemptID string) error {
	return dial
}
