package controller

import (
	"context"
	"time"
)

// every runs fn every interval until ctx is done. The first run is one interval after the start:
// the operator's periodic runnables (orphan sweeps, the fault modes' fighter and mass updater)
// should not all fire the moment a replica becomes leader.
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
