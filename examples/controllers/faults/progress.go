package faults

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StampedCondition wraps c so that every status Update rewrites condition condType with the time
// of the pass: its lastTransitionTime set to now and its message naming the moment it was
// checked, as a reconciler does that builds its conditions afresh with metav1.Now() and a
// "checked at" message instead of meta.SetStatusCondition. Every Update then changes the
// object, and each change wakes a controller that watches it without a predicate. conditions
// returns the object's condition list, or nil for kinds it does not apply to.
func StampedCondition(c client.Client, condType string, conditions func(client.Object) *[]metav1.Condition, clk clock.PassiveClock) client.Client {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &stampingClient{Client: c, condType: condType, conditions: conditions, clock: clk}
}

type stampingClient struct {
	client.Client
	condType   string
	conditions func(client.Object) *[]metav1.Condition
	clock      clock.PassiveClock
}

func (c *stampingClient) Status() client.SubResourceWriter {
	return &stampingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type stampingStatus struct {
	client.SubResourceWriter
	c *stampingClient
}

func (s *stampingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if conds := s.c.conditions(obj); conds != nil {
		if cond := meta.FindStatusCondition(*conds, s.c.condType); cond != nil {
			now := s.c.clock.Now()
			cond.LastTransitionTime = metav1.NewTime(now)
			cond.Message = "checked at " + now.UTC().Format(time.RFC3339Nano)
		}
	}
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}
