package faults

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// MassUpdater is the periodic mass update mode: every Every it stamps
// MassUpdateAnnotation on every Backup and requeues all of them at once, as a
// cron job touching everything does, so the controller's load comes in
// periodic spikes.
type MassUpdater struct {
	// Reader lists Backups, normally the cache.
	Reader client.Reader
	// Writer patches them.
	Writer client.Client
	// Every is the period. Required.
	Every time.Duration
	// Clock stamps the annotation. Defaults to the real clock.
	Clock clock.PassiveClock

	events chan event.GenericEvent
}

// NewMassUpdater fills in defaults; add Source to the Backup controller's
// ExtraSources so the requeues reach it.
func NewMassUpdater(m MassUpdater) *MassUpdater {
	if m.Clock == nil {
		m.Clock = clock.RealClock{}
	}
	m.events = make(chan event.GenericEvent, 1024)
	return &m
}

// Source delivers the requeues: a channel, since an annotation change alone
// does not pass the reference controller's predicates.
func (m *MassUpdater) Source() source.Source {
	return source.Channel(m.events, &handler.EnqueueRequestForObject{})
}

// NeedLeaderElection reports true: one updater per operator is enough.
func (m *MassUpdater) NeedLeaderElection() bool { return true }

// Start updates every Every, the first time one period after the start, until
// ctx is done.
func (m *MassUpdater) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("mass-updater")
	_ = wait.PollUntilContextCancel(ctx, m.Every, false, func(ctx context.Context) (bool, error) {
		n, err := m.round(ctx)
		if err != nil {
			logger.Error(err, "Mass update failed")
		}
		logger.Info("Mass-updated backups", "count", n)
		return false, nil
	})
	return nil
}

func (m *MassUpdater) round(ctx context.Context) (int, error) {
	list := &backupv1.BackupList{}
	if err := m.Reader.List(ctx, list); err != nil {
		return 0, fmt.Errorf("list backups: %w", err)
	}
	stamp := m.Clock.Now().UTC().Format(time.RFC3339)
	n := 0
	for i := range list.Items {
		b := &list.Items[i]
		orig := b.DeepCopy()
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[MassUpdateAnnotation] = stamp
		if err := m.Writer.Patch(ctx, b, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("patch backup %s/%s: %w", b.Namespace, b.Name, err)
		}
		n++
		select {
		case m.events <- event.GenericEvent{Object: b}:
		case <-ctx.Done():
			return n, nil
		}
	}
	return n, nil
}
