package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// defaultNPlusOneFanout is the "50 API calls per object" of the N+1 mode.
const defaultNPlusOneFanout = 50

// BackupDecorator puts the reconciler-side faults around the reference Backup
// reconciler: the N+1 reads before each reconcile, the hot loop's timestamp
// and the fight's annotation after it. Its Wrap method has the signature of
// controller.ControllerOptions.WrapReconciler.
type BackupDecorator struct {
	// Modes says which faults are on; only HotLoop, NPlusOne and Fight act here.
	Modes Modes
	// APIReader reads straight from the API server for NPlusOne; instrument it
	// under the Backup controller's name so its calls count there.
	APIReader client.Reader
	// Clock stamps the hot loop's annotation. Defaults to the real clock.
	Clock clock.PassiveClock
}

// Wrap returns inner unchanged when no reconciler-side fault is on. The
// decorator writes through c, the client inner uses, so its writes count
// under the same controller.
func (d BackupDecorator) Wrap(c client.Client, inner reconcile.Reconciler) reconcile.Reconciler {
	m := d.Modes
	if !m.HotLoop && !m.NPlusOne && !m.Fight {
		return inner
	}
	if m.NPlusOneFanout <= 0 {
		m.NPlusOneFanout = defaultNPlusOneFanout
	}
	clk := d.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &faultyBackupReconciler{inner: inner, client: c, apiReader: d.APIReader, modes: m, clock: clk}
}

type faultyBackupReconciler struct {
	inner     reconcile.Reconciler
	client    client.Client
	apiReader client.Reader
	modes     Modes
	clock     clock.PassiveClock
}

func (r *faultyBackupReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.modes.NPlusOne {
		if err := r.readEveryBackup(ctx, req.Namespace); err != nil {
			return reconcile.Result{}, err
		}
	}
	res, err := r.inner.Reconcile(ctx, req)
	if werr := r.writeAnnotations(ctx, req.NamespacedName); werr != nil {
		return reconcile.Result{}, errors.Join(err, werr)
	}
	return res, err
}

// readEveryBackup is the N+1 controller's reads: list every Backup of the
// namespace from the API server, then GET each one, uncached.
func (r *faultyBackupReconciler) readEveryBackup(ctx context.Context, namespace string) error {
	all := &backupv1.BackupList{}
	if err := r.apiReader.List(ctx, all, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("list all backups of %q: %w", namespace, err)
	}
	for i := range all.Items {
		if i >= r.modes.NPlusOneFanout {
			break
		}
		other := &backupv1.Backup{}
		if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(&all.Items[i]), other); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("get backup %s/%s: %w", all.Items[i].Namespace, all.Items[i].Name, err)
		}
	}
	return nil
}

// writeAnnotations patches the hot loop's timestamp and resets the fight's
// annotation, in one patch, on a Backup that exists and is not being deleted.
func (r *faultyBackupReconciler) writeAnnotations(ctx context.Context, key client.ObjectKey) error {
	if !r.modes.HotLoop && !r.modes.Fight {
		return nil
	}
	b := &backupv1.Backup{}
	if err := r.client.Get(ctx, key, b); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return nil
	}
	orig := b.DeepCopy()
	ann := b.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	changed := false
	if r.modes.HotLoop {
		ann[HotLoopAnnotation] = r.clock.Now().UTC().Format(time.RFC3339Nano)
		changed = true
	}
	if r.modes.Fight && ann[FightAnnotation] != ControllerTier {
		ann[FightAnnotation] = ControllerTier
		changed = true
	}
	if !changed {
		return nil
	}
	b.SetAnnotations(ann)
	if err := r.client.Patch(ctx, b, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("patch annotations of %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// backupSources are the watches the modes add beside the Backup controller's
// own, whose predicates let no metadata change through. The hot loop watches
// Backups with no predicate at all, which is the bug: its own annotation
// write wakes it. The fight watches annotation changes, so each of the
// fighter's writes wakes the controller, which sets the value back.
func (m Modes) backupSources(c cache.Cache) []source.Source {
	var srcs []source.Source
	switch {
	case m.HotLoop:
		srcs = append(srcs, source.Kind(c, &backupv1.Backup{}, &handler.TypedEnqueueRequestForObject[*backupv1.Backup]{}))
	case m.Fight:
		srcs = append(srcs, source.Kind(c, &backupv1.Backup{}, &handler.TypedEnqueueRequestForObject[*backupv1.Backup]{},
			predicate.TypedAnnotationChangedPredicate[*backupv1.Backup]{}))
	}
	return srcs
}
