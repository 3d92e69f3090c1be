package faults

import (
	"testing"

	"k8s.io/client-go/util/workqueue"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The unregistered queue works as a queue, and nothing of it reaches the registry the manager
// serves.
func TestUnregisteredQueueExportsNoWorkqueueSeries(t *testing.T) {
	q := unregisteredQueue("faults-test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	req := reconcile.Request{}
	req.Name = "b"
	q.Add(req)
	if got, _ := q.Get(); got != req {
		t.Fatalf("got %v, want %v", got, req)
	}
	q.Done(req)
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == "faults-test" {
					t.Errorf("%s has a series of the unregistered queue", f.GetName())
				}
			}
		}
	}
}
