package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)

func snap(name string, created time.Time, phase backupv1.SnapshotPhase) backupv1.Snapshot {
	s := backupv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	s.Status.Phase = phase
	if phase == backupv1.SnapshotCompleted {
		ct := metav1.NewTime(created.Add(time.Second))
		s.Status.CompletionTime = &ct
		s.Status.ObjectCount = 2
	}
	return s
}

func deleting(s backupv1.Snapshot) backupv1.Snapshot {
	ts := metav1.NewTime(t0)
	s.DeletionTimestamp = &ts
	return s
}

func backup(interval, retention int32, suspend bool) *backupv1.Backup {
	return &backupv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 3},
		Spec:       backupv1.BackupSpec{IntervalSeconds: interval, Retention: retention, Suspend: suspend},
	}
}

func TestNextSnapshotDue(t *testing.T) {
	cases := []struct {
		name     string
		b        *backupv1.Backup
		snaps    []backupv1.Snapshot
		now      time.Time
		wantDue  bool
		wantWait time.Duration
	}{
		{name: "takes the first snapshot at once", b: backup(60, 5, false), now: t0, wantDue: true},
		{name: "waits one interval after the newest snapshot", b: backup(60, 5, false),
			snaps: []backupv1.Snapshot{snap("b-1", t0.Add(-20*time.Second), backupv1.SnapshotCompleted)}, now: t0, wantWait: 40 * time.Second},
		{name: "is due exactly one interval later", b: backup(60, 5, false),
			snaps: []backupv1.Snapshot{snap("b-1", t0.Add(-60*time.Second), backupv1.SnapshotCompleted)}, now: t0, wantDue: true},
		{name: "never overlaps a snapshot in progress", b: backup(60, 5, false),
			snaps: []backupv1.Snapshot{snap("b-1", t0.Add(-time.Hour), backupv1.SnapshotPending)}, now: t0},
		{name: "takes nothing while suspended", b: backup(60, 5, true), now: t0},
		{name: "ignores snapshots being deleted", b: backup(60, 5, false),
			snaps: []backupv1.Snapshot{deleting(snap("b-1", t0.Add(-time.Second), backupv1.SnapshotCompleted))}, now: t0, wantDue: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			due, wait := nextSnapshotDue(c.b, classifySnapshots(c.snaps), c.now)
			if due != c.wantDue || wait != c.wantWait {
				t.Errorf("nextSnapshotDue = (%v, %v), want (%v, %v)", due, wait, c.wantDue, c.wantWait)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	snaps := []backupv1.Snapshot{
		snap("b-3", t0.Add(-1*time.Minute), backupv1.SnapshotCompleted),
		snap("b-1", t0.Add(-3*time.Minute), backupv1.SnapshotCompleted),
		snap("b-2", t0.Add(-2*time.Minute), backupv1.SnapshotCompleted),
		snap("b-4", t0, backupv1.SnapshotPending),
	}
	cases := []struct {
		name      string
		retention int32
		want      []string
	}{
		{name: "keeps everything within retention", retention: 3},
		{name: "deletes the oldest completed beyond retention", retention: 2, want: []string{"b-1"}},
		{name: "keeps at least one", retention: 0, want: []string{"b-2", "b-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, s := range classifySnapshots(snaps).expired(c.retention) {
				got = append(got, s.Name)
			}
			if len(got) != len(c.want) {
				t.Fatalf("expired = %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("expired = %v, want %v", got, c.want)
				}
			}
		})
	}
}

// storeFailed is a pending Snapshot whose last store write failed.
func storeFailed(s backupv1.Snapshot) backupv1.Snapshot {
	setSnapshotConditions(&s.Status, 1, t0, metav1.ConditionFalse, backupv1.ReasonStoreError, "put archive: connection refused")
	return s
}

// empty is a completed Snapshot with no object in it.
func empty(s backupv1.Snapshot) backupv1.Snapshot {
	s.Status.ObjectCount = 0
	return s
}

func TestDesiredBackupStatus(t *testing.T) {
	badSelector := &specProblem{reason: backupv1.ReasonInvalidSelector, message: "spec.selector.matchLabels: Invalid value"}
	cases := []struct {
		name          string
		snaps         []backupv1.Snapshot
		suspend       bool
		problem       *specProblem
		wantReady     metav1.ConditionStatus
		wantReason    string
		wantMessage   string
		wantScheduled string
		wantLast      string
	}{
		{name: "is not ready before any snapshot", wantReady: metav1.ConditionFalse, wantReason: backupv1.ReasonNoSnapshotYet},
		{name: "is not ready while the first snapshot runs", snaps: []backupv1.Snapshot{snap("b-1", t0, backupv1.SnapshotPending)},
			wantReady: metav1.ConditionFalse, wantReason: backupv1.ReasonSnapshotInProgress},
		{name: "is ready once a snapshot completed", snaps: []backupv1.Snapshot{snap("b-1", t0, backupv1.SnapshotCompleted)},
			wantReady: metav1.ConditionTrue, wantReason: backupv1.ReasonSnapshotCompleted, wantLast: "b-1"},
		{name: "stays ready while the next snapshot runs", snaps: []backupv1.Snapshot{
			snap("b-1", t0.Add(-time.Hour), backupv1.SnapshotCompleted), snap("b-2", t0, backupv1.SnapshotPending)},
			wantReady: metav1.ConditionTrue, wantReason: backupv1.ReasonSnapshotCompleted, wantLast: "b-1"},
		{name: "is not ready when the newest finished snapshot failed", snaps: []backupv1.Snapshot{
			snap("b-1", t0.Add(-time.Hour), backupv1.SnapshotCompleted), snap("b-2", t0, backupv1.SnapshotFailed)},
			wantReady: metav1.ConditionFalse, wantReason: backupv1.ReasonSnapshotFailed, wantLast: "b-1"},
		{name: "says the spec is invalid, with the field, and that nothing is scheduled", problem: badSelector,
			wantReady: metav1.ConditionFalse, wantReason: backupv1.ReasonInvalidSelector, wantMessage: "spec.selector.matchLabels",
			wantScheduled: backupv1.ReasonInvalidSelector},
		{name: "puts an invalid spec before an older completed snapshot", problem: badSelector,
			snaps:     []backupv1.Snapshot{snap("b-1", t0.Add(-time.Hour), backupv1.SnapshotCompleted)},
			wantReady: metav1.ConditionFalse, wantReason: backupv1.ReasonInvalidSelector, wantScheduled: backupv1.ReasonInvalidSelector, wantLast: "b-1"},
		{name: "says a failing snapshot blocks the next ones", snaps: []backupv1.Snapshot{storeFailed(snap("b-1", t0, backupv1.SnapshotPending))},
			wantReady: metav1.ConditionFalse, wantReason: backupv1.ReasonSnapshotBlocked, wantMessage: `Snapshot "b-1" cannot complete (StoreError: put archive: connection refused)`},
		{name: "is not ready while a failing snapshot blocks, even after an older success", snaps: []backupv1.Snapshot{
			snap("b-1", t0.Add(-time.Hour), backupv1.SnapshotCompleted), storeFailed(snap("b-2", t0, backupv1.SnapshotPending))},
			wantReady: metav1.ConditionFalse, wantReason: backupv1.ReasonSnapshotBlocked, wantLast: "b-1"},
		{name: "is ready but says when the selector matched nothing", snaps: []backupv1.Snapshot{empty(snap("b-1", t0, backupv1.SnapshotCompleted))},
			wantReady: metav1.ConditionTrue, wantReason: backupv1.ReasonNothingSelected, wantLast: "b-1",
			wantMessage: `Snapshot "b-1" completed but is empty: spec.selector matches no ConfigMap or Secret of namespace "ns"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := backup(60, 5, c.suspend)
			st := desiredBackupStatus(b, classifySnapshots(c.snaps), c.problem, t0)
			ready := meta.FindStatusCondition(st.Conditions, backupv1.ConditionReady)
			if ready == nil || ready.Status != c.wantReady || ready.Reason != c.wantReason {
				t.Fatalf("Ready = %+v, want %s/%s", ready, c.wantReady, c.wantReason)
			}
			if !strings.Contains(ready.Message, c.wantMessage) {
				t.Errorf("Ready message %q does not say %q", ready.Message, c.wantMessage)
			}
			wantScheduled := c.wantScheduled
			if wantScheduled == "" {
				wantScheduled = backupv1.ReasonOnSchedule
			}
			if sc := meta.FindStatusCondition(st.Conditions, backupv1.ConditionScheduled); sc == nil || sc.Reason != wantScheduled {
				t.Errorf("Scheduled = %+v, want reason %s", sc, wantScheduled)
			}
			for _, cond := range st.Conditions {
				if cond.ObservedGeneration != b.Generation {
					t.Errorf("condition %s observedGeneration = %d, want %d", cond.Type, cond.ObservedGeneration, b.Generation)
				}
			}
			if st.ObservedGeneration != b.Generation {
				t.Errorf("observedGeneration = %d, want %d", st.ObservedGeneration, b.Generation)
			}
			last := ""
			if st.LastSnapshot != nil {
				last = st.LastSnapshot.Name
			}
			if last != c.wantLast {
				t.Errorf("lastSnapshot = %q, want %q", last, c.wantLast)
			}
		})
	}
}

func TestDesiredBackupStatusIsStableWhenNothingChanged(t *testing.T) {
	b := backup(60, 5, false)
	snaps := classifySnapshots([]backupv1.Snapshot{snap("b-1", t0, backupv1.SnapshotCompleted)})
	b.Status = desiredBackupStatus(b, snaps, nil, t0)
	again := desiredBackupStatus(b, snaps, nil, t0.Add(time.Hour))
	if !equality.Semantic.DeepEqual(b.Status, again) {
		t.Fatalf("status changed an hour later with nothing new:\n%+v\n%+v", b.Status, again)
	}
}
