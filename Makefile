# fleetfit — see `make help`.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

MODULE      := github.com/fleetfit/fleetfit
BIN         := $(CURDIR)/bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
GIT_COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS     := -s -w -X $(MODULE)/pkg/version.gitVersion=$(VERSION) -X $(MODULE)/pkg/version.gitCommit=$(GIT_COMMIT)
GO_TEST     ?= go test
TEST_FLAGS  ?= -race -count=1
# Integration suites start real control planes; give them room on a 2-core machine.
INTEGRATION_TIMEOUT ?= 30m
E2E_TIMEOUT ?= 20m
# Where make demo writes its kubeconfigs and pid file.
DEMO_DIR    ?= _demo

# Kubernetes and etcd for tests, the demo and end-to-end runs, built from
# Go modules (test/tools) — never downloaded as binaries.
KUBE_VERSION := v1.35.4
KWOK_VERSION := v0.8.0
KUBE_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=35 -X $(p).gitTreeState=clean)
# Open Cluster Management's placement controller, work agent, registration
# (hub controller and spoke agent, one binary) and add-on manager, built from
# their own module (test/tools/ocm: OCM pins Kubernetes v0.34 libraries).
OCM_VERSION := v1.2.0
OCM_COMMIT  := 7323d2047ab4ee8c9e478ded4f9c035f37cea702
OCM_LDFLAGS := -s -w $(foreach v,versionFromGit=$(OCM_VERSION) commitFromGit=$(OCM_COMMIT) majorFromGit=1 minorFromGit=2,\
	-X open-cluster-management.io/ocm/pkg/version.$(v))
TOOLS := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler $(BIN)/kwok \
	$(BIN)/placement $(BIN)/work $(BIN)/registration $(BIN)/addon $(BIN)/karpenter-kwok

# OCM CRDs fleetfit works with, as <api dir path>:<hub|spoke>.
OCM_CRDS := \
	cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml:hub \
	cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml:hub \
	cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml:hub \
	cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml:hub \
	cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml:hub \
	cluster/v1alpha1/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml:hub \
	addon/v1alpha1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml:hub \
	addon/v1alpha1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml:hub \
	addon/v1alpha1/0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml:hub \
	addon/v1alpha1/0000_03_addon.open-cluster-management.io_addontemplates.crd.yaml:hub \
	work/v1/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml:hub \
	work/v1alpha1/0000_00_work.open-cluster-management.io_manifestworkreplicasets.crd.yaml:hub \
	cluster/v1alpha1/0000_02_clusters.open-cluster-management.io_clusterclaims.crd.yaml:spoke \
	work/v1/0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml:spoke

# SIG-Multicluster CRDs (sigs.k8s.io/cluster-inventory-api), copied to manifests/crds/optional:
# not installed by default; fleetfit-hub mirrors its decisions into PlacementDecisions when
# the hub serves them.
SIG_CRDS := clusterprofiles placementdecisions

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build fleetfit-hub, fleetfit-agent and the fleetfit CLI into bin/.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

.PHONY: tools
tools: $(TOOLS) ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, OCM's placement, work, registration and addon, and Karpenter's kwok provider (karpenter-kwok) into bin/ (once).

$(BIN)/etcd: test/tools/go.mod test/tools/go.sum
	cd test/tools && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ go.etcd.io/etcd/server/v3

$(BIN)/kube-%: test/tools/go.mod test/tools/go.sum
	cd test/tools && CGO_ENABLED=0 go build -trimpath -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kube-$*

$(BIN)/placement $(BIN)/work $(BIN)/registration $(BIN)/addon: $(BIN)/%: test/tools/ocm/go.mod test/tools/ocm/go.sum
	cd test/tools/ocm && CGO_ENABLED=0 go build -trimpath -ldflags "$(OCM_LDFLAGS)" -o $@ open-cluster-management.io/ocm/cmd/$*

# Karpenter's kwok cloud provider, built from its own module (test/tools/karpenter:
# Karpenter v1.14.0 pins Kubernetes v0.35.1 libraries and controller-runtime v0.23).
$(BIN)/karpenter-kwok: test/tools/karpenter/go.mod test/tools/karpenter/go.sum
	cd test/tools/karpenter && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=v1.14.0" -o $@ sigs.k8s.io/karpenter/kwok

$(BIN)/kwok:
	GOBIN=$(BIN) CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

##@ Development

.PHONY: generate
generate: ## Regenerate deepcopy, CRDs, clients, the add-on template and the copied OCM and SIG-Multicluster CRDs.
	go tool controller-gen object paths=./pkg/apis/...
	go tool controller-gen crd:allowDangerousTypes=false paths=./pkg/apis/... output:crd:dir=./manifests/crds/hub
	mv manifests/crds/hub/fleetfit.io_machinegroups.yaml manifests/crds/hub/fleetfit.io_machinenodepools.yaml manifests/crds/spoke/
	go run ./manifests/internal/boundfields manifests/crds/hub/fleetfit.io_*.yaml manifests/crds/spoke/fleetfit.io_*.yaml
	rm -rf pkg/generated
	go tool client-gen --go-header-file /dev/null --clientset-name versioned --input-base "" \
		--input $(MODULE)/pkg/apis/fleetfit/v1alpha1 \
		--output-dir pkg/generated/clientset --output-pkg $(MODULE)/pkg/generated/clientset
	go tool lister-gen --go-header-file /dev/null \
		--output-dir pkg/generated/listers --output-pkg $(MODULE)/pkg/generated/listers \
		$(MODULE)/pkg/apis/fleetfit/v1alpha1
	go tool informer-gen --go-header-file /dev/null \
		--versioned-clientset-package $(MODULE)/pkg/generated/clientset/versioned \
		--listers-package $(MODULE)/pkg/generated/listers \
		--output-dir pkg/generated/informers --output-pkg $(MODULE)/pkg/generated/informers \
		$(MODULE)/pkg/apis/fleetfit/v1alpha1
	rm -f manifests/crds/*/ocm_*.yaml
	go mod download open-cluster-management.io/api
	ocm_dir=$$(go list -m -f '{{.Dir}}' open-cluster-management.io/api); \
	for entry in $(OCM_CRDS); do \
		src=$${entry%%:*}; side=$${entry##*:}; \
		install -m 0644 "$$ocm_dir/$$src" "manifests/crds/$$side/ocm_$$(basename $$src | sed -e 's/^0000_0[0-9]_//' -e 's/\.crd\.yaml$$/.yaml/')"; \
	done
	rm -f manifests/crds/optional/*.yaml
	go mod download sigs.k8s.io/cluster-inventory-api
	sig_dir=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-inventory-api); \
	for crd in $(SIG_CRDS); do \
		install -D -m 0644 "$$sig_dir/config/crd/bases/multicluster.x-k8s.io_$$crd.yaml" "manifests/crds/optional/multicluster.x-k8s.io_$$crd.yaml"; \
	done
	go run ./pkg/install/internal/gentemplate -o deploy/addon/addontemplate.yaml

.PHONY: verify
verify: ## Check generated code and CRDs are current, gofmt and go vet are clean.
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
		cp -a manifests pkg deploy $$tmp/; \
		$(MAKE) --no-print-directory generate >/dev/null; \
		if ! git diff --quiet --no-index $$tmp/manifests manifests || ! git diff --quiet --no-index $$tmp/pkg pkg || ! git diff --quiet --no-index $$tmp/deploy deploy; then \
			git diff --stat --no-index $$tmp/manifests manifests || true; git diff --stat --no-index $$tmp/pkg pkg || true; git diff --stat --no-index $$tmp/deploy deploy || true; \
			echo "generated files are out of date: run 'make generate' and commit the result"; exit 1; fi
	@out=$$(gofmt -l cmd deploy pkg manifests test); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	cd test/tools && go mod verify >/dev/null
	cd test/tools/ocm && go mod verify >/dev/null
	cd test/tools/karpenter && go mod verify >/dev/null

##@ Test

.PHONY: test
test: test-unit test-integration test-e2e ## Run unit, integration and end-to-end tests (with -race).

.PHONY: test-unit
test-unit: ## Run unit tests.
	$(GO_TEST) $(TEST_FLAGS) ./cmd/... ./pkg/... ./manifests/...

.PHONY: test-integration
test-integration: build tools ## Run integration tests against real kube-apiserver and etcd processes (the demo's with bin/fleetfit-hub and -agent).
	FLEETFIT_BIN_DIR=$(BIN) $(GO_TEST) $(TEST_FLAGS) -timeout $(INTEGRATION_TIMEOUT) ./test/integration/...

.PHONY: test-e2e
test-e2e: build tools ## Run end-to-end tests: bin/fleetfit-hub and fleetfit-agent, OCM's work agent, kube-scheduler and kwok as processes.
	FLEETFIT_BIN_DIR=$(BIN) $(GO_TEST) $(TEST_FLAGS) -timeout $(E2E_TIMEOUT) ./test/e2e/...

FUZZTIME ?= 1m
.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 1m; CI runs them briefly). New findings land in the package's testdata/fuzz.
	@targets=$$(grep -rl --include='*_test.go' '^func Fuzz' cmd pkg | sort); \
	if [ -z "$$targets" ]; then echo "no fuzz targets"; exit 1; fi; \
	for file in $$targets; do \
		dir=./$$(dirname $$file); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "+ $$fn ($$dir) for $(FUZZTIME)"; \
			$(GO_TEST) -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done

.PHONY: bench
bench: ## Run benchmarks.
	$(GO_TEST) -run '^$$' -bench . -benchmem ./pkg/...

.PHONY: bench-e2e
bench-e2e: build tools ## Placements satisfied per second on a real hub: fleetfit-hub, OCM's placement controller and the API server's write floor (2,000 clusters x 1,000 placements; FLEETFIT_BENCH_LARGE=1 adds 10,000 x 5,000).
	FLEETFIT_BIN_DIR=$(BIN) go test -run '^$$' -bench BenchmarkPlacementEndToEnd -benchtime 1x -timeout 120m -v ./test/bench/placement/

.PHONY: bench-steady
bench-steady: build tools ## fleetfit-hub on a living fleet: CPU, writes and decision changes while agents report nothing that matters, and seconds until a report that makes room is used (500 clusters x 200 placements for 60s; FLEETFIT_BENCH_LARGE=1 adds 2,000 x 1,000 and 10,000 x 5,000).
	FLEETFIT_BIN_DIR=$(BIN) go test -run '^$$' -bench BenchmarkSteadyState -benchtime 1x -timeout 120m -v ./test/bench/steady/

##@ Demo

.PHONY: demo
demo: build tools ## Start a local fleet (a hub, three managed clusters with kwok nodes, agents) with fleetfit placing EMCO's example; runs until Ctrl-C or make demo-down.
	CGO_ENABLED=0 go build -o $(BIN)/fleetfit-demo ./test/demo/fleetfit-demo
	FLEETFIT_BIN_DIR=$(BIN) $(BIN)/fleetfit-demo -dir $(DEMO_DIR)

.PHONY: demo-down
demo-down: ## Stop the fleet that make demo runs (from another terminal) and wait until it is gone.
	@pid=$$(cat $(DEMO_DIR)/demo.pid 2>/dev/null) || { echo "no demo is running ($(DEMO_DIR)/demo.pid not found)"; exit 0; }; \
	if ! kill -TERM "$$pid" 2>/dev/null; then echo "demo process $$pid is gone"; rm -f $(DEMO_DIR)/demo.pid; exit 0; fi; \
	echo "stopping the demo (process $$pid)..."; \
	for i in $$(seq 120); do kill -0 "$$pid" 2>/dev/null || { echo "demo stopped"; exit 0; }; sleep 0.5; done; \
	echo "demo process $$pid still runs after 60s"; exit 1

.PHONY: clean
clean: ## Remove built binaries.
	rm -rf $(BIN)
