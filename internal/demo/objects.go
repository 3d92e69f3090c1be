package demo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// Backups describes a set of Backups a scene creates, with the ConfigMaps they select.
type Backups struct {
	// Prefix names them <prefix>-<i>; their ConfigMaps are <prefix>-settings-<i>.
	Prefix string
	// N is how many.
	N int
	// IntervalSeconds is their schedule (0: hourly).
	IntervalSeconds int32
	// Suspend keeps them from taking snapshots.
	Suspend bool
}

func (b Backups) backup(ns string, i int) *backupv1.Backup {
	x := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", b.Prefix, i)}}
	x.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"backup": b.Prefix}}
	x.Spec.IntervalSeconds = b.IntervalSeconds
	x.Spec.Suspend = b.Suspend
	return x
}

// Create creates the ConfigMaps and the Backups.
func (s *Scene) Create(ctx context.Context, b Backups) error {
	if err := s.configMaps(ctx, b.Prefix); err != nil {
		return err
	}
	for i := range b.N {
		if err := s.c.kube.Create(ctx, b.backup(s.Namespace, i)); err != nil {
			return fmt.Errorf("create Backup: %w", err)
		}
	}
	return nil
}

func (s *Scene) configMaps(ctx context.Context, prefix string) error {
	for i := range 3 {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: fmt.Sprintf("%s-settings-%d", prefix, i), Labels: map[string]string{"backup": prefix}},
			Data:       map[string]string{"value": strconv.Itoa(i)},
		}
		if err := s.c.kube.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ConfigMap: %w", err)
		}
	}
	return nil
}

// CreateEvery creates the Backups one every interval in the background: a user or a tool
// creating objects at a steady rate.
func (s *Scene) CreateEvery(b Backups, interval time.Duration) {
	s.Go("creating Backups", func(ctx context.Context) error {
		if err := s.configMaps(ctx, b.Prefix); err != nil {
			return err
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := range b.N {
			if err := s.c.kube.Create(ctx, b.backup(s.Namespace, i)); err != nil {
				return fmt.Errorf("create Backup: %w", err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		return nil
	})
}

// EditEvery changes the retention of one of the Backups every interval, round robin, in the
// background: a user editing specs.
func (s *Scene) EditEvery(b Backups, interval time.Duration) {
	s.Go("editing Backups", func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			x := &backupv1.Backup{}
			if err := s.c.kube.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: fmt.Sprintf("%s-%d", b.Prefix, i%b.N)}, x); err != nil {
				return err
			}
			orig := x.DeepCopy()
			x.Spec.Retention = 3 + int32(i/b.N)%2
			if err := s.c.kube.Patch(ctx, x, client.MergeFrom(orig)); err != nil {
				return fmt.Errorf("edit Backup: %w", err)
			}
		}
	})
}

// Delete deletes Backup prefix-i.
func (s *Scene) Delete(ctx context.Context, b Backups, i int) error {
	if err := s.c.kube.Delete(ctx, b.backup(s.Namespace, i)); err != nil {
		return fmt.Errorf("delete Backup: %w", err)
	}
	return nil
}

// WaitReady waits until n Backups of the scene are Ready.
func (s *Scene) WaitReady(ctx context.Context, n int) error {
	var ready int
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list backupv1.BackupList
		if err := s.c.kube.List(ctx, &list, client.InNamespace(s.Namespace)); err != nil {
			return false, err
		}
		ready = 0
		for _, b := range list.Items {
			if meta.IsStatusConditionTrue(b.Status.Conditions, backupv1.ConditionReady) {
				ready++
			}
		}
		return ready >= n, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d Backups Ready: %w", ready, n, err)
	}
	s.say("%d Backups Ready", ready)
	return nil
}

// WaitFinalizer waits until Backup prefix-i carries the operator's finalizer.
func (s *Scene) WaitFinalizer(ctx context.Context, b Backups, i int) error {
	key := client.ObjectKeyFromObject(b.backup(s.Namespace, i))
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		x := &backupv1.Backup{}
		if err := s.c.kube.Get(ctx, key, x); err != nil {
			return false, err
		}
		for _, f := range x.Finalizers {
			if f == backupv1.BackupFinalizer {
				return true, nil
			}
		}
		return false, nil
	})
}

// touch writes a ConfigMap in the default namespace: a write the audit webhook reports.
func (c *Cluster) touch(ctx context.Context) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "loopwatch-demo-heartbeat"}}
	cm.Data = map[string]string{"at": time.Now().UTC().Format(time.RFC3339Nano)}
	err := c.kube.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		err = c.kube.Update(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("write heartbeat ConfigMap: %w", err)
	}
	return nil
}
