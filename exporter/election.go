package exporter

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Defaults of ElectionConfig, chosen for a takeover well within the API server's webhook
// retries (a refused batch is sent again after 10-12 s, 25-30 s, 47-57 s and 81-97 s at the
// default --audit-webhook-initial-backoff): a leader killed outright is replaced within the lease
// duration and a retry period or two (under 15 s), one that stops releases its lease and is
// replaced within a retry period.
const (
	DefaultLeaseDuration = 10 * time.Second
	DefaultRenewDeadline = 7 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// ElectionConfig is the Kubernetes Lease the replicas contend for.
type ElectionConfig struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's (the Default* when 0).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

func (c ElectionConfig) withDefaults() ElectionConfig {
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline <= 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod <= 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	return c
}

// TakeoverWindow is how long after its leader's stream ended a standby that takes over still
// adopts the leader's unscraped increments: a dead leader's lease expires within the lease
// duration, and a standby acquires it within a jittered retry period (client-go's jitter is up
// to 1.2 periods) after that.
func (c ElectionConfig) TakeoverWindow() time.Duration {
	c = c.withDefaults()
	return c.LeaseDuration + 3*c.RetryPeriod
}

// HoldOff is how long a starting replica waits before it first contends for the lease. A
// replica that starts holds nothing of the leader's; the standbys in step with it hold everything
// it acknowledged. In a rolling update a new replica starts as an old leader stops and releases
// the lease: were the new one to acquire it first, the old leader's waiting writes and unscraped
// increments would go with it. The standbys retry every RetryPeriod (jittered, up to 1.2 of it),
// so a starting replica that waits two periods and a half lets one of them take over first.
func (c ElectionConfig) HoldOff() time.Duration {
	c = c.withDefaults()
	return 2*c.RetryPeriod + c.RetryPeriod/2
}

// errLeaseLost is RunElection's error when the leader lost its lease while it was serving.
var errLeaseLost = errors.New("lost the exporter's lease")

// RunElection contends for the lease until ctx is done: the replica leads while it holds it and
// follows the holder otherwise. When ctx ends it releases the lease (if held) and returns nil;
// when a leading replica fails to renew the lease it steps down and returns an error, and the
// process should exit (to come back as a standby, as a controller does).
func (e *Exporter) RunElection(ctx context.Context, cfg ElectionConfig) error {
	if e.repl == nil {
		return errors.New("replication is not enabled")
	}
	cfg = cfg.withDefaults()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.repl.cfg.Identity},
	}
	var led atomic.Bool
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				led.Store(true)
				e.Lead()
			},
			OnStoppedLeading: func() {
				if led.Load() && ctx.Err() == nil {
					e.StepDown()
				}
			},
			OnNewLeader: func(identity string) {
				e.log.Info("Lease holder", "holder", identity, "self", identity == e.repl.cfg.Identity)
				e.Follow(identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	select {
	case <-time.After(cfg.HoldOff()):
	case <-ctx.Done():
		return nil
	}
	le.Run(ctx)
	if ctx.Err() == nil {
		return errLeaseLost
	}
	return nil
}
