package faults

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProgressCondition wraps c so that every status Update first writes condition condType as
// Unknown with reason Reconciling, then the update the controller asked for. That is what a
// reconciler that marks itself "in progress" at the start of each pass writes: the condition's
// status, and so its lastTransitionTime, changes twice per pass, and each change wakes a
// controller that watches the object without a predicate. conditions returns the object's
// condition list, or nil for kinds it does not apply to.
func ProgressCondition(c client.Client, condType string, conditions func(client.Object) *[]metav1.Condition) client.Client {
	return &progressClient{Client: c, condType: condType, conditions: conditions}
}

type progressClient struct {
	client.Client
	condType   string
	conditions func(client.Object) *[]metav1.Condition
}

func (c *progressClient) Status() client.SubResourceWriter {
	return &progressStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type progressStatus struct {
	client.SubResourceWriter
	c *progressClient
}

func (s *progressStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if s.c.conditions(obj) == nil {
		return s.SubResourceWriter.Update(ctx, obj, opts...)
	}
	marked := obj.DeepCopyObject().(client.Object)
	meta.SetStatusCondition(s.c.conditions(marked), metav1.Condition{
		Type: s.c.condType, Status: metav1.ConditionUnknown, ObservedGeneration: obj.GetGeneration(),
		Reason: ReasonReconciling, Message: "reconcile in progress",
	})
	if err := s.SubResourceWriter.Update(ctx, marked); err != nil {
		return fmt.Errorf("mark %s %s: %w", s.c.condType, ReasonReconciling, err)
	}
	obj.SetResourceVersion(marked.GetResourceVersion())
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}
