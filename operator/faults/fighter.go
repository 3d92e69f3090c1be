package faults

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// Fighter is the second writer of the fight mode: it keeps setting
// FightAnnotation to FighterTier on every Backup while the Backup controller,
// decorated by BackupDecorator, sets it back to ControllerTier. Give it a
// client with its own identity (user agent, impersonated service account) so
// audit logs show two actors.
type Fighter struct {
	// Reader lists Backups, normally the cache.
	Reader client.Reader
	// Writer patches them as the competing actor.
	Writer client.Client
	// Interval between two rounds. Defaults to 1s.
	Interval time.Duration
}

// NeedLeaderElection reports true: one fighter per operator is enough.
func (f *Fighter) NeedLeaderElection() bool { return true }

// Start runs a round every Interval, the first one Interval after the start,
// until ctx is done.
func (f *Fighter) Start(ctx context.Context) error {
	interval := f.Interval
	if interval <= 0 {
		interval = time.Second
	}
	logger := log.FromContext(ctx).WithName("fighter")
	_ = wait.PollUntilContextCancel(ctx, interval, false, func(ctx context.Context) (bool, error) {
		if err := f.round(ctx); err != nil {
			logger.Error(err, "Fight round failed")
		}
		return false, nil
	})
	return nil
}

func (f *Fighter) round(ctx context.Context) error {
	list := &backupv1.BackupList{}
	if err := f.Reader.List(ctx, list); err != nil {
		return fmt.Errorf("list backups: %w", err)
	}
	for i := range list.Items {
		b := &list.Items[i]
		if !b.DeletionTimestamp.IsZero() || b.Annotations[FightAnnotation] == FighterTier {
			continue
		}
		orig := b.DeepCopy()
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[FightAnnotation] = FighterTier
		if err := f.Writer.Patch(ctx, b, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("patch backup %s/%s: %w", b.Namespace, b.Name, err)
		}
	}
	return nil
}
