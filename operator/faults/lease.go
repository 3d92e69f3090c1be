package faults

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// errLeaseUnreachable is what the leader elector's requests fail with under
// the lease faults, as when the API server cannot be reached.
var errLeaseUnreachable = errors.New("faults: the API server is unreachable for the leader elector")

// LeaseFault breaks the leader elector's link to the API server: from
// LeaseUnreachableAfter after the start, or once the process has led for
// LeaseLostAfter. Give the manager the RESTConfig it returns as its
// LeaderElectionConfig (the elector's own client), and add it to the manager
// so it learns when the process is elected.
type LeaseFault struct {
	modes   Modes
	clock   clock.PassiveClock
	started time.Time
	elected atomic.Pointer[time.Time]
}

// NewLeaseFault returns nil when neither lease fault is on.
func (m Modes) NewLeaseFault(clk clock.PassiveClock) *LeaseFault {
	if m.LeaseUnreachableAfter <= 0 && m.LeaseLostAfter <= 0 {
		return nil
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &LeaseFault{modes: m, clock: clk, started: clk.Now()}
}

// RESTConfig returns a copy of cfg whose requests fail while the fault holds.
func (f *LeaseFault) RESTConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if f.broken() {
				return nil, errLeaseUnreachable
			}
			return rt.RoundTrip(req)
		})
	})
	return c
}

// broken reports whether the elector's requests fail now.
func (f *LeaseFault) broken() bool {
	now := f.clock.Now()
	if d := f.modes.LeaseUnreachableAfter; d > 0 && now.Sub(f.started) >= d {
		return true
	}
	if d := f.modes.LeaseLostAfter; d > 0 {
		if at := f.elected.Load(); at != nil && now.Sub(*at) >= d {
			return true
		}
	}
	return false
}

// NeedLeaderElection reports true: Start runs once the process is elected.
func (f *LeaseFault) NeedLeaderElection() bool { return true }

// Start records when the process was elected.
func (f *LeaseFault) Start(ctx context.Context) error {
	now := f.clock.Now()
	f.elected.Store(&now)
	<-ctx.Done()
	return nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
