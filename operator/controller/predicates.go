package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// deletionStarted passes the update that sets a deletionTimestamp, so the
// finalizer runs whether or not the API server bumped the generation. Finalizer
// changes alone do not pass: the controller's own finalizer patch must not
// wake it again.
var deletionStarted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}

// snapshotProgressed passes Snapshot updates the Backup controller cares
// about: a phase change, a new Ready reason (a pending Snapshot whose store
// fails blocks its Backup) or a deletion, not its own metadata churn.
var snapshotProgressed = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*backupv1.Snapshot)
		n, ok2 := e.ObjectNew.(*backupv1.Snapshot)
		if !ok1 || !ok2 {
			return true
		}
		return o.Status.Phase != n.Status.Phase || readyReason(o) != readyReason(n) ||
			o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
	},
}

func readyReason(s *backupv1.Snapshot) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, backupv1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}
