package controller

import (
	"context"
	"time"
)

// every runs fn every interval until ctx is done. The first run is one interval after the start,
// so a replica that just became leader is not busy sweeping while it catches up on its queue.
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn(ctx)
	}
}
