package app

import (
	"context"
	"time"

	"switchboard/internal/httpapi"
)

// syncLimits shares the API's per-key rate limits with the other nodes on
// the same PostgreSQL every Config.RateLimitSync until ctx ends. A failing
// sync is logged once, and its recovery; meanwhile each node limits on its
// own (what it admits is kept and shared once the database answers).
func (m *Main) syncLimits(ctx context.Context) {
	tick := time.NewTicker(cmpOrDur(m.cfg.RateLimitSync, httpapi.DefaultLimitSync))
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := m.api.SyncLimits(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			m.log.Warn("sharing rate limits with the other nodes failed; limiting on this node alone until it works", "err", err)
		case err == nil && failing:
			failing = false
			m.log.Info("sharing rate limits with the other nodes works again")
		}
	}
}
