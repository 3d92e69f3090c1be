// Package app wires the backup operator's manager: cache, controllers, store,
// metrics, leader election, and the fault modes of package faults. The binary (cmd/backup-operator),
// the tests and the demo all start it through Options and New.
package app

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/loopwatch/loopwatch/operator/faults"
)

// Options configure the operator. The zero value plus Defaults is a sane
// production setup; every fault is off.
type Options struct {
	// MetricsAddr is where /metrics is served; "0" turns it off.
	MetricsAddr string
	// MetricsInsecure serves plain, unauthenticated HTTP (local use and demos).
	// Otherwise metrics are served over HTTPS and every request is
	// authenticated and authorized against the API server.
	MetricsInsecure bool
	// ProbeAddr is where /healthz and /readyz are served; "0" turns it off.
	ProbeAddr string

	// LeaderElection is on by default (see Defaults).
	LeaderElection bool
	// LeaderElectionID names the Lease.
	LeaderElectionID string
	// LeaderElectionNamespace holds the Lease; defaults to the pod's namespace.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune failover; zero keeps
	// controller-runtime's defaults (defaultLeaseDuration, defaultRenewDeadline,
	// defaultRetryPeriod). Defaults sets RetryPeriod to 1s: a standby tries to
	// take a released lease every 1 to 2.2 s (client-go adds up to 120% jitter),
	// instead of 2 to 4.4 s, so a graceful restart hands over well within 5 s.
	// The leader then renews every second, one small write.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// Namespaces limits the operator to these namespaces; empty watches all.
	Namespaces []string

	// StoreDir is the filesystem store's root.
	StoreDir string
	// PutTimeout bounds writing one archive.
	PutTimeout time.Duration
	// DeleteTimeout is how long after a deletion starts its finalizer waits
	// for the store clean-up, which runs in the background; then the
	// finalizer goes and the orphan collector deletes what is left. Keep it
	// well under the 30 s deletion SLA.
	DeleteTimeout time.Duration
	// OrphanInterval is the period of the orphan-archive collector.
	OrphanInterval time.Duration
	// FinalizerAgeInterval is the period of the finalizer-age gauge.
	FinalizerAgeInterval time.Duration

	// MaxConcurrentReconciles per controller.
	MaxConcurrentReconciles int
	// KubeQPS and KubeBurst set the client's rate limit; client-go's defaults
	// (5/10, raised to 20/30 by controller-runtime) throttle large fleets.
	KubeQPS   float32
	KubeBurst int

	// Faults are the failures package faults injects, all off by default.
	Faults faults.Modes
	// FightAs is the user the fight fault's second writer impersonates (for
	// example "system:serviceaccount:backup-system:tier-controller"); empty
	// keeps the operator's identity with its own user agent.
	FightAs string
	// FightInterval is the second writer's period.
	FightInterval time.Duration

	// Registerer receives the instrument metrics; nil means controller-runtime's
	// metrics.Registry (the one the manager serves).
	Registerer prometheus.Registerer
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
	// Clock is the controllers' time source.
	Clock clock.Clock
}

// Defaults are the production settings (leader election on, metrics over
// HTTPS, every fault off); the flags start from them.
func Defaults() Options {
	return Options{
		MetricsAddr:             ":8443",
		ProbeAddr:               ":8081",
		LeaderElection:          true,
		LeaderElectionID:        "backup-operator.loopwatch.dev",
		RetryPeriod:             time.Second,
		StoreDir:                "/var/lib/backup-operator",
		PutTimeout:              time.Minute,
		DeleteTimeout:           10 * time.Second,
		OrphanInterval:          5 * time.Minute,
		FinalizerAgeInterval:    10 * time.Second,
		MaxConcurrentReconciles: 4,
		KubeQPS:                 50,
		KubeBurst:               100,
		FightInterval:           time.Second,
		Faults:                  faults.Modes{NPlusOneFanout: 50},
	}
}

// controller-runtime's leader-election timings, used when an option is zero (its manager keeps
// them unexported).
const (
	defaultLeaseDuration = 15 * time.Second
	defaultRenewDeadline = 10 * time.Second
	defaultRetryPeriod   = 2 * time.Second
)

// Validate reports every option that is out of range, each under the name of its flag: negative
// durations and counts (zero keeps a default), leader-election timings that client-go would refuse
// only once the manager starts, and a fight identity without the fight. The flags are read from
// BindFlags, so a new duration or count flag is checked without being named here.
func (o Options) Validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: "+format, append([]any{flag}, args...)...))
	}
	bound, fs := o, flag.NewFlagSet("validate", flag.ContinueOnError)
	bound.BindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		switch v := g.Get().(type) {
		case time.Duration:
			if v < 0 {
				bad(f.Name, "must not be negative, got %s", v)
			}
		case int:
			if v < 0 {
				bad(f.Name, "must not be negative, got %d", v)
			}
		case float32:
			if v < 0 {
				bad(f.Name, "must not be negative, got %g", v)
			}
		}
	})
	// client-go's leader election needs lease duration > renew deadline > 1.2 × retry period.
	lease, renew, retry := orDefault(o.LeaseDuration, defaultLeaseDuration), orDefault(o.RenewDeadline, defaultRenewDeadline), orDefault(o.RetryPeriod, defaultRetryPeriod)
	if o.LeaderElection && lease > 0 && renew > 0 && retry > 0 {
		if lease <= renew {
			bad("leader-election-lease-duration", "must be longer than the renew deadline (%s), got %s", renew, lease)
		}
		if float64(renew) <= 1.2*float64(retry) {
			bad("leader-election-renew-deadline", "must be longer than 1.2 × the retry period (%s), got %s", retry, renew)
		}
	}
	if o.FightAs != "" && !o.Faults.Fight {
		bad("fault-fight-as", "names the second writer of --fault-fight, which is off")
	}
	if o.Faults.MetricsOwnRegistry {
		if !o.MetricsInsecure {
			bad("fault-metrics-own-registry", "serves plain HTTP: it needs --metrics-insecure")
		}
		if o.MetricsAddr == "" || o.MetricsAddr == "0" {
			bad("fault-metrics-own-registry", "replaces the metrics endpoint, which --metrics-bind-address turns off")
		}
	}
	return errors.Join(errs...)
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// BindFlags registers the command-line flags, with o's values as defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the metrics endpoint; \"0\" disables it.")
	fs.BoolVar(&o.MetricsInsecure, "metrics-insecure", o.MetricsInsecure, "Serve metrics over plain HTTP without authentication (local use and demos only).")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of the health probes; \"0\" disables them.")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "Elect a leader so only one replica reconciles.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, fmt.Sprintf("How long a non-leader waits before taking an unrenewed lease (0: controller-runtime's %s).", defaultLeaseDuration))
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, fmt.Sprintf("How long the leader retries renewing before it gives up leadership (0: controller-runtime's %s).", defaultRenewDeadline))
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, fmt.Sprintf("Interval between leader election attempts and renewals (0: controller-runtime's %s).", defaultRetryPeriod))
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the Lease (default: the pod's).")
	fs.StringVar(&o.StoreDir, "store-dir", o.StoreDir, "Root directory of the filesystem archive store.")
	fs.DurationVar(&o.PutTimeout, "store-put-timeout", o.PutTimeout, "Timeout for writing one archive.")
	fs.DurationVar(&o.DeleteTimeout, "store-delete-timeout", o.DeleteTimeout, "How long after a deletion starts its finalizer waits for the store clean-up; then it goes and the orphan collector deletes what is left.")
	fs.DurationVar(&o.OrphanInterval, "orphan-interval", o.OrphanInterval, "Period of the orphaned-archive collector.")
	fs.Func("namespace", "Watch only this namespace (repeatable); default all.", func(v string) error {
		o.Namespaces = append(o.Namespaces, v)
		return nil
	})
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "Workers per controller.")
	fs.Var(float32Value{&o.KubeQPS}, "kube-api-qps", "Client requests per second to the API server.")
	fs.IntVar(&o.KubeBurst, "kube-api-burst", o.KubeBurst, "Client burst to the API server.")

	fs.BoolVar(&o.Faults.HotLoop, "fault-hot-loop", o.Faults.HotLoop, "FAULT: patch a timestamp annotation on every reconcile and watch Backups without a predicate, so the controller wakes itself in a loop.")
	fs.BoolVar(&o.Faults.NPlusOne, "fault-n-plus-one", o.Faults.NPlusOne, "FAULT: list every Backup and GET each one uncached on every reconcile (N+1 API calls).")
	fs.IntVar(&o.Faults.NPlusOneFanout, "fault-n-plus-one-fanout", o.Faults.NPlusOneFanout, "FAULT: per-object GETs per reconcile in --fault-n-plus-one.")
	fs.DurationVar(&o.Faults.SlowStore, "fault-slow-store", o.Faults.SlowStore, "FAULT: add this latency to every store call, e.g. 45s (slow reconciles).")
	fs.BoolVar(&o.Faults.StoreOutage, "fault-store-outage", o.Faults.StoreOutage, "FAULT: store deletes hang until their timeout (a store outage during deletions).")
	fs.BoolVar(&o.Faults.Fight, "fault-fight", o.Faults.Fight, "FAULT: a second writer fights the controller over an annotation.")
	fs.StringVar(&o.FightAs, "fault-fight-as", o.FightAs, "FAULT: user the second writer impersonates.")
	fs.BoolVar(&o.Faults.NoLeaderElection, "fault-no-leader-election", o.Faults.NoLeaderElection, "FAULT: run without leader election so replicas race.")
	fs.DurationVar(&o.Faults.MassUpdateEvery, "fault-mass-update-every", o.Faults.MassUpdateEvery, "FAULT: touch and requeue every Backup at this period (periodic load spikes).")
	fs.BoolVar(&o.Faults.FailingStore, "fault-failing-store", o.Faults.FailingStore, "FAULT: every store write fails (error storm).")
	fs.DurationVar(&o.FightInterval, "fault-fight-interval", o.FightInterval, "FAULT: period of the second writer in --fault-fight.")
	fs.DurationVar(&o.Faults.ReconcileDelay, "fault-reconcile-delay", o.Faults.ReconcileDelay, "FAULT: every Backup reconcile first waits this long (a slow dependency).")
	fs.StringVar(&o.Faults.HangBackup, "fault-hang", o.Faults.HangBackup, "FAULT: reconciles of the Backup with this name never return (a stuck worker).")
	fs.BoolVar(&o.Faults.FinalizerStuck, "fault-finalizer-stuck", o.Faults.FinalizerStuck, "FAULT: Backups being deleted wait forever for a clean-up that never completes (a stuck finalizer).")
	fs.DurationVar(&o.Faults.RelistEvery, "fault-relist-every", o.Faults.RelistEvery, "FAULT: start a fresh ConfigMap informer at this period and stop it once synced (a relist storm).")
	fs.DurationVar(&o.Faults.LeaseUnreachableAfter, "fault-lease-unreachable-after", o.Faults.LeaseUnreachableAfter, "FAULT: the leader elector's requests fail from this long after the start (no replica can hold the lease).")
	fs.DurationVar(&o.Faults.LeaseLostAfter, "fault-lease-lost-after", o.Faults.LeaseLostAfter, "FAULT: the leader elector's requests fail once this process has led this long (it loses the lease and exits).")
	fs.BoolVar(&o.Faults.WorkqueueMetricsUnregistered, "fault-workqueue-metrics-unregistered", o.Faults.WorkqueueMetricsUnregistered, "FAULT: the Backup controller's work queue metrics go to a registry nobody serves.")
	fs.BoolVar(&o.Faults.MetricsOwnRegistry, "fault-metrics-own-registry", o.Faults.MetricsOwnRegistry, "FAULT: the metrics endpoint serves a registry of its own (Go and process metrics) instead of controller-runtime's, so no controller metric is exported. Needs --metrics-insecure.")
}

// float32Value is a flag.Value for a float32.
type float32Value struct{ p *float32 }

func (f float32Value) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.FormatFloat(float64(*f.p), 'g', -1, 32)
}

// Get returns the value, for Validate.
func (f float32Value) Get() any {
	if f.p == nil {
		return float32(0)
	}
	return *f.p
}

func (f float32Value) Set(s string) error {
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return fmt.Errorf("parse %q as a number: %w", s, err)
	}
	*f.p = float32(v)
	return nil
}
