// Package testrules holds the promtool unit tests of loopwatch's generated Prometheus rules
// (the *.test.yaml files beside this one) and the Go tests that keep them honest: every alert
// has a firing and a silent case, every recording rule is checked with an exact expected
// sample, every test file evaluates all rule groups in dependency order, every alert has a
// runbook in docs/runbooks, and promtool itself runs the files.
//
// The YAML files are run with `bin/promtool test rules testrules/*.yaml` from the repository
// root; `go test ./testrules/` runs the checks and promtool together.
package testrules
