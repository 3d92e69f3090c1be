// Command legacycr runs one controller built with controller-runtime v0.18, the last release
// whose workqueue_* series carry the queue's name but no controller label, as many controllers
// in production still are. A source of its own adds five requests (object-0 to object-4) every
// --feed-interval, and a manager serves the metrics endpoint exactly as that version does.
//
// Without --kubeconfig it needs no API server: each reconcile takes about 2ms and reads nothing
// (TestWorkqueueControllerLabelOnRealScrapes). With one, it reconciles the ConfigMaps of that name
// in --namespace, read from the manager's cache, as a controller on a real cluster does, and the
// faults (faults.go: --fault-errors, --fault-slow, --fault-n-plus-one) break it from outside its
// reconciler (TestLegacyControllerDiagnosis).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// options are the command's flags.
type options struct {
	addr, name, kubeconfig, namespace string
	feed                              time.Duration
	faults                            faults
}

func main() {
	var o options
	flag.StringVar(&o.addr, "metrics-bind-address", "127.0.0.1:8080", "address the metrics endpoint listens on")
	flag.StringVar(&o.name, "controller", "legacy-probe", "name of the controller (and of its work queue)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of an API server whose ConfigMaps the controller reconciles; none: it reads nothing")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace of the ConfigMaps reconciled")
	flag.DurationVar(&o.feed, "feed-interval", 100*time.Millisecond, "how often the five requests are added to the queue")
	flag.BoolVar(&o.faults.errors, "fault-errors", false, "every reconcile fails")
	flag.DurationVar(&o.faults.slow, "fault-slow", 0, "every reconcile waits this long first")
	flag.BoolVar(&o.faults.nPlusOne, "fault-n-plus-one", false, "every reconcile lists the namespace's ConfigMaps and GETs each from the API server (needs --kubeconfig)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "legacycr:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Without an API server the manager connects to none: nothing reads or watches objects, and
	// v0.18 builds its client and REST mapper lazily.
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	if o.kubeconfig != "" {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig); err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
		// Above client-go's default of 5 requests a second: the N+1 fault's calls are the
		// controller's, not its client's throttling.
		cfg.QPS, cfg.Burst = 100, 200
	}
	mgr, err := manager.New(cfg, manager.Options{
		Metrics: metricsserver.Options{BindAddress: o.addr},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{o.namespace: {}}},
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	var r reconcile.Reconciler = reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		time.Sleep(2 * time.Millisecond)
		return reconcile.Result{}, nil
	})
	var reader client.Reader
	if o.kubeconfig != "" {
		r, reader = configMaps(mgr.GetClient()), mgr.GetAPIReader()
	}
	if r, err = o.faults.wrap(r, reader, o.namespace); err != nil {
		return err
	}
	c, err := controller.New(o.name, mgr, controller.Options{Reconciler: r})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	feed := source.Func(func(ctx context.Context, q workqueue.RateLimitingInterface) error {
		go func() {
			tick := time.NewTicker(o.feed)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					for i := range 5 {
						q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.namespace, Name: fmt.Sprint("object-", i)}})
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

// configMaps reconciles a ConfigMap by reading it from the manager's cache: a healthy
// controller's reads make no API request.
func configMaps(c client.Client) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, req.NamespacedName, &cm); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("get configmap %s: %w", req.NamespacedName, err)
		}
		return reconcile.Result{}, nil
	})
}
