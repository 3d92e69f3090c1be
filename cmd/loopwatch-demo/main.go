// Command loopwatch-demo is `make demo`: a real etcd and kube-apiserver (audit webhook aimed at
// the loopwatch exporter), the reference backup operator and Prometheus with the generated rules,
// all on loopback. A healthy run stays silent; then a hot loop (a timestamp patched on every
// reconcile) and a write fight between two controllers are injected and their alerts fire;
// `loopwatch audit analyze` reads the audit log.
// See internal/demo.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/loopwatch/loopwatch/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	if err := demo.Run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}
