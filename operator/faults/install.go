package faults

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/loopwatch/loopwatch/instrument"
	"github.com/loopwatch/loopwatch/operator/controller"
	"github.com/loopwatch/loopwatch/operator/store"
)

// Config is what Install needs to inject Modes into an operator.
type Config struct {
	// Modes are the faults to switch on.
	Modes Modes
	// RESTConfig is the operator's; the fighter gets a copy with its own user
	// agent. Required for Fight.
	RESTConfig *rest.Config
	// FightAs is the user the fighter impersonates (for example
	// "system:serviceaccount:backup-system:tier-controller"); empty keeps the
	// operator's identity.
	FightAs string
	// FightInterval is the fighter's period. Defaults to 1s.
	FightInterval time.Duration
	// Metrics counts the N+1 reads under the Backup controller; may be nil.
	Metrics *instrument.Metrics
	// Clock stamps annotations. Defaults to the real clock.
	Clock clock.Clock
}

// Install adds the runnables the modes need (the fighter, the mass updater)
// to mgr and returns backup, the Backup controller's options, with the
// decorator and event sources of the modes added. With every mode off it
// returns backup unchanged and adds nothing.
func Install(mgr manager.Manager, cfg Config, backup controller.ControllerOptions) (controller.ControllerOptions, error) {
	m := cfg.Modes
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if m.HotLoop || m.NPlusOne || m.Fight {
		if backup.WrapReconciler != nil {
			return backup, errors.New("faults: the Backup controller already has a reconciler decorator")
		}
		backup.WrapReconciler = BackupDecorator{
			Modes:     m,
			APIReader: instrument.NewReader(controller.BackupControllerName, mgr.GetAPIReader(), mgr.GetScheme(), cfg.Metrics),
			Clock:     clk,
		}.Wrap
	}
	backup.ExtraSources = append(backup.ExtraSources, m.backupSources(mgr.GetCache())...)

	if m.MassUpdateEvery > 0 {
		mu := NewMassUpdater(MassUpdater{Reader: mgr.GetCache(), Writer: mgr.GetClient(), Every: m.MassUpdateEvery, Clock: clk})
		backup.ExtraSources = append(backup.ExtraSources, mu.Source())
		if err := mgr.Add(mu); err != nil {
			return backup, fmt.Errorf("add mass updater: %w", err)
		}
	}
	if m.Fight {
		if cfg.RESTConfig == nil {
			return backup, errors.New("faults: the fight mode needs a RESTConfig for its own client")
		}
		fcfg := rest.CopyConfig(cfg.RESTConfig)
		fcfg.UserAgent = FighterUserAgent
		if cfg.FightAs != "" {
			fcfg.Impersonate = rest.ImpersonationConfig{UserName: cfg.FightAs}
		}
		fc, err := client.New(fcfg, client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return backup, fmt.Errorf("create fighter client: %w", err)
		}
		if err := mgr.Add(&Fighter{Reader: mgr.GetCache(), Writer: fc, Interval: cfg.FightInterval}); err != nil {
			return backup, fmt.Errorf("add fighter: %w", err)
		}
	}
	return backup, nil
}

// WrapStore wraps inner with the store-side faults: SlowStore, StoreOutage and
// FailingStore. The outage and failures can be switched at run time on the
// result.
func (m Modes) WrapStore(inner store.Store) *store.Faulty {
	f := store.NewFaulty(inner, m.SlowStore)
	f.SetDeleteOutage(m.StoreOutage)
	f.SetFailing(m.FailingStore)
	return f
}
