package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// SnapshotBackupIndex is the cache field index from a Snapshot to the name of
// its Backup: the Backup controller reads its Snapshots through it, never by
// listing every Snapshot nor by asking the API server, so a reconcile costs
// the same whatever the number of Backups.
const SnapshotBackupIndex = "spec.backupName"

// SnapshotBackupLabel is set on every Snapshot to BackupLabelValue of its
// Backup's name (the name itself unless it is over 63 characters), so kubectl
// and other tools can select them.
const SnapshotBackupLabel = "backup.loopwatch.dev/backup"

// AddIndexes registers the field indexes the controllers use. Call it before
// the manager starts: an index cannot be added to a running informer.
func AddIndexes(ctx context.Context, idx client.FieldIndexer) error {
	err := idx.IndexField(ctx, &backupv1.Snapshot{}, SnapshotBackupIndex, func(o client.Object) []string {
		s, ok := o.(*backupv1.Snapshot)
		if !ok || s.Spec.BackupName == "" {
			return nil
		}
		return []string{s.Spec.BackupName}
	})
	if err != nil {
		return fmt.Errorf("index snapshots by backup: %w", err)
	}
	return nil
}
