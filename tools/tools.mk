# Pinned tools, built from the small modules under tools/ into $(BIN) (BIN and GO come from the
# root Makefile). One module per tool, so minimal-version selection between kubernetes, etcd and
# prometheus never mixes their dependency graphs. Each binary is its own stamp: it depends on its
# module's go.mod/go.sum and is touched after a build, so `make tools` rebuilds only what a version
# bump made stale. envtest finds etcd and kube-apiserver through KUBEBUILDER_ASSETS=$(BIN).

TOOLS_DIR := $(CURDIR)/tools

# pin reads the version a tool module's go.mod requires of module $(2): the binaries report the
# version they are built from, so a version bump is one edit of go.mod.
pin = $(shell awk '($$1 == "$(2)" || $$1 == "require" && $$2 == "$(2)") && $$NF ~ /^v[0-9]/ { print $$NF }' $(TOOLS_DIR)/$(1)/go.mod)
# kube-apiserver's version is its module's: k8s.io/kubernetes v1.36.3.
KUBE_VERSION := $(call pin,kube-apiserver,k8s.io/kubernetes)
KUBE_LDFLAGS = -X k8s.io/component-base/version.gitVersion=$(or $(KUBE_VERSION),$(error no k8s.io/kubernetes version in tools/kube-apiserver/go.mod)) \
	-X k8s.io/component-base/version.gitMajor=$(patsubst v%,%,$(word 1,$(subst ., ,$(KUBE_VERSION)))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean
# Prometheus 3.x.y is the module github.com/prometheus/prometheus v0.3xx.y (3.16.0 is v0.316.0).
PROMETHEUS_VERSION := $(shell echo '$(call pin,prometheus,github.com/prometheus/prometheus)' | awk -F. '/^v0\.3[0-9][0-9]\./ { print "3." ($$2 - 300) "." $$3 }')
PROMETHEUS_LDFLAGS = -X github.com/prometheus/common/version.Version=$(or $(PROMETHEUS_VERSION),$(error no Prometheus v0.3xx version in tools/prometheus/go.mod))
# Alertmanager's version is its module's (v0.31.1 is 0.31.1).
ALERTMANAGER_VERSION := $(patsubst v%,%,$(call pin,alertmanager,github.com/prometheus/alertmanager))
ALERTMANAGER_LDFLAGS = -X github.com/prometheus/common/version.Version=$(or $(ALERTMANAGER_VERSION),$(error no github.com/prometheus/alertmanager version in tools/alertmanager/go.mod))
# loopwatch's Prometheus scrapes static targets only: without the service-discovery plugins (cloud
# SDKs) a cold build downloads half the modules and takes 40% of the time (257 s against 640 s
# measured here).
PROMETHEUS_TAGS := remove_all_sd

# From prometheus-operator's example/prometheus-operator-crd/: the two CRDs the project's manifests
# use (bin/crds/), and the three more the operator's Prometheus controller starts informers for
# (bin/crds-operator/: Prometheus alone is 0.8 MB, which only the operator's test installs).
PROMETHEUS_OPERATOR_CRDS := monitoring.coreos.com_prometheusrules.yaml monitoring.coreos.com_servicemonitors.yaml
PROMETHEUS_OPERATOR_RUN_CRDS := monitoring.coreos.com_prometheuses.yaml monitoring.coreos.com_podmonitors.yaml \
	monitoring.coreos.com_probes.yaml
# prometheus-operator reports the version it is built from, like the other tools.
PROMETHEUS_OPERATOR_VERSION := $(call pin,prometheus-operator,github.com/prometheus-operator/prometheus-operator)
PROMETHEUS_OPERATOR_LDFLAGS = -X github.com/prometheus/common/version.Version=$(patsubst v%,%,$(or $(PROMETHEUS_OPERATOR_VERSION),$(error no prometheus-operator version in tools/prometheus-operator/go.mod)))

# DEMO_TOOLS are what `make demo` runs; the others serve the tests and `make generate`.
DEMO_TOOLS := $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/prometheus
# Listed in build order: the slow kube-apiserver first, promtool early (make test-rules needs it).
TOOL_BINS := $(DEMO_TOOLS) $(BIN)/promtool $(BIN)/jsonnet \
	$(BIN)/controller-gen $(BIN)/golangci-lint $(BIN)/prometheus-operator $(BIN)/alertmanager \
	$(addprefix $(BIN)/crds/,$(PROMETHEUS_OPERATOR_CRDS)) $(addprefix $(BIN)/crds-operator/,$(PROMETHEUS_OPERATOR_RUN_CRDS))

.PHONY: tools
tools: ## Build the pinned tools (kube-apiserver, etcd, prometheus, promtool, jsonnet, controller-gen, golangci-lint, prometheus-operator, alertmanager, CRDs) into bin/, two at a time.
	@$(MAKE) -j2 --no-print-directory $(TOOL_BINS)

.PHONY: demo-tools
demo-tools: ## Build only the tools the demo runs (kube-apiserver, etcd, prometheus), two at a time.
	@$(MAKE) -j2 --no-print-directory $(DEMO_TOOLS)

.PHONY: clean-tools
clean-tools: ## Remove the built tools from bin/.
	rm -rf $(TOOL_BINS) $(BIN)/crds $(BIN)/crds-operator

# tool-mod lists a tool module's pin files: the prerequisites that make a version bump rebuild it.
tool-mod = $(TOOLS_DIR)/$(1)/go.mod $(TOOLS_DIR)/$(1)/go.sum

# After prometheus, not beside it: it then compiles only what prometheus does not share with it.
$(BIN)/promtool: $(call tool-mod,prometheus) | $(BIN)/prometheus
	$(TIMED) $(GO) -C $(TOOLS_DIR)/prometheus build -tags '$(PROMETHEUS_TAGS)' -ldflags '$(PROMETHEUS_LDFLAGS)' -o $@ github.com/prometheus/prometheus/cmd/promtool
	@touch $@

$(BIN)/prometheus: $(call tool-mod,prometheus)
	$(TIMED) $(GO) -C $(TOOLS_DIR)/prometheus build -tags '$(PROMETHEUS_TAGS)' -ldflags '$(PROMETHEUS_LDFLAGS)' -o $@ github.com/prometheus/prometheus/cmd/prometheus
	@touch $@

$(BIN)/etcd: $(call tool-mod,etcd)
	$(TIMED) $(GO) -C $(TOOLS_DIR)/etcd build -o $@ go.etcd.io/etcd/server/v3
	@touch $@

$(BIN)/kube-apiserver: $(call tool-mod,kube-apiserver)
	$(TIMED) $(GO) -C $(TOOLS_DIR)/kube-apiserver build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-apiserver
	@touch $@

$(BIN)/jsonnet: $(call tool-mod,jsonnet)
	$(TIMED) $(GO) -C $(TOOLS_DIR)/jsonnet build -o $@ github.com/google/go-jsonnet/cmd/jsonnet
	@touch $@

$(BIN)/golangci-lint: $(call tool-mod,golangci-lint)
	$(TIMED) $(GO) -C $(TOOLS_DIR)/golangci-lint build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	@touch $@

$(BIN)/controller-gen: $(call tool-mod,controller-gen)
	$(TIMED) $(GO) -C $(TOOLS_DIR)/controller-gen build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen
	@touch $@

$(BIN)/alertmanager: $(call tool-mod,alertmanager)
	$(TIMED) $(GO) -C $(TOOLS_DIR)/alertmanager build -ldflags '$(ALERTMANAGER_LDFLAGS)' -o $@ github.com/prometheus/alertmanager/cmd/alertmanager
	@touch $@

# The operator is built as a dependency of the tool module: `go install` refuses its module for its
# replace directives.
$(BIN)/prometheus-operator: $(call tool-mod,prometheus-operator)
	$(TIMED) $(GO) -C $(TOOLS_DIR)/prometheus-operator build -ldflags '$(PROMETHEUS_OPERATOR_LDFLAGS)' -o $@ github.com/prometheus-operator/prometheus-operator/cmd/operator
	@touch $@

# copy-crd copies CRD $* of the pinned prometheus-operator module to $@.
define copy-crd
	@mkdir -p $(@D)
	$(GO) -C $(TOOLS_DIR)/prometheus-operator mod download github.com/prometheus-operator/prometheus-operator
	cp "$$($(GO) -C $(TOOLS_DIR)/prometheus-operator list -m -f '{{.Dir}}' github.com/prometheus-operator/prometheus-operator)/example/prometheus-operator-crd/$*.yaml" $@
	@chmod u+w $@
endef

$(BIN)/crds/%.yaml: $(call tool-mod,prometheus-operator)
	$(copy-crd)

$(BIN)/crds-operator/%.yaml: $(call tool-mod,prometheus-operator)
	$(copy-crd)
