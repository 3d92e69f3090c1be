package detect_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/loopwatch/loopwatch/examples/controllers/conditions/api/v1"
	batchv1ex "github.com/loopwatch/loopwatch/examples/controllers/scheduler/api/v1"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// The workload: what users and the other controllers of a cluster do around the controllers
// under test.

// everyMinute is the schedule of a team's CronJobs that all run on the same tick: each tick brings
// a burst of Job creations and, from the job runner, of Job status changes.
var everyMinute = []string{"* * * * *"}

// cronJobName and appConfigName name the i-th CronJob and AppConfig of a namespace.
func cronJobName(i int) string   { return fmt.Sprintf("report-%02d", i) }
func appConfigName(i int) string { return fmt.Sprintf("app-%02d", i) }

// cronJobs creates n CronJobs with the given schedules in turn.
func cronJobs(ctx context.Context, c client.Client, namespace string, n int, schedules []string) error {
	for i := range n {
		cj := &batchv1ex.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: cronJobName(i)},
			Spec: batchv1ex.CronJobSpec{
				Schedule:                   schedules[i%len(schedules)],
				SuccessfulJobsHistoryLimit: ptr.To[int32](3),
				FailedJobsHistoryLimit:     ptr.To[int32](1),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "report", Image: "registry.example/report:1.0", Args: []string{"--since=1m"}}},
				}}}},
			},
		}
		if err := c.Create(ctx, cj); err != nil {
			return fmt.Errorf("create CronJob: %w", err)
		}
	}
	return nil
}

// appConfigs creates configMaps ConfigMaps and n AppConfigs naming them in turn; every other
// AppConfig requires the key the config sync toggles, so its Ready condition really transitions.
func appConfigs(ctx context.Context, c client.Client, namespace string, n, configMaps int) error {
	for i := range configMaps {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("settings-%d", i)},
			Data:       map[string]string{"endpoint": "https://api.example", "timeout": "5s", toggledKey: "on"},
		}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("create ConfigMap: %w", err)
		}
	}
	for i := range n {
		keys := []string{"endpoint", "timeout"}
		if i%2 == 1 {
			keys = append(keys, toggledKey)
		}
		a := &configv1.AppConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: appConfigName(i)},
			Spec:       configv1.AppConfigSpec{ConfigMapName: fmt.Sprintf("settings-%d", i%configMaps), RequiredKeys: keys},
		}
		if err := c.Create(ctx, a); err != nil {
			return fmt.Errorf("create AppConfig: %w", err)
		}
	}
	return nil
}

// backups creates three labelled ConfigMaps and n Backups of them, for the reference operator.
func backups(ctx context.Context, c client.Client, namespace string, n int) error {
	for i := range 3 {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("settings-%d", i), Labels: map[string]string{"backup": "nightly"}},
			Data:       map[string]string{"value": fmt.Sprint(i)},
		}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("create ConfigMap: %w", err)
		}
	}
	for i := range n {
		b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("nightly-%d", i)}}
		b.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"backup": "nightly"}}
		if err := c.Create(ctx, b); err != nil {
			return fmt.Errorf("create Backup: %w", err)
		}
	}
	return nil
}

// Job runner timings: no kube-controller-manager runs here, so no pod runs either. The runner
// writes the Job status changes the Job controller would write for a pod that starts a second
// after the Job is created, is ready a second later and succeeds four seconds after it started.
const (
	jobStartAfter   = time.Second
	jobReadyAfter   = time.Second
	jobSucceedAfter = 4 * time.Second
)

// runJobs plays kube-controller-manager's Job controller for the Jobs of the namespaces with
// prefix, as its own service account, until ctx ends.
func runJobs(ctx context.Context, c client.Client, prefix string, logf func(string, ...any)) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var jobs batchv1.JobList
		if err := c.List(ctx, &jobs); err != nil {
			if ctx.Err() == nil {
				logf("job runner: list jobs: %v", err)
			}
			continue
		}
		now := time.Now()
		for i := range jobs.Items {
			job := &jobs.Items[i]
			if !strings.HasPrefix(job.Namespace, prefix) || !advanceJob(job, now) {
				continue
			}
			if err := c.Status().Update(ctx, job); client.IgnoreNotFound(err) != nil && ctx.Err() == nil {
				logf("job runner: update %s/%s: %v", job.Namespace, job.Name, err)
			}
		}
	}
}

// advanceJob moves a Job's status one step (started, ready, succeeded) when its time has come,
// and reports whether it changed.
func advanceJob(job *batchv1.Job, now time.Time) bool {
	st := &job.Status
	switch {
	case st.CompletionTime != nil:
		return false
	case st.StartTime == nil:
		if now.Sub(job.CreationTimestamp.Time) < jobStartAfter {
			return false
		}
		st.StartTime = &metav1.Time{Time: now}
		st.Active = 1
		st.Ready = ptr.To[int32](0)
		st.Terminating = ptr.To[int32](0)
		return true
	case ptr.Deref(st.Ready, 0) == 0 && st.Active == 1:
		if now.Sub(st.StartTime.Time) < jobReadyAfter {
			return false
		}
		st.Ready = ptr.To[int32](1)
		return true
	default:
		if now.Sub(st.StartTime.Time) < jobSucceedAfter {
			return false
		}
		t := metav1.Time{Time: now}
		st.Active, st.Ready, st.Succeeded = 0, ptr.To[int32](0), 1
		st.CompletionTime = &t
		st.Conditions = append(st.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, Message: "Reached expected number of succeeded pods", LastProbeTime: t, LastTransitionTime: t},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, Message: "Reached expected number of succeeded pods", LastProbeTime: t, LastTransitionTime: t},
		)
		return true
	}
}

// toggledKey is the ConfigMap key the config sync adds and removes.
const toggledKey = "feature-x"

// syncConfig plays a GitOps tool for the namespaces with prefix, as its own service account:
// every period it applies a new revision of one ConfigMap (round robin; every other revision
// removes or restores toggledKey) and stamps the revision on the AppConfigs that use it. The
// AppConfig controller reacts to both writes at once, and its status Updates, made from the
// object it read before the stamp, are sometimes answered 409 Conflict.
func syncConfig(ctx context.Context, c client.Client, namespaces []string, configMaps int, period time.Duration, logf func(string, ...any)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for rev := 1; ; rev++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, ns := range namespaces {
			if err := syncRevision(ctx, c, ns, fmt.Sprintf("settings-%d", rev%configMaps), rev); err != nil && ctx.Err() == nil {
				logf("config sync: %s: %v", ns, err)
			}
		}
	}
}

func syncRevision(ctx context.Context, c client.Client, namespace, name string, rev int) error {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		return err
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["revision"] = fmt.Sprint(rev)
	if rev/3%2 == 1 {
		delete(cm.Data, toggledKey)
	} else {
		cm.Data[toggledKey] = "on"
	}
	if err := c.Patch(ctx, cm, patch); err != nil {
		return fmt.Errorf("patch ConfigMap %s: %w", name, err)
	}
	var apps configv1.AppConfigList
	if err := c.List(ctx, &apps, client.InNamespace(namespace)); err != nil {
		return err
	}
	for i := range apps.Items {
		a := &apps.Items[i]
		if a.Spec.ConfigMapName != name {
			continue
		}
		patch := client.MergeFrom(a.DeepCopy())
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		a.Annotations["sync.examples.loopwatch.dev/revision"] = fmt.Sprint(rev)
		if err := c.Patch(ctx, a, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("stamp AppConfig %s: %w", a.Name, err)
		}
	}
	return nil
}
