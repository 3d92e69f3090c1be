package instrument

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// FinalizerAgeConfig configures a [FinalizerAge].
type FinalizerAgeConfig struct {
	// Controller is the controller name used as the metric label. Required.
	Controller string
	// Finalizer is the finalizer the controller owns. Required.
	Finalizer string
	// Reader lists objects, normally the manager's cache. Required.
	Reader client.Reader
	// NewList returns an empty list of the kind carrying the finalizer. Required.
	NewList func() client.ObjectList
	// Metrics receives the gauge. Required.
	Metrics *Metrics
	// Interval between two measurements. Defaults to 10s.
	Interval time.Duration
	// Clock is the time source. Defaults to the real clock.
	Clock clock.PassiveClock
}

// FinalizerAge keeps loopwatch_controller_finalizer_oldest_pending_seconds up
// to date for one controller and finalizer. It is a manager Runnable that runs
// on every replica (it only reads the cache), so use max() across replicas.
type FinalizerAge struct {
	cfg FinalizerAgeConfig
}

// NewFinalizerAge checks cfg, fills in defaults and returns the runnable.
func NewFinalizerAge(cfg FinalizerAgeConfig) (*FinalizerAge, error) {
	var missing []string
	if cfg.Controller == "" {
		missing = append(missing, "Controller")
	}
	if cfg.Finalizer == "" {
		missing = append(missing, "Finalizer")
	}
	if cfg.Reader == nil {
		missing = append(missing, "Reader")
	}
	if cfg.NewList == nil {
		missing = append(missing, "NewList")
	}
	if cfg.Metrics == nil {
		missing = append(missing, "Metrics")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("finalizer age: missing %v", missing)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	cfg.Metrics.setFinalizerOldest(cfg.Controller, cfg.Finalizer, 0)
	return &FinalizerAge{cfg: cfg}, nil
}

// NeedLeaderElection reports false: every replica can measure from its cache.
func (f *FinalizerAge) NeedLeaderElection() bool { return false }

// Start measures every Interval until ctx is done.
func (f *FinalizerAge) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("controller", f.cfg.Controller, "finalizer", f.cfg.Finalizer)
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		if err := f.Measure(ctx); err != nil {
			logger.Error(err, "Measuring finalizer age failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Measure sets the gauge from one list of the objects.
func (f *FinalizerAge) Measure(ctx context.Context) error {
	age, err := OldestPending(ctx, f.cfg.Reader, f.cfg.NewList(), f.cfg.Finalizer, f.cfg.Clock.Now())
	if err != nil {
		return err
	}
	f.cfg.Metrics.setFinalizerOldest(f.cfg.Controller, f.cfg.Finalizer, age.Seconds())
	return nil
}

// OldestPending lists objects into list and returns how long the oldest one
// that is being deleted has carried finalizer past its deletionTimestamp, or 0.
func OldestPending(ctx context.Context, r client.Reader, list client.ObjectList, finalizer string, now time.Time) (time.Duration, error) {
	if err := r.List(ctx, list); err != nil {
		return 0, fmt.Errorf("list objects waiting on finalizer %q: %w", finalizer, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return 0, fmt.Errorf("extract list: %w", err)
	}
	var oldest time.Duration
	for _, o := range objs {
		obj, ok := o.(client.Object)
		if !ok {
			continue
		}
		ts := obj.GetDeletionTimestamp()
		if ts == nil || !controllerutil.ContainsFinalizer(obj, finalizer) {
			continue
		}
		if age := now.Sub(ts.Time); age > oldest {
			oldest = age
		}
	}
	return oldest, nil
}
