package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

func TestPredicates(t *testing.T) {
	now := metav1.Now()
	base := func() *backupv1.Snapshot {
		return &backupv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "s", Generation: 1}}
	}
	with := func(f func(s *backupv1.Snapshot)) *backupv1.Snapshot { s := base(); f(s); return s }
	cases := []struct {
		name         string
		old, new     *backupv1.Snapshot
		wantProgress bool
		wantDeletion bool
	}{
		{name: "ignores an annotation change", old: base(), new: with(func(s *backupv1.Snapshot) { s.Annotations = map[string]string{"a": "b"} })},
		{name: "ignores the controller's own finalizer patch", old: base(), new: with(func(s *backupv1.Snapshot) { s.Finalizers = []string{"f"} })},
		{name: "passes a phase change to the owner", old: base(),
			new: with(func(s *backupv1.Snapshot) { s.Status.Phase = backupv1.SnapshotCompleted }), wantProgress: true},
		{name: "passes a pending snapshot's store failure to the owner", old: base(),
			new: with(func(s *backupv1.Snapshot) {
				setSnapshotConditions(&s.Status, 1, now.Time, metav1.ConditionFalse, backupv1.ReasonStoreError, "refused")
			}), wantProgress: true},
		{name: "passes the start of a deletion", old: base(),
			new: with(func(s *backupv1.Snapshot) { s.DeletionTimestamp = &now }), wantProgress: true, wantDeletion: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}
			if got := snapshotProgressed.Update(e); got != c.wantProgress {
				t.Errorf("snapshotProgressed = %v, want %v", got, c.wantProgress)
			}
			if got := deletionStarted.Update(e); got != c.wantDeletion {
				t.Errorf("deletionStarted = %v, want %v", got, c.wantDeletion)
			}
		})
	}
}
