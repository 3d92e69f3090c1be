//go:build tools

// Package tools pins the Alertmanager that the notification test runs the generated inhibit
// rules and route on. v0.31.1 is the newest release the module proxy serves that builds: later
// ones embed UI assets their module does not ship.
package tools

import (
	_ "github.com/prometheus/alertmanager/cmd/alertmanager"
)
