// Command loopwatch-demo is `make demo`: a real etcd and kube-apiserver (audit webhook aimed at
// the loopwatch exporter), the reference backup operator and Prometheus with the generated rules,
// all on loopback, running one incident of the e2e matrix (-scenario, default the write fight).
// It shows the alerts that fire with their annotations, `loopwatch diagnose`, the audit log
// post-mortem and Prometheus' address. With -keep the stack stays up until Ctrl-C (SIGINT or
// SIGTERM); either way every process it started is stopped before it exits.
// See internal/demo.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/loopwatch/loopwatch/internal/demo"
)

func main() {
	var opts demo.RunOptions
	var list bool
	flag.StringVar(&opts.Scenario, "scenario", demo.DefaultScenario, "incident to run (see -list)")
	flag.BoolVar(&opts.Keep, "keep", false, "keep the stack running after the incident, until Ctrl-C")
	flag.BoolVar(&list, "list", false, "list the scenarios and exit")
	flag.Parse()
	if list {
		for _, inc := range demo.Scenarios() {
			fmt.Printf("%-18s %s\n", inc.Name, inc.What)
		}
		return
	}
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", strings.TrimSpace(err.Error()))
		os.Exit(1)
	}
}

// run runs the demo until it ends, its time is up or it is interrupted.
func run(opts demo.RunOptions) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !opts.Keep {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 15*time.Minute)
		defer cancel()
	}
	return demo.Run(ctx, opts)
}
