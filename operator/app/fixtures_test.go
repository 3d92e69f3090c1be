package app

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/controller"
)

const appLabel = "app"

// newBackup returns a Backup of every ConfigMap and Secret labelled app=<app>.
func newBackup(ns, name, app string) *backupv1.Backup {
	return &backupv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupv1.BackupSpec{
			Selector:        metav1.LabelSelector{MatchLabels: map[string]string{appLabel: app}},
			IntervalSeconds: 3600,
			Retention:       3,
		},
	}
}

// createAppObjects creates one ConfigMap and one Secret labelled app=<app>,
// plus an unlabelled ConfigMap that no Backup selects.
func createAppObjects(t *testing.T, ns, app string) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-config", Labels: map[string]string{appLabel: app}},
			Data: map[string]string{"setting": "on"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-secret", Labels: map[string]string{appLabel: app}},
			StringData: map[string]string{"password": "hunter2"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-unrelated"}},
	}
	for _, o := range objs {
		if err := testClient.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
}

// backupReady reports whether the Backup's Ready condition is True for its
// current generation.
func backupReady(b *backupv1.Backup) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, backupv1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == b.Generation
}

// snapshotsOf lists the Snapshots of one Backup straight from the API server.
func snapshotsOf(ctx context.Context, ns, backup string) ([]backupv1.Snapshot, error) {
	list := &backupv1.SnapshotList{}
	if err := testClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{controller.SnapshotBackupLabel: backup}); err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	return list.Items, nil
}

// countReady counts the Ready Backups of a namespace.
func countReady(ctx context.Context, ns string) (int, int, error) {
	list := &backupv1.BackupList{}
	if err := testClient.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	n := 0
	for i := range list.Items {
		if backupReady(&list.Items[i]) {
			n++
		}
	}
	return n, len(list.Items), nil
}
