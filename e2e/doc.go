// Package e2e holds the end-to-end tests that put loopwatch's generated outputs in front of their
// real consumers: the PrometheusRule manifests in front of kube-apiserver with the real CRD schema,
// the rule files in front of Prometheus scraping a real controller-runtime manager, and the
// dashboards' queries in front of that Prometheus. The tests are driven by whatever rules/ and
// dashboards/ hold, so they grow with the generator's outputs.
//
// Run them with `make test` or `go test ./e2e/` after `make tools` (they use the binaries in bin/
// through internal/stack).
package e2e
