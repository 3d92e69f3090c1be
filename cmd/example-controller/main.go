// Command example-controller runs one of loopwatch's example controllers — written with plain
// controller-runtime, in the styles users write, and not instrumented with loopwatch — the way a
// kubebuilder-scaffolded main.go runs one: a manager with controller-runtime's metrics endpoint,
// health probes and optional leader election. Fault flags (off by default) break the controller
// from outside (package examples/controllers/faults).
//
//	example-controller --controller=cronjob     # a scheduler of Jobs (kubebuilder's CronJob tutorial)
//	example-controller --controller=appconfig   # status conditions kept with Update and meta.SetStatusCondition
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/loopwatch/loopwatch/examples/controllers/conditions"
	configv1 "github.com/loopwatch/loopwatch/examples/controllers/conditions/api/v1"
	"github.com/loopwatch/loopwatch/examples/controllers/faults"
	"github.com/loopwatch/loopwatch/examples/controllers/scheduler"
	batchv1ex "github.com/loopwatch/loopwatch/examples/controllers/scheduler/api/v1"
)

func main() {
	if err := run(); errors.Is(err, flag.ErrHelp) {
		return // the flag set printed the usage
	} else if err != nil {
		fmt.Fprintf(os.Stderr, "example-controller: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	controller              string
	metricsAddr, probeAddr  string
	secureMetrics           bool
	leaderElect             bool
	leaderElectionNamespace string
	warmup                  bool
	watchNamespace          string
	maxConcurrentReconciles int
	qps                     float64
	burst                   int
	faults                  faults.Modes
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.controller, "controller", "", "Which controller to run: "+scheduler.ControllerName+" or "+conditions.ControllerName+".")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the metrics endpoint; 0 turns it off.")
	fs.BoolVar(&o.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized against the API server.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; 0 turns them off.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Enable leader election, so only one replica is active.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's).")
	fs.BoolVar(&o.warmup, "warmup", false, "Start the controller's event sources and queue while a standby waits to become leader (controller-runtime's EnableWarmup), for a faster failover.")
	fs.StringVar(&o.watchNamespace, "watch-namespace", "", "Only watch this namespace (default: all).")
	fs.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", 1, "Reconcile workers.")
	fs.Float64Var(&o.qps, "kube-api-qps", 0, "Client-side rate limit in requests per second; 0 keeps controller-runtime's default (none: API Priority and Fairness limits).")
	fs.IntVar(&o.burst, "kube-api-burst", 0, "Client-side burst with --kube-api-qps.")
	fs.BoolVar(&o.faults.HotLoop, "fault-hot-loop", false, "Fault: every reconcile writes a value that changes each pass and wakes the controller again.")
	fs.DurationVar(&o.faults.Slow, "fault-slow", 0, "Fault: every reconcile first waits this long, as on a slow external service.")
	fs.BoolVar(&o.faults.NPlusOne, "fault-n-plus-one", false, "Fault: every reconcile lists and GETs the namespace's objects from the API server.")
	fs.BoolVar(&o.faults.Errors, "fault-errors", false, "Fault: every reconcile fails, as when a service it depends on is down.")
	fs.StringVar(&o.faults.Hang, "fault-hang", "", "Fault: reconciles of the object with this name never return, as a call without a timeout (a stuck worker).")
}

func run() error {
	var o options
	fs := flag.NewFlagSet("example-controller", flag.ContinueOnError)
	o.bind(fs)
	zopts := zap.Options{}
	zopts.BindFlags(fs)
	config.RegisterFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(batchv1ex.AddToScheme(scheme))
	utilruntime.Must(configv1.AddToScheme(scheme))

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	if o.qps > 0 {
		cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	}
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics}
	if o.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	mopts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.controller + ".examples.loopwatch.dev",
		LeaderElectionNamespace: o.leaderElectionNamespace,
	}
	if o.warmup {
		mopts.Controller.EnableWarmup = ptr.To(true)
	}
	if o.watchNamespace != "" {
		mopts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{o.watchNamespace: {}}}
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	switch o.controller {
	case scheduler.ControllerName:
		r := &scheduler.CronJobReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
		err = r.SetupWithManager(mgr, scheduler.Options{
			MaxConcurrentReconciles: o.maxConcurrentReconciles,
			WrapReconciler:          faults.ForScheduler(mgr, o.faults),
		})
	case conditions.ControllerName:
		wrap, c := faults.ForConditions(mgr, o.faults)
		r := &conditions.AppConfigReconciler{Client: c}
		err = r.SetupWithManager(mgr, conditions.Options{MaxConcurrentReconciles: o.maxConcurrentReconciles, WrapReconciler: wrap})
	default:
		return fmt.Errorf("--controller must be %s or %s, not %q", scheduler.ControllerName, conditions.ControllerName, o.controller)
	}
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add readyz: %w", err)
	}
	ctrl.Log.Info("Starting manager", "controller", o.controller, "faults", fmt.Sprintf("%+v", o.faults))
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
