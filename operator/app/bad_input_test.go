package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/controller"
)

// TestBadInputIsExplained creates, next to a Backup that works, Backups a user
// gets wrong: each is refused by the API server with a message naming the
// field, or shows Ready with a specific reason and a message naming the field
// (plus an Event when the user must act). The good Backup keeps taking
// snapshots throughout.
func TestBadInputIsExplained(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "badinput")
	createAppObjects(t, ns, "shop")
	o := testOptions(t)
	o.Namespaces = []string{ns}
	op, _ := startOperator(t, testCfg, o)
	good := newBackup(ns, "good", "shop")
	good.Spec.IntervalSeconds = 10
	if err := testClient.Create(ctx, good); err != nil {
		t.Fatal(err)
	}

	selector := func(f func(s *metav1.LabelSelector)) func(b *backupv1.Backup) {
		return func(b *backupv1.Backup) { f(&b.Spec.Selector) }
	}
	refused := []struct {
		name    string
		mutate  func(b *backupv1.Backup)
		wantErr []string
	}{
		{name: "refuses an unknown selector operator", wantErr: []string{"spec.selector.matchExpressions", "operator must be In, NotIn, Exists or DoesNotExist"},
			mutate: selector(func(s *metav1.LabelSelector) {
				s.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Foo", Values: []string{"shop"}}}
			})},
		{name: "refuses In without values", wantErr: []string{"spec.selector.matchExpressions", "values must be set for In and NotIn"},
			mutate: selector(func(s *metav1.LabelSelector) {
				s.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}
			})},
		{name: "refuses Exists with values", wantErr: []string{"spec.selector.matchExpressions", "empty for Exists and DoesNotExist"},
			mutate: selector(func(s *metav1.LabelSelector) {
				s.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists, Values: []string{"shop"}}}
			})},
		{name: "refuses a label value over 63 characters", wantErr: []string{"spec.selector.matchLabels", "at most 63 characters"},
			mutate: selector(func(s *metav1.LabelSelector) { s.MatchLabels = map[string]string{"app": strings.Repeat("x", 64)} })},
	}
	for i, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			b := newBackup(ns, fmt.Sprintf("refused-%d", i), "shop")
			c.mutate(b)
			err := testClient.Create(ctx, b)
			for _, want := range c.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("create: error %v, want a refusal saying %q", err, want)
				}
			}
		})
	}

	explained := []struct {
		name       string
		backup     string
		mutate     func(b *backupv1.Backup)
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    []string
		// wantEvent: a Warning Event with the reason, for what a user must act on.
		wantEvent bool
		// wantSnapshot: the Backup's Snapshot completes.
		wantSnapshot bool
	}{
		{name: "explains a label value the schema cannot check", backup: "bad-label-value",
			mutate:     selector(func(s *metav1.LabelSelector) { s.MatchLabels = map[string]string{"app": "bad value!"} }),
			wantStatus: metav1.ConditionFalse, wantReason: backupv1.ReasonInvalidSelector, wantMsg: []string{"spec.selector.matchLabels", "bad value!"}, wantEvent: true},
		{name: "explains a bad value in a selector expression", backup: "bad-expression-value",
			mutate: selector(func(s *metav1.LabelSelector) {
				s.MatchLabels = nil
				s.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"not ok"}}}
			}),
			wantStatus: metav1.ConditionFalse, wantReason: backupv1.ReasonInvalidSelector, wantMsg: []string{"spec.selector.matchExpressions[0].values[0]"}, wantEvent: true},
		{name: "explains a store the operator does not have", backup: "unknown-store",
			mutate:     func(b *backupv1.Backup) { b.Spec.StoreRef = &backupv1.StoreReference{Name: "offsite"} },
			wantStatus: metav1.ConditionFalse, wantReason: backupv1.ReasonStoreNotConfigured, wantMsg: []string{"spec.storeRef.name", `"offsite"`}, wantEvent: true},
		{name: "says when the selector matches nothing", backup: "matches-nothing",
			mutate:     selector(func(s *metav1.LabelSelector) { s.MatchLabels = map[string]string{"app": "nobody"} }),
			wantStatus: metav1.ConditionTrue, wantReason: backupv1.ReasonNothingSelected, wantMsg: []string{"empty", "spec.selector matches no ConfigMap or Secret"},
			wantEvent: true, wantSnapshot: true},
		{name: "backs up a Backup whose name is too long for a label", backup: strings.Repeat("long-name-", 10) + "x",
			wantStatus: metav1.ConditionTrue, wantReason: backupv1.ReasonSnapshotCompleted, wantSnapshot: true},
		{name: "backs up a Backup with the longest name", backup: strings.Repeat("n", 253),
			wantStatus: metav1.ConditionTrue, wantReason: backupv1.ReasonSnapshotCompleted, wantSnapshot: true},
	}
	for _, c := range explained {
		t.Run(c.name, func(t *testing.T) {
			b := newBackup(ns, c.backup, "shop")
			if c.mutate != nil {
				c.mutate(b)
			}
			if err := testClient.Create(ctx, b); err != nil {
				t.Fatalf("create: %v", err)
			}
			ready := waitForReady(ctx, t, b, c.wantReason)
			if ready.Status != c.wantStatus {
				t.Errorf("Ready = %s, want %s", ready.Status, c.wantStatus)
			}
			for _, want := range c.wantMsg {
				if !strings.Contains(ready.Message, want) {
					t.Errorf("Ready message %q does not say %q", ready.Message, want)
				}
			}
			if c.wantEvent {
				waitForEvent(ctx, t, b, c.wantReason)
			}
			snaps, err := snapshotsOf(ctx, ns, controller.BackupLabelValue(b.Name))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.wantSnapshot && (len(snaps) != 1 || snaps[0].Status.Phase != backupv1.SnapshotCompleted):
				t.Errorf("snapshots %v, want one completed", snapshotPhases(snaps))
			case !c.wantSnapshot && len(snaps) > 0:
				t.Errorf("snapshots %v of a Backup the operator cannot act on, want none", snapshotPhases(snaps))
			}
			for _, s := range snaps {
				if s.Status.Location != "" && len(s.Name+".tar.gz.sha256") > 255 {
					t.Errorf("snapshot name of %d characters makes a checksum file name over 255 bytes", len(s.Name))
				}
			}
		})
	}

	t.Run("recovers once the selector is fixed", func(t *testing.T) {
		b := &backupv1.Backup{}
		if err := testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bad-label-value"}, b); err != nil {
			t.Fatal(err)
		}
		orig := b.DeepCopy()
		b.Spec.Selector.MatchLabels = map[string]string{"app": "shop"}
		if err := testClient.Patch(ctx, b, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		waitForReady(ctx, t, b, backupv1.ReasonSnapshotCompleted)
	})

	t.Run("says a Snapshot the store keeps refusing blocks the Backup, and recovers", func(t *testing.T) {
		op.Store.SetFailing(true)
		b := newBackup(ns, "blocked", "shop")
		if err := testClient.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		ready := waitForReady(ctx, t, b, backupv1.ReasonSnapshotBlocked)
		for _, want := range []string{"cannot complete", backupv1.ReasonStoreError, "no new snapshot is taken"} {
			if !strings.Contains(ready.Message, want) {
				t.Errorf("Ready message %q does not say %q", ready.Message, want)
			}
		}
		waitForEvent(ctx, t, b, backupv1.ReasonSnapshotBlocked)
		op.Store.SetFailing(false)
		waitForReady(ctx, t, b, backupv1.ReasonSnapshotCompleted)
	})

	t.Run("the good Backup kept taking snapshots", func(t *testing.T) {
		eventually(t, 30*time.Second, "a second snapshot of the good Backup", func() (bool, error) {
			if err := testClient.Get(ctx, client.ObjectKeyFromObject(good), good); err != nil {
				return false, err
			}
			return backupReady(good) && good.Status.CompletedSnapshots >= 2, fmt.Errorf("status %+v", good.Status)
		})
	})
}

// waitForReady waits until b's Ready condition has reason and returns it.
func waitForReady(ctx context.Context, t *testing.T, b *backupv1.Backup, reason string) metav1.Condition {
	t.Helper()
	var ready metav1.Condition
	eventually(t, 30*time.Second, "Ready reason "+reason, func() (bool, error) {
		if err := testClient.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, backupv1.ConditionReady)
		if c == nil {
			return false, fmt.Errorf("no Ready condition")
		}
		ready = *c
		return c.Reason == reason && c.ObservedGeneration == b.Generation, fmt.Errorf("Ready %s/%s: %s", c.Status, c.Reason, c.Message)
	})
	return ready
}

// waitForEvent waits for a Warning Event about b with reason.
func waitForEvent(ctx context.Context, t *testing.T, b *backupv1.Backup, reason string) {
	t.Helper()
	eventually(t, 10*time.Second, "a Warning Event "+reason, func() (bool, error) {
		list := &eventsv1.EventList{}
		if err := testClient.List(ctx, list, client.InNamespace(b.Namespace)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == b.Name && e.Reason == reason && e.Type == "Warning" && e.ReportingController == EventSource {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events in the namespace", len(list.Items))
	})
}

func snapshotPhases(snaps []backupv1.Snapshot) []string {
	var out []string
	for _, s := range snaps {
		out = append(out, s.Name+"="+string(s.Status.Phase))
	}
	return out
}
