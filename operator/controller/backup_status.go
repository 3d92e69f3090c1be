package controller

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// snapshotSet is what the Backup controller knows about one Backup's
// Snapshots, computed from the cache without side effects.
type snapshotSet struct {
	// completed, newest first.
	completed []backupv1.Snapshot
	// pending are neither completed nor failed.
	pending []backupv1.Snapshot
	// failed, newest first.
	failed []backupv1.Snapshot
	// newest is the most recently created Snapshot that is not being deleted, or nil.
	newest *backupv1.Snapshot
	// live counts Snapshots that are not being deleted.
	live int
}

func classifySnapshots(snaps []backupv1.Snapshot) snapshotSet {
	var s snapshotSet
	live := make([]backupv1.Snapshot, 0, len(snaps))
	for _, sn := range snaps {
		if sn.DeletionTimestamp != nil {
			continue
		}
		live = append(live, sn)
	}
	sort.Slice(live, func(i, j int) bool { return newer(&live[i], &live[j]) })
	s.live = len(live)
	for i := range live {
		switch live[i].Status.Phase {
		case backupv1.SnapshotCompleted:
			s.completed = append(s.completed, live[i])
		case backupv1.SnapshotFailed:
			s.failed = append(s.failed, live[i])
		default:
			s.pending = append(s.pending, live[i])
		}
	}
	if len(live) > 0 {
		s.newest = &live[0]
	}
	return s
}

// newer orders Snapshots by creation time, then name (names carry the unix time).
func newer(a, b *backupv1.Snapshot) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// expired returns the completed Snapshots beyond the retention count, oldest last.
func (s snapshotSet) expired(retention int32) []backupv1.Snapshot {
	if retention < 1 {
		retention = 1
	}
	if int32(len(s.completed)) <= retention {
		return nil
	}
	return s.completed[retention:]
}

// nextSnapshotDue says when the next Snapshot is due: now when there is none,
// otherwise one interval after the newest one was created. A Snapshot still in
// progress postpones the next one (never two at once).
func nextSnapshotDue(b *backupv1.Backup, s snapshotSet, now time.Time) (due bool, wait time.Duration) {
	if b.Spec.Suspend {
		return false, 0
	}
	if len(s.pending) > 0 {
		return false, 0
	}
	if s.newest == nil {
		return true, 0
	}
	next := s.newest.CreationTimestamp.Add(interval(b))
	if !now.Before(next) {
		return true, 0
	}
	return false, next.Sub(now)
}

func interval(b *backupv1.Backup) time.Duration {
	sec := b.Spec.IntervalSeconds
	if sec <= 0 {
		sec = 3600
	}
	return time.Duration(sec) * time.Second
}

// desiredBackupStatus computes the Backup's status from its Snapshots and
// what is wrong with its spec (problem, nil when nothing is). It is pure: the
// same inputs give the same status, and LastTransitionTime only moves when a
// condition's status changes, so an up-to-date Backup gives a status equal to
// the one it has and the controller writes nothing.
func desiredBackupStatus(b *backupv1.Backup, s snapshotSet, problem *specProblem, now time.Time) backupv1.BackupStatus {
	st := *b.Status.DeepCopy()
	st.ObservedGeneration = b.Generation
	st.Snapshots = int32(s.live)
	st.CompletedSnapshots = int32(len(s.completed))
	st.LastSnapshot = nil
	if len(s.completed) > 0 {
		last := s.completed[0]
		st.LastSnapshot = &backupv1.SnapshotReference{Name: last.Name, CompletionTime: last.Status.CompletionTime}
	}

	scheduled := metav1.Condition{Type: backupv1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: backupv1.ReasonOnSchedule,
		Message: fmt.Sprintf("A snapshot is taken every %s", interval(b))}
	switch {
	case problem != nil:
		scheduled = metav1.Condition{Type: backupv1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: problem.reason,
			Message: "No snapshot is taken until the spec is fixed"}
	case b.Spec.Suspend:
		scheduled = metav1.Condition{Type: backupv1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: backupv1.ReasonSuspended,
			Message: "Snapshots are suspended"}
	}

	ready := readyCondition(b, s, problem)
	for _, c := range []metav1.Condition{ready, scheduled} {
		c.ObservedGeneration = b.Generation
		c.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// readyCondition summarises, most urgent first: a spec the operator cannot
// act on, a Snapshot that blocks the next ones, a failed Snapshot, the last
// completed one (empty or not), one in progress.
func readyCondition(b *backupv1.Backup, s snapshotSet, problem *specProblem) metav1.Condition {
	notReady := func(reason, msg string, args ...any) metav1.Condition {
		return metav1.Condition{Type: backupv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(msg, args...)}
	}
	newestDone := newestFinished(s)
	switch {
	case problem != nil:
		return notReady(problem.reason, "%s", problem.message)
	case blocking(s) != nil:
		p := blocking(s)
		c := meta.FindStatusCondition(p.Status.Conditions, backupv1.ConditionReady)
		return notReady(backupv1.ReasonSnapshotBlocked, "Snapshot %q cannot complete (%s: %s); no new snapshot is taken until it does or is deleted",
			p.Name, c.Reason, c.Message)
	case newestDone != nil && newestDone.Status.Phase == backupv1.SnapshotFailed:
		return notReady(backupv1.ReasonSnapshotFailed, "Snapshot %q failed", newestDone.Name)
	case len(s.completed) > 0 && s.completed[0].Status.ObjectCount == 0:
		return metav1.Condition{Type: backupv1.ConditionReady, Status: metav1.ConditionTrue, Reason: backupv1.ReasonNothingSelected,
			Message: fmt.Sprintf("Snapshot %q completed but is empty: spec.selector matches no %s of namespace %q",
				s.completed[0].Name, kindsText(b), b.Namespace)}
	case len(s.completed) > 0:
		return metav1.Condition{Type: backupv1.ConditionReady, Status: metav1.ConditionTrue, Reason: backupv1.ReasonSnapshotCompleted,
			Message: fmt.Sprintf("Snapshot %q completed", s.completed[0].Name)}
	case len(s.pending) > 0:
		return notReady(backupv1.ReasonSnapshotInProgress, "Snapshot %q is in progress", s.pending[0].Name)
	default:
		return notReady(backupv1.ReasonNoSnapshotYet, "No snapshot has completed yet")
	}
}

// blocking is the newest pending Snapshot when its last attempt failed: it
// will be retried, and until it completes no new Snapshot is taken.
func blocking(s snapshotSet) *backupv1.Snapshot {
	if len(s.pending) == 0 {
		return nil
	}
	p := &s.pending[0]
	if c := meta.FindStatusCondition(p.Status.Conditions, backupv1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse {
		return p
	}
	return nil
}

// kindsText names the kinds a Backup copies, for messages: "ConfigMap or Secret".
func kindsText(b *backupv1.Backup) string {
	kinds := b.Spec.Kinds
	if len(kinds) == 0 {
		kinds = []backupv1.BackupKind{backupv1.KindConfigMap, backupv1.KindSecret}
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, " or ")
}

// newestFinished is the newest Snapshot that completed or failed.
func newestFinished(s snapshotSet) *backupv1.Snapshot {
	var out *backupv1.Snapshot
	if len(s.completed) > 0 {
		out = &s.completed[0]
	}
	if len(s.failed) > 0 && (out == nil || newer(&s.failed[0], out)) {
		out = &s.failed[0]
	}
	return out
}
