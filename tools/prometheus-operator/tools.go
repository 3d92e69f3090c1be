//go:build tools

// Package tools pins prometheus-operator: its operator binary (cmd/operator), which the tests run
// against the generated PrometheusRule, and its CRDs (example/prometheus-operator-crd/, copied to
// bin/crds/ by tools.mk). `go install …/cmd/operator@v0.85.0` refuses the module because of its
// replace directives; required from this module, the replaced modules resolve to their published
// v0.85.0.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
)
