package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

func TestAnnounceEmitsOncePerChangeToAReasonToActOn(t *testing.T) {
	ready := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: backupv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: "m"}}
	}
	cases := []struct {
		name          string
		before, after []metav1.Condition
		want          string
	}{
		{name: "emits when Ready turns to InvalidSelector", before: ready(backupv1.ReasonNoSnapshotYet), after: ready(backupv1.ReasonInvalidSelector),
			want: "Warning InvalidSelector m"},
		{name: "emits for a first status that needs action", after: ready(backupv1.ReasonStoreNotConfigured), want: "Warning StoreNotConfigured m"},
		{name: "stays quiet while the reason stays", before: ready(backupv1.ReasonSnapshotBlocked), after: ready(backupv1.ReasonSnapshotBlocked)},
		{name: "stays quiet for progress", before: ready(backupv1.ReasonNoSnapshotYet), after: ready(backupv1.ReasonSnapshotInProgress)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(1)
			r := &BackupReconciler{Events: rec}
			r.announce(&backupv1.Backup{}, c.before, c.after)
			got := ""
			select {
			case got = <-rec.Events:
			default:
			}
			if got != c.want {
				t.Errorf("event %q, want %q", got, c.want)
			}
		})
	}
}
