// Package crtest runs controllers of the pinned controller-runtime inside a test process, without
// a manager or an API server: the test fills their work queues, and they record their reconciles
// and queues into controller-runtime's metrics registry as a manager's controllers do.
package crtest

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Queue is a controller's work queue, as its sources see it.
type Queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Start starts an unmanaged controller called name that reconciles with r, and calls feed once,
// as it starts, with the controller's context and work queue (feed may start a goroutine that
// keeps adding until the context ends). The controller runs until ctx ends; the function
// returned waits for that and returns the controller's error, if it is not ctx's cancellation.
func Start(ctx context.Context, name string, r reconcile.Reconciler, feed func(context.Context, Queue)) (wait func() error, err error) {
	c, err := controller.NewTypedUnmanaged(name, controller.TypedOptions[reconcile.Request]{
		Reconciler:         r,
		SkipNameValidation: ptr.To(true),
		LogConstructor:     func(*reconcile.Request) logr.Logger { return logr.Discard() },
	})
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", name, err)
	}
	if err := c.Watch(source.Func(func(ctx context.Context, q Queue) error {
		feed(ctx, q)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("controller %s: watch: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	return func() error {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		return nil
	}, nil
}
