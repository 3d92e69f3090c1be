# loopwatch — `make help` lists the targets a newcomer needs.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
export KUBEBUILDER_ASSETS := $(BIN)
export LOOPWATCH_BIN := $(BIN)
GO ?= go

# TIMED prefixes each build recipe: empty, unless TIMING_LOG names a file, where tools/timed then
# appends each build's target, start and end (make cold-start reads it).
TIMED = $(if $(TIMING_LOG),$(CURDIR)/tools/timed $(TIMING_LOG) $(notdir $@),)

# Pinned tools (kube-apiserver, etcd, prometheus, promtool, jsonnet, ...) are built from tools/go.mod.
include tools/tools.mk

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

.PHONY: generate
generate: generate-operator generate-examples ## Rebuild rules/, dashboards/, jsonnet/, testrules/, alertmanager/, the reference docs and the runbooks' headers from the declarations (gen/), and the operator's generated code.
	$(GO) run ./cmd/loopwatch gen --out .
	$(GO) run ./internal/refdocs

.PHONY: generate-operator
generate-operator: $(BIN)/controller-gen ## Regenerate the operator's deepcopy, CRDs and RBAC role with controller-gen.
	$(BIN)/controller-gen object paths=./operator/api/...
	$(BIN)/controller-gen crd paths=./operator/api/... output:crd:artifacts:config=operator/config/crd/bases
	$(BIN)/controller-gen rbac:roleName=backup-operator paths=./operator/... output:rbac:artifacts:config=operator/config/rbac

.PHONY: generate-examples
generate-examples: $(BIN)/controller-gen ## Regenerate the example controllers' deepcopy and CRDs with controller-gen.
	$(BIN)/controller-gen object paths=./examples/controllers/...
	$(BIN)/controller-gen crd paths=./examples/controllers/... output:crd:artifacts:config=examples/controllers/config/crd

.PHONY: check-generated
check-generated: $(BIN)/controller-gen ## Fail when the committed generated files differ from what the generators write.
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) run ./cmd/loopwatch gen --out "$$tmp"; \
	for d in rules dashboards jsonnet testrules alertmanager; do \
	  [ -d "$$tmp/$$d" ] || continue; \
	  diff -r -x '*.go' -x scenarios "$$tmp/$$d" "$$d" || { echo "generated $$d/ is stale: run 'make generate' and commit" >&2; exit 1; }; \
	done
	@$(GO) run ./internal/refdocs
	@git diff --exit-code --stat -- docs/configuration.md docs/runbooks/ docs/exporter.md || { echo "reference docs are stale: run 'make generate' and commit" >&2; exit 1; }
	@$(MAKE) -s generate-operator generate-examples
	@git diff --exit-code --stat -- operator/api operator/config examples/controllers || { echo "operator's or examples' generated code is stale: run 'make generate' and commit" >&2; exit 1; }
	@echo "generated files are fresh"

.PHONY: lint
lint: $(BIN)/golangci-lint ## golangci-lint with .golangci.yml: gofmt, go vet's analyzers, staticcheck, errcheck, unused, ineffassign, gocritic, promlinter, misspell.
	$(BIN)/golangci-lint run ./...

.PHONY: test-rules
test-rules: $(BIN)/promtool ## promtool check + unit tests of the generated rules.
	$(BIN)/promtool check rules rules/loopwatch.rules.yaml
	$(BIN)/promtool test rules testrules/*.test.yaml testrules/scenarios/*.test.yaml

.PHONY: unit
unit: lint ## The fast loop: the linters and every Go test that needs no real component (go test -short).
	$(GO) test -short -count=1 ./...

.PHONY: test
# The scenes of the e2e matrix CI runs: the healthy one, and the incidents only the audit path
# shows or no other test on real components covers (docs/testing.md maps every alert family to
# the CI test that fires it). `make e2e` runs them all.
CI_SCENES ?= healthy,write-fight,replica-race,relist-storm,error-storm,leader-lost,unserved-metrics

# STAGES collects make test's stage times (tools/stage), printed at its end. promtool's run of
# testrules/ is in the Go tests (testrules.TestPromtoolUnitTests), not a stage of its own; it is
# listed first, as it is the longest (promtool on six suites, a core each for minutes).
STAGES := $(BIN)/test-stages.txt
STAGE = $(CURDIR)/tools/stage $(STAGES)

test: tools binaries ## Everything CI runs, in timed stages: lint, staleness, a brief fuzz, then the Go tests (promtool's included) on the real components beside the e2e matrix's CI scenes.
	@rm -f $(STAGES)
	@trap 'echo; echo "== make test stage times"; cat $(STAGES)' EXIT; \
	$(STAGE) lint $(MAKE) -s --no-print-directory lint && \
	$(STAGE) check-generated $(MAKE) -s --no-print-directory check-generated && \
	$(STAGE) fuzz $(MAKE) -s --no-print-directory fuzz-brief && \
	$(STAGE) tool-modules $(MAKE) -s --no-print-directory test-tool-modules && \
	{ $(STAGE) e2e-ci-scenes $(MAKE) -s --no-print-directory e2e-ci > $(BIN)/e2e-ci.log 2>&1 & scenes=$$!; \
	  $(STAGE) go-test $(GO) test -count=1 -timeout 60m ./testrules ./...; tests=$$?; \
	  wait $$scenes; scenes=$$?; cat $(BIN)/e2e-ci.log; \
	  [ $$tests -eq 0 ] && [ $$scenes -eq 0 ]; }

.PHONY: test-tool-modules
test-tool-modules: ## The tests that live in tool modules: what alert instances cost the pinned Prometheus (each case once), Alertmanager loading the generated fragment.
	$(GO) -C tools/prometheus test -tags '$(PROMETHEUS_TAGS)' -count=1 -run . -bench . -benchtime 1x .
	$(GO) -C tools/alertmanager test -count=1 .

.PHONY: e2e-ci
e2e-ci: ## The e2e matrix's CI scenes (CI_SCENES) alone; make test runs them beside the Go tests.
	LOOPWATCH_E2E_MATRIX=1 LOOPWATCH_E2E_SCENARIOS=$(CI_SCENES) LOOPWATCH_E2E_TABLE=$(BIN)/e2e-matrix-ci.md $(GO) test -count=1 -run '^TestMatrix$$' -timeout 30m ./e2e/
	@cat $(BIN)/e2e-matrix-ci.md

FUZZTIME ?= 30s
.PHONY: fuzz-brief
fuzz-brief: ## Fuzz the audit decoder against encoding/json for FUZZTIME (30s; run longer locally).
	$(GO) test ./exporter/decode -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x

SCENARIO ?= write-fight
KEEP ?=
.PHONY: demo
demo: ## One incident on a real control plane + exporter + operator + Prometheus (SCENARIO=<name>, KEEP=1 keeps it up; bin/loopwatch-demo -list).
	@$(MAKE) -j4 --no-print-directory $(DEMO_TOOLS) demo-binaries
	$(BIN)/loopwatch-demo -scenario=$(SCENARIO) $(if $(KEEP),-keep)

.PHONY: cold-start
cold-start: ## What a newcomer waits for: make demo on a fresh clone of HEAD with empty Go caches; writes the README's first-alert sentence and docs/testing.md's table of where the time went (~21 min; run it on an idle machine).
	$(GO) run ./internal/coldstart -results $(CURDIR)

.PHONY: e2e
e2e: ## The e2e matrix (every incident in a scene of its own, its alerts alone within `for` + 1m, diagnose naming its cause; writes docs/detection.md's table) and the demo's KEEP/Ctrl-C tests; about 18 minutes, not in CI.
	@$(MAKE) -j3 --no-print-directory $(DEMO_TOOLS) binaries
	LOOPWATCH_E2E_MATRIX=1 LOOPWATCH_E2E_TABLE=$(BIN)/e2e-matrix.md LOOPWATCH_E2E_RESULTS=$(CURDIR) $(GO) test -count=1 -v -run '^(TestMatrix|TestDemo.*)$$' -timeout 60m ./e2e/

.PHONY: soak
soak: ## 30 minutes of a healthy operator under the production rules: nothing may go pending (table in bin/soak.md; not in CI).
	@$(MAKE) -j3 --no-print-directory $(DEMO_TOOLS) binaries
	LOOPWATCH_SOAK=1 LOOPWATCH_SOAK_TABLE=$(BIN)/soak.md $(GO) test -count=1 -v -run '^TestSoak$$' -timeout 120m ./e2e/

# bench-rules knobs: the rule file, the fleet sizes (controllers × 3 replicas), the intervals
# ("default" = the file's own; a duration replaces its shortest group interval) and the
# evaluations measured per group and interval. BENCH_ARGS passes any other flag
# (go run ./cmd/loopwatch-bench-rules -h lists them), e.g. BENCH_ARGS='-keep -data-dir /srv/bench'.
BENCH_RULES ?= rules/loopwatch.rules.yaml
BENCH_CONTROLLERS ?= 50,500
BENCH_INTERVALS ?= 15s,default
BENCH_EVALS ?= 10
BENCH_ARGS ?=
BENCH_ALERTS ?= .
# The floors measured beside the rules: the least a rule reading all of each costs.
BENCH_FLOORS ?= rest_client_requests_total,controller_runtime_reconcile_total
# The committed rule file's report goes into docs/performance.md; another file's only to tmp/.
BENCH_RESULTS = $(if $(filter rules/loopwatch.rules.yaml,$(BENCH_RULES)),-results $(CURDIR))

.PHONY: bench-rules
bench-rules: $(BIN)/prometheus ## Rule evaluation cost on a real Prometheus for 50 and 500 synthetic controllers × 3 replicas with 72h of history, beside the floors (~45 min; not part of test). Report in tmp/bench-rules.{md,json} and, for the committed rules, docs/performance.md.
	$(GO) build -o $(BIN)/loopwatch-bench-rules ./cmd/loopwatch-bench-rules
	@mkdir -p tmp
	$(BIN)/loopwatch-bench-rules -rules $(BENCH_RULES) -controllers $(BENCH_CONTROLLERS) -intervals $(BENCH_INTERVALS) \
		-evals $(BENCH_EVALS) -floor $(BENCH_FLOORS) -out tmp/bench-rules.md -json tmp/bench-rules.json $(BENCH_RESULTS) $(BENCH_ARGS)

BENCH_COUNT ?= 5
.PHONY: bench-exporter
bench-exporter: ## The audit exporter's decoder and pipeline benchmarks against encoding/json, BENCH_COUNT runs each; writes docs/performance.md's table (~5 min).
	$(GO) run ./internal/benchexporter -count $(BENCH_COUNT) -results $(CURDIR)

.PHONY: bench-alert-instances
bench-alert-instances: ## What each alert's instances cost the pinned Prometheus beyond its query: every alert of BENCH_RULES with 295 instances (LOOPWATCH_ALERT_INSTANCES), as generated, with its templated fields only, and without fields (~2 min; BENCH_ALERTS=<regexp> for some).
	LOOPWATCH_RULES=$(abspath $(BENCH_RULES)) $(GO) -C tools/prometheus test -tags '$(PROMETHEUS_TAGS)' -run '^$$' -bench 'AlertInstances/$(BENCH_ALERTS)/' -benchtime 20x -benchmem -count 3 .

# One go build for several binaries compiles the packages they share once, and links them side by
# side.
.PHONY: binaries
binaries: ## Build loopwatch, backup-operator, example-controller and loopwatch-demo into bin/ (the demo and the detection tests run them as processes).
	$(TIMED) $(GO) build -o $(BIN)/ ./cmd/loopwatch ./cmd/backup-operator ./cmd/example-controller ./cmd/loopwatch-demo

.PHONY: demo-binaries
demo-binaries: ## Build only what make demo runs of the project: loopwatch, backup-operator and loopwatch-demo.
	$(TIMED) $(GO) build -o $(BIN)/ ./cmd/loopwatch ./cmd/backup-operator ./cmd/loopwatch-demo
