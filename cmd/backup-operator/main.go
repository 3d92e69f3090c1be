// Command backup-operator runs loopwatch's reference backup operator: Backup
// and Snapshot controllers, a filesystem archive store, an authenticated
// metrics endpoint, leader election, and fault modes (off by default) that
// break it on purpose the ways controllers fail in production.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/loopwatch/loopwatch/operator/app"
)

func main() {
	if err := run(); errors.Is(err, flag.ErrHelp) {
		return // the flag set printed the usage
	} else if err != nil {
		fmt.Fprintf(os.Stderr, "backup-operator: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	opts := app.Defaults()
	fs := flag.NewFlagSet("backup-operator", flag.ContinueOnError)
	opts.BindFlags(fs)
	zopts := zap.Options{}
	zopts.BindFlags(fs)
	// --kubeconfig, read by ctrl.GetConfig (KUBECONFIG and in-cluster config work too).
	config.RegisterFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	op, err := app.New(cfg, opts)
	if err != nil {
		return err
	}
	ctrl.Log.Info("Starting backup operator", "faults", fmt.Sprintf("%+v", opts.Faults), "leaderElection", opts.LeaderElection && !opts.Faults.NoLeaderElection)
	if err := op.Manager.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
