module github.com/loopwatch/loopwatch/tools/prometheus-operator

go 1.26.8

// Only the module's example/prometheus-operator-crd/ directory is used (copied to bin/crds/ by
// tools.mk); nothing is compiled from it, so its dependencies never meet the other tools'.
require github.com/prometheus-operator/prometheus-operator v0.85.0
