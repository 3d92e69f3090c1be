// Command loopwatch generates Prometheus rules, Grafana dashboards and a jsonnet mixin for
// Kubernetes controllers, and runs the audit-log webhook exporter.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
