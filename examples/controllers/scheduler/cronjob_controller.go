// Package scheduler is a CronJob controller written the way the kubebuilder book's CronJob
// tutorial writes one, with plain controller-runtime: it lists its Jobs through a field index,
// rewrites its status on every reconcile with Update, deletes finished Jobs beyond the history
// limits, creates the Job that is due, and sleeps until the next run with RequeueAfter. It owns
// its Jobs, so every change of a Job (created, started, finished, deleted) wakes it: its reconcile
// rate comes in bursts around each schedule tick.
//
// It is not instrumented with loopwatch: loopwatch's rules see it through controller-runtime's
// own metrics only, like most controllers in a cluster. Faults are injected from outside, by
// package faults.
package scheduler

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ref "k8s.io/client-go/tools/reference"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	batchv1ex "github.com/loopwatch/loopwatch/examples/controllers/scheduler/api/v1"
)

// ControllerName is the controller's name: the `controller` label of its metrics.
const ControllerName = "cronjob"

// ScheduledTimeAnnotation records on each Job the time it was scheduled for.
const ScheduledTimeAnnotation = "batch.examples.loopwatch.dev/scheduled-at"

// jobOwnerKey indexes Jobs by the name of the CronJob that controls them.
const jobOwnerKey = ".metadata.controller"

// Clock tells the time; tests replace it.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// CronJobReconciler reconciles CronJobs.
type CronJobReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	Clock
}

// +kubebuilder:rbac:groups=batch.examples.loopwatch.dev,resources=cronjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch.examples.loopwatch.dev,resources=cronjobs/status,verbs=get;update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete

// Reconcile brings the CronJob's Jobs and status up to date and asks to be woken for its next run.
func (r *CronJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)

	var cronJob batchv1ex.CronJob
	if err := r.Get(ctx, req.NamespacedName, &cronJob); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	var childJobs batchv1.JobList
	if err := r.List(ctx, &childJobs, client.InNamespace(req.Namespace), client.MatchingFields{jobOwnerKey: req.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list child jobs: %w", err)
	}
	jobs := classify(childJobs.Items)

	// Status: the active Jobs and the last scheduled run, written on every pass as the tutorial
	// does. When nothing changed the API server makes no write and sends no watch event, but the
	// request is made.
	cronJob.Status.LastScheduleTime = nil
	if jobs.mostRecent != nil {
		cronJob.Status.LastScheduleTime = &metav1.Time{Time: *jobs.mostRecent}
	}
	cronJob.Status.Active = nil
	for _, job := range jobs.active {
		jobRef, err := ref.GetReference(r.Scheme, job)
		if err != nil {
			logger.Error(err, "Unable to make reference to active job", "job", job.Name)
			continue
		}
		cronJob.Status.Active = append(cronJob.Status.Active, *jobRef)
	}
	if err := r.Status().Update(ctx, &cronJob); err != nil {
		return ctrl.Result{}, fmt.Errorf("update status: %w", err)
	}

	// History: delete the oldest finished Jobs beyond the limits.
	for _, old := range beyondLimit(jobs.failed, cronJob.Spec.FailedJobsHistoryLimit) {
		if err := r.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			logger.Error(err, "Unable to delete old failed job", "job", old.Name)
		}
	}
	for _, old := range beyondLimit(jobs.successful, cronJob.Spec.SuccessfulJobsHistoryLimit) {
		if err := r.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			logger.Error(err, "Unable to delete old successful job", "job", old.Name)
		}
	}

	if cronJob.Spec.Suspend != nil && *cronJob.Spec.Suspend {
		return ctrl.Result{}, nil
	}

	now := r.Now()
	missedRun, nextRun, err := nextSchedule(&cronJob, now)
	if err != nil {
		// A schedule that does not parse will not parse on a retry either: wait for an edit.
		logger.Error(err, "Unable to figure out CronJob schedule")
		return ctrl.Result{}, nil
	}
	scheduled := ctrl.Result{RequeueAfter: nextRun.Sub(now)}
	if missedRun.IsZero() {
		return scheduled, nil
	}
	if d := cronJob.Spec.StartingDeadlineSeconds; d != nil && missedRun.Add(time.Duration(*d)*time.Second).Before(now) {
		logger.V(1).Info("Missed starting deadline for last run, sleeping till next", "missed", missedRun)
		return scheduled, nil
	}
	switch cronJob.Spec.ConcurrencyPolicy {
	case batchv1ex.ForbidConcurrent:
		if len(jobs.active) > 0 {
			return scheduled, nil
		}
	case batchv1ex.ReplaceConcurrent:
		for _, active := range jobs.active {
			if err := r.Delete(ctx, active, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("delete active job %s: %w", active.Name, err)
			}
		}
	}

	job, err := r.jobFor(&cronJob, missedRun)
	if err != nil {
		return scheduled, nil
	}
	if err := r.Create(ctx, job); client.IgnoreAlreadyExists(err) != nil {
		return ctrl.Result{}, fmt.Errorf("create job for run %s: %w", missedRun.Format(time.RFC3339), err)
	}
	logger.V(1).Info("Created Job for CronJob run", "job", job.Name)
	return scheduled, nil
}

// jobFor builds the Job of the run scheduled at t. Its name is derived from t, so a run is
// created once even when a stale cache makes a second pass believe it is still missing.
func (r *CronJobReconciler) jobFor(cronJob *batchv1ex.CronJob, t time.Time) (*batchv1.Job, error) {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{},
			Annotations: map[string]string{},
			Name:        fmt.Sprintf("%s-%d", cronJob.Name, t.Unix()),
			Namespace:   cronJob.Namespace,
		},
		Spec: *cronJob.Spec.JobTemplate.Spec.DeepCopy(),
	}
	for k, v := range cronJob.Spec.JobTemplate.Annotations {
		job.Annotations[k] = v
	}
	job.Annotations[ScheduledTimeAnnotation] = t.Format(time.RFC3339)
	for k, v := range cronJob.Spec.JobTemplate.Labels {
		job.Labels[k] = v
	}
	if err := ctrl.SetControllerReference(cronJob, job, r.Scheme); err != nil {
		return nil, err
	}
	return job, nil
}

// SetupWithManager registers the controller: CronJobs and the Jobs they own wake it, with no
// predicate, as `kubebuilder create api` scaffolds it.
func (r *CronJobReconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if r.Clock == nil {
		r.Clock = realClock{}
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &batchv1.Job{}, jobOwnerKey, func(obj client.Object) []string {
		owner := metav1.GetControllerOf(obj)
		if owner == nil || owner.APIVersion != batchv1ex.GroupVersion.String() || owner.Kind != "CronJob" {
			return nil
		}
		return []string{owner.Name}
	}); err != nil {
		return fmt.Errorf("index jobs by owner: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&batchv1ex.CronJob{}).
		Owns(&batchv1.Job{}).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(opts.wrap(r))
}

// childJobs are a CronJob's Jobs by state, and the latest time one was scheduled for.
type childJobs struct {
	active, successful, failed []*batchv1.Job
	mostRecent                 *time.Time
}

func classify(items []batchv1.Job) childJobs {
	var c childJobs
	for i := range items {
		job := &items[i]
		switch finishedType(job) {
		case "":
			c.active = append(c.active, job)
		case batchv1.JobFailed:
			c.failed = append(c.failed, job)
		case batchv1.JobComplete:
			c.successful = append(c.successful, job)
		}
		t, err := time.Parse(time.RFC3339, job.Annotations[ScheduledTimeAnnotation])
		if err != nil {
			continue
		}
		if c.mostRecent == nil || c.mostRecent.Before(t) {
			c.mostRecent = &t
		}
	}
	return c
}

// finishedType is JobComplete or JobFailed for a finished Job, "" while it runs.
func finishedType(job *batchv1.Job) batchv1.JobConditionType {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

// beyondLimit returns the oldest jobs beyond the newest limit ones; nil limit keeps all.
func beyondLimit(jobs []*batchv1.Job, limit *int32) []*batchv1.Job {
	if limit == nil || len(jobs) <= int(*limit) {
		return nil
	}
	sort.Slice(jobs, func(i, j int) bool {
		if jobs[i].Status.StartTime == nil {
			return jobs[j].Status.StartTime != nil
		}
		return jobs[j].Status.StartTime != nil && jobs[i].Status.StartTime.Before(jobs[j].Status.StartTime)
	})
	return jobs[:len(jobs)-int(*limit)]
}

// Options are how the controller is registered.
type Options struct {
	// MaxConcurrentReconciles is the number of workers; controller-runtime's default is 1.
	MaxConcurrentReconciles int
	// WrapReconciler, when set, decorates the reconciler the controller runs: tracing, or
	// behaviour injected from outside by tests.
	WrapReconciler func(reconcile.Reconciler) reconcile.Reconciler
}

func (o Options) wrap(r reconcile.Reconciler) reconcile.Reconciler {
	if o.WrapReconciler == nil {
		return r
	}
	return o.WrapReconciler(r)
}
