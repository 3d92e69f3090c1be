// Command loopwatch generates Prometheus rules, Grafana dashboards and a jsonnet mixin for
// Kubernetes controllers, and runs the audit-log webhook exporter.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// exitCode is an error that only sets the exit status: the command already said why.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }
