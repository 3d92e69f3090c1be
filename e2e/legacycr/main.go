// Command legacycr runs one controller built with controller-runtime v0.18, the last release
// whose workqueue_* series carry the queue's name but no controller label, as many controllers
// in production still are. It needs no API server: a source of its own adds five requests every
// 100ms, each reconciled in about 2ms, and a manager serves the metrics endpoint exactly as
// that version does. The e2e test TestWorkqueueControllerLabelOnRealScrapes runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

func main() {
	addr := flag.String("metrics-bind-address", "127.0.0.1:8080", "address the metrics endpoint listens on")
	name := flag.String("controller", "legacy-probe", "name of the controller (and of its work queue)")
	flag.Parse()
	if err := run(*addr, *name); err != nil {
		fmt.Fprintln(os.Stderr, "legacycr:", err)
		os.Exit(1)
	}
}

func run(addr, name string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The manager connects to no API server: nothing here reads or watches objects, and
	// v0.18 builds its client and REST mapper lazily.
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Metrics: metricsserver.Options{BindAddress: addr},
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		time.Sleep(2 * time.Millisecond)
		return reconcile.Result{}, nil
	})
	c, err := controller.New(name, mgr, controller.Options{Reconciler: r})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	feed := source.Func(func(ctx context.Context, q workqueue.RateLimitingInterface) error {
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					for i := range 5 {
						q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: fmt.Sprint("object-", i)}})
					}
				}
			}
		}()
		return nil
	})
	if err := c.Watch(feed); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return mgr.Start(ctx)
}
