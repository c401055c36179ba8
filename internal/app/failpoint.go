//go:build !failpoints

package app

import (
	"context"

	"switchboard/internal/store"
)

// withFailpoint returns dial unchanged; binaries built with -tags failpoints
// can hold their dials for the crash-recovery tests (failpoint_on.go).
func withFailpoint(dial func(ctx context.Context, ds []store.Dial) error) func(ctx context.Context, ds []store.Dial) error {
	return dial
}
