package storetest

import (
	"testing"
)

func testLifecycle(t *testing.T, open Opener) {
	t.Run("PingClose", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		must(t, "Ping", s.Ping(ctx))
		mustOrg(t, s, "Acme")
		must(t, "Close", s.Close())
		wantErr(t, "Ping after Close", s.Ping(ctx))
		_, err := s.ListWebhooks(ctx, "org_x")
		wantErr(t, "ListWebhooks after Close", err)
	})
}
