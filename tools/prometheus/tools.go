//go:build tools

// Package tools pins the Prometheus server and promtool that tests run against.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
