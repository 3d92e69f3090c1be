package app

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/loopwatch/loopwatch/instrument"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/controller"
	"github.com/loopwatch/loopwatch/operator/faults"
	"github.com/loopwatch/loopwatch/operator/store"
)

// Operator is a wired, not yet started, backup operator.
type Operator struct {
	// Manager runs everything; call Start.
	Manager manager.Manager
	// Store is the default store, wrapped so its faults can be switched at run time.
	Store *store.Faulty
	// Metrics are the instrument metrics.
	Metrics *instrument.Metrics
	// Orphans is the orphan-archive collector (also registered with Manager).
	Orphans *controller.OrphanCollector
}

// EventSource is the reporting controller of the operator's Events.
const EventSource = "backup-operator"

// onLeader runs a runnable on the elected leader only.
type onLeader struct{ manager.Runnable }

// NeedLeaderElection reports true, whatever the wrapped runnable says.
func (onLeader) NeedLeaderElection() bool { return true }

// NewScheme is the scheme of every client of the operator (the manager, the
// tests, the demo): the core types and the backup API.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add core types to scheme: %w", err)
	}
	if err := backupv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add backup types to scheme: %w", err)
	}
	return s, nil
}

// New builds the manager and registers the controllers, runnables and probes.
func New(cfg *rest.Config, o Options) (*Operator, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if o.KubeQPS != 0 {
		cfg.QPS = o.KubeQPS
	}
	if o.KubeBurst != 0 {
		cfg.Burst = o.KubeBurst
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	reg := o.Registerer
	if reg == nil {
		reg = crmetrics.Registry
	}
	m, err := instrument.NewMetrics(reg)
	if err != nil {
		return nil, err
	}

	metricsOpts := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.Faults.MetricsOwnRegistry {
		// The fault's server takes the address (added below).
		metricsOpts.BindAddress = "0"
	}
	if !o.MetricsInsecure {
		metricsOpts.SecureServing = true
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	mopts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection && !o.Faults.NoLeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache: cache.Options{
			// Fail instead of silently starting an informer (a watch and a
			// full copy in memory) for a kind nobody declared, and keep
			// managedFields out of memory.
			ReaderFailOnMissingInformer: true,
			DefaultTransform:            cache.TransformStripManagedFields(),
		},
	}
	if len(o.Namespaces) > 0 {
		mopts.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.Namespaces {
			mopts.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	if o.LeaseDuration > 0 {
		mopts.LeaseDuration = &o.LeaseDuration
	}
	if o.RenewDeadline > 0 {
		mopts.RenewDeadline = &o.RenewDeadline
	}
	if o.RetryPeriod > 0 {
		mopts.RetryPeriod = &o.RetryPeriod
	}
	lease := o.Faults.NewLeaseFault(clk)
	if lease != nil {
		mopts.LeaderElectionConfig = lease.RESTConfig(cfg)
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}

	ctx := context.Background()
	if err := controller.AddIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	// Declare every informer the operator reads up front
	// (ReaderFailOnMissingInformer): the controllers' own watches start only
	// on the leader, so without this a standby's cache would lack Backups and
	// Snapshots. With it a standby keeps a synced cache and a new leader
	// starts reconciling as soon as it holds the lease.
	for _, obj := range []client.Object{&backupv1.Backup{}, &backupv1.Snapshot{}, &corev1.ConfigMap{}, &corev1.Secret{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return nil, fmt.Errorf("declare informer for %T: %w", obj, err)
		}
	}

	fs, err := store.NewFilesystem(o.StoreDir)
	if err != nil {
		return nil, err
	}
	faulty := o.Faults.WrapStore(fs)
	stores := controller.Stores{controller.DefaultStoreName: faulty}

	copts := controller.ControllerOptions{
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		SkipNameValidation:      o.SkipNameValidation,
		Metrics:                 m,
	}
	backupOpts, err := faults.Install(mgr, faults.Config{
		Modes: o.Faults, RESTConfig: cfg, FightAs: o.FightAs, FightInterval: o.FightInterval, Metrics: m, Clock: clk,
		Namespace: firstOrEmpty(o.Namespaces), Lease: lease,
	}, copts)
	if err != nil {
		return nil, err
	}
	recorder := mgr.GetEventRecorder(EventSource)
	br := controller.NewBackupReconciler(controller.BackupReconciler{
		Stores: stores, Clock: clk, DeleteTimeout: o.DeleteTimeout, Events: recorder,
	})
	if err := br.SetupWithManager(mgr, backupOpts); err != nil {
		return nil, err
	}
	sr := controller.NewSnapshotReconciler(controller.SnapshotReconciler{
		Stores: stores, Clock: clk, PutTimeout: o.PutTimeout, DeleteTimeout: o.DeleteTimeout, Events: recorder,
	})
	if err := sr.SetupWithManager(mgr, copts); err != nil {
		return nil, err
	}

	if o.Faults.MetricsOwnRegistry {
		if err := mgr.Add(faults.OwnRegistryMetrics{Addr: o.MetricsAddr}); err != nil {
			return nil, fmt.Errorf("add own-registry metrics: %w", err)
		}
	}

	orphans := &controller.OrphanCollector{Reader: mgr.GetCache(), Stores: stores, Interval: o.OrphanInterval}
	if err := mgr.Add(orphans); err != nil {
		return nil, fmt.Errorf("add orphan collector: %w", err)
	}
	for _, f := range []struct {
		controller, finalizer string
		list                  func() client.ObjectList
	}{
		{controller.BackupControllerName, backupv1.BackupFinalizer, func() client.ObjectList { return &backupv1.BackupList{} }},
		{controller.SnapshotControllerName, backupv1.SnapshotFinalizer, func() client.ObjectList { return &backupv1.SnapshotList{} }},
	} {
		fa, err := instrument.NewFinalizerAge(instrument.FinalizerAgeConfig{
			Controller: f.controller, Finalizer: f.finalizer, Reader: mgr.GetCache(), NewList: f.list,
			Metrics: m, Interval: o.FinalizerAgeInterval, Clock: clk,
		})
		if err != nil {
			return nil, err
		}
		// On the leader only: a standby has nothing pending to measure, and
		// its gauge stays at 0, which max() across replicas ignores.
		if err := mgr.Add(onLeader{fa}); err != nil {
			return nil, fmt.Errorf("add finalizer age: %w", err)
		}
	}
	if o.ProbeAddr != "" && o.ProbeAddr != "0" {
		if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
			return nil, fmt.Errorf("add healthz: %w", err)
		}
		if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
			return nil, fmt.Errorf("add readyz: %w", err)
		}
	}
	return &Operator{Manager: mgr, Store: faulty, Metrics: m, Orphans: orphans}, nil
}

// firstOrEmpty is the only namespace of a single-namespace operator, else "".
func firstOrEmpty(namespaces []string) string {
	if len(namespaces) == 1 {
		return namespaces[0]
	}
	return ""
}
