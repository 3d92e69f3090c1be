package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// noEvents drops events, for reconcilers built without a recorder (tests that
// drive them directly).
type noEvents struct{}

func (noEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

var _ events.EventRecorder = noEvents{}

// warningReasons are the Ready reasons a user must act on; each is also
// emitted as a Warning Event when Ready takes it.
var warningReasons = map[string]bool{
	backupv1.ReasonInvalidSelector:    true,
	backupv1.ReasonStoreNotConfigured: true,
	backupv1.ReasonSnapshotBlocked:    true,
	backupv1.ReasonSnapshotFailed:     true,
	backupv1.ReasonNothingSelected:    true,
}

// announce emits a Warning Event when Ready takes a reason a user must act
// on, once per change rather than once per reconcile.
func (r *BackupReconciler) announce(b *backupv1.Backup, before, after []metav1.Condition) {
	was := meta.FindStatusCondition(before, backupv1.ConditionReady)
	now := meta.FindStatusCondition(after, backupv1.ConditionReady)
	if now == nil || !warningReasons[now.Reason] || (was != nil && was.Reason == now.Reason) {
		return
	}
	r.Events.Eventf(b, nil, corev1.EventTypeWarning, now.Reason, "Reconcile", "%s", now.Message)
}
