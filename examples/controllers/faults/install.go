package faults

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	configv1 "github.com/loopwatch/loopwatch/examples/controllers/conditions/api/v1"
	batchv1ex "github.com/loopwatch/loopwatch/examples/controllers/scheduler/api/v1"
)

// ForScheduler returns the decorator that puts m around the CronJob reconciler, nil when every
// mode is off. Its N+1 reads are the namespace's CronJobs, read from the API server.
func ForScheduler(mgr manager.Manager, m Modes) Decorator {
	ds := common(mgr, m, func() client.ObjectList { return &batchv1ex.CronJobList{} })
	if m.HotLoop {
		ds = append(ds, TimestampAnnotation(mgr.GetClient(), func() client.Object { return &batchv1ex.CronJob{} }, nil))
	}
	if len(ds) == 0 {
		return nil
	}
	return Chain(ds...)
}

// ForConditions returns the decorator that puts m around the AppConfig reconciler (nil when no
// reconciler-side mode is on) and the client the reconciler must use (mgr's, wrapped by
// StampedCondition in HotLoop mode). Its N+1 reads are the namespace's AppConfigs.
func ForConditions(mgr manager.Manager, m Modes) (Decorator, client.Client) {
	c := mgr.GetClient()
	if m.HotLoop {
		c = StampedCondition(c, configv1.ConditionReady, func(o client.Object) *[]metav1.Condition {
			if a, ok := o.(*configv1.AppConfig); ok {
				return &a.Status.Conditions
			}
			return nil
		}, nil)
	}
	ds := common(mgr, m, func() client.ObjectList { return &configv1.AppConfigList{} })
	if len(ds) == 0 {
		return nil, c
	}
	return Chain(ds...), c
}

// common are the modes both controllers get the same way, outermost first: the call that never
// returns comes first, a failing dependency is found before the slow call, which comes before
// the reads.
func common(mgr manager.Manager, m Modes, newList func() client.ObjectList) []Decorator {
	var ds []Decorator
	if m.Hang != "" {
		ds = append(ds, Hang(m.Hang))
	}
	if m.Errors {
		ds = append(ds, Failing())
	}
	if m.Slow > 0 {
		ds = append(ds, Slow(m.Slow))
	}
	if m.NPlusOne {
		ds = append(ds, NPlusOne(mgr.GetAPIReader(), newList))
	}
	return ds
}
