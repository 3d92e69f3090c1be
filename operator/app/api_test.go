package app

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

func TestCRDDefaultsAndValidation(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "api")

	minimal := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "minimal"}}
	if err := testClient.Create(ctx, minimal); err != nil {
		t.Fatalf("create a minimal Backup: %v", err)
	}
	s := minimal.Spec
	if s.IntervalSeconds != 3600 || s.Retention != 5 || len(s.Kinds) != 2 || minimal.StoreName() != "default" || s.StoreRef == nil {
		t.Errorf("defaults not applied: %+v", s)
	}

	cases := []struct {
		name    string
		mutate  func(b *backupv1.Backup)
		wantErr string
	}{
		{name: "rejects an interval under ten seconds", mutate: func(b *backupv1.Backup) { b.Spec.IntervalSeconds = 5 }, wantErr: "intervalSeconds"},
		{name: "rejects keeping no snapshot", mutate: func(b *backupv1.Backup) { b.Spec.Retention = -1 }, wantErr: "retention"},
		{name: "rejects an unknown kind", mutate: func(b *backupv1.Backup) { b.Spec.Kinds = []backupv1.BackupKind{"Pod"} }, wantErr: "kinds"},
		{name: "rejects a store name that is not a DNS label", mutate: func(b *backupv1.Backup) { b.Spec.StoreRef = &backupv1.StoreReference{Name: "Bad_Name"} }, wantErr: "storeRef.name"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "invalid-" + string(rune('a'+i))}}
			c.mutate(b)
			err := testClient.Create(ctx, b)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error = %v, want a rejection naming %s", err, c.wantErr)
			}
		})
	}

	t.Run("a Snapshot's spec is immutable", func(t *testing.T) {
		snap := &backupv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}, Spec: backupv1.SnapshotSpec{BackupName: "minimal"}}
		if err := testClient.Create(ctx, snap); err != nil {
			t.Fatal(err)
		}
		orig := snap.DeepCopy()
		snap.Spec.BackupName = "other"
		err := testClient.Patch(ctx, snap, client.MergeFrom(orig))
		if err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("error = %v, want the spec to be immutable", err)
		}
	})
}
