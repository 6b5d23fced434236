# airgap — see README.md
GO        ?= go
BIN       ?= bin/airgap
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.Version=$(VERSION)
FUZZTIME  ?=

.PHONY: image build test test-short test-clients fuzz bench bench-smoke bench-docs demo vet lint clean compat-table

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

# The container image, without a container daemon: the static binary for
# linux/amd64 and linux/arm64 in an OCI image index, non-root (uid 65532),
# no shell, a pinned CA bundle, every time in it the commit's time
# (SOURCE_DATE_EPOCH), written as an OCI archive (IMAGE; podman load -i,
# skopeo copy oci-archive:...). Prints the index's digest: the same commit
# gives the same digest (docs/kubernetes.md).
IMAGE       ?= bin/airgap-image.oci.tar
IMAGE_BIN   ?= bin/image
IMAGE_EPOCH ?= $(if $(SOURCE_DATE_EPOCH),$(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null || echo 0))
image:
	@mkdir -p $(IMAGE_BIN)/amd64 $(IMAGE_BIN)/arm64
	@for a in amd64 arm64; do CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o $(IMAGE_BIN)/$$a/airgap . || exit 1; done
	@$(GO) run ./server/deploy/image -version $(VERSION) -revision "$$(git rev-parse HEAD 2>/dev/null)" -epoch $(IMAGE_EPOCH) -out $(IMAGE) linux/amd64=$(IMAGE_BIN)/amd64/airgap linux/arm64=$(IMAGE_BIN)/arm64/airgap

# The whole suite, end-to-end with the real terraform included, then a short
# run of every fuzz target. First it says which tools it found, what the
# first run builds into the test cache and how long that takes, and stops
# with what to install when something is missing (the preflight, in
# testdata/e2e/harness). The end-to-end tests are packages by area under
# testdata/e2e (./... does not reach into testdata); two packages run at
# once. The timeout is per package: on a fresh machine the first package
# to need them also builds tofu, the registry, trivy and govulncheck (about
# 15 minutes on 2 cores) before its tests. The preflight runs before vet
# (about 3 minutes on 2 cores), so that a missing tool stops it at once.
test:
	AIRGAP_TEST_PREFLIGHT=1 $(GO) test -count=1 -run '^$$' ./testdata/e2e/harness
	$(MAKE) vet
	$(GO) test -count=1 -p 2 -timeout 40m ./... ./testdata/e2e/... ./testdata/testclients
	$(MAKE) fuzz FUZZTIME=

# Terraform 1.15.9 for a clone that has no ../shared/clients beside it:
# fetched from releases.hashicorp.com, its SHA256SUMS signature checked
# with HashiCorp's key (pinned by fingerprint) and the zip against its
# line, unpacked into the test cache, where make test finds it. Needs
# https to releases.hashicorp.com and www.hashicorp.com.
test-clients:
	$(GO) run ./testdata/testclients

# Rewrites the client compatibility table in docs/offline.md ("Which
# clients, which lock files") from a run of the client matrix (every
# terraform and tofu version in every mode; see testdata/e2e/journey).
# make test fails while the page disagrees.
compat-table:
	AIRGAP_UPDATE_COMPAT=1 $(GO) test -count=1 -run '^TestClientMatrix$$' -timeout 20m ./testdata/e2e/journey

test-short:
	$(GO) test -count=1 -short ./... ./testdata/e2e/...

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# staticcheck, pinned, built once into the test tools' cache (about a
# minute on 2 cores the first time, from the Go module proxy).
STATICCHECK_VERSION := 0.8.2
TOOLCACHE   ?= $(if $(AIRGAP_TEST_CACHE),$(AIRGAP_TEST_CACHE),$(HOME)/.cache/airgap)
STATICCHECK := $(TOOLCACHE)/staticcheck-$(STATICCHECK_VERSION)

# ... and the binary builds for every platform the README offers it on:
# the connected side may be a macOS or Windows workstation.
lint: $(STATICCHECK)
	$(STATICCHECK) ./...
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null .
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null .

$(STATICCHECK):
	mkdir -p $(TOOLCACHE)
	tmp=$$(mktemp -d $(TOOLCACHE)/.gobin-XXXXXX) && \
	  GOBIN=$$tmp $(GO) install honnef.co/go/tools/cmd/staticcheck@v$(STATICCHECK_VERSION) && \
	  mv $$tmp/staticcheck $@ && rmdir $$tmp

# make fuzz FUZZTIME=10m fuzzes every target for that long. Without
# FUZZTIME (make test) each runs a fixed number of executions instead, the
# count after it (about 4 s of it on the project's 2-core machine): with a
# duration, Go 1.26's fuzz coordinator can fail a run at its deadline with
# "context deadline exceeded" and no failing input (golang/go#75804, fixed in
# Go 1.27), which would make CI red at random. -fuzzminimizetime 20x:
# minimizing a new input may otherwise run past the deadline the same way.
fuzztime = $(if $(FUZZTIME),$(FUZZTIME),$(1)x)
FUZZ = $(GO) test -run '^$$' -fuzzminimizetime 20x

fuzz:
	$(FUZZ) -fuzz '^FuzzReader$$' -fuzztime $(call fuzztime,30000) ./bundle
	$(FUZZ) -fuzz '^FuzzChainCheck$$' -fuzztime $(call fuzztime,4000) ./bundle/check
	$(FUZZ) -fuzz '^FuzzFrames$$' -fuzztime $(call fuzztime,25000) ./bundle
	$(FUZZ) -fuzz '^FuzzParseManifest$$' -fuzztime $(call fuzztime,60000) ./bundle
	$(FUZZ) -fuzz '^FuzzCheckManifest$$' -fuzztime $(call fuzztime,40000) ./bundle/check
	$(FUZZ) -fuzz '^FuzzParseShasums$$' -fuzztime $(call fuzztime,120000) ./dist
	$(FUZZ) -fuzz '^FuzzReadKeyring$$' -fuzztime $(call fuzztime,100000) ./verify
	$(FUZZ) -fuzz '^FuzzPrintable$$' -fuzztime $(call fuzztime,60000) ./dist
	$(FUZZ) -fuzz '^FuzzJSONLimit$$' -fuzztime $(call fuzztime,30000) ./dist
	$(FUZZ) -fuzz '^FuzzGetterParse$$' -fuzztime $(call fuzztime,40000) ./dist/getter
	$(FUZZ) -fuzz '^FuzzExtract$$' -fuzztime $(call fuzztime,3500) ./dist/getter
	$(FUZZ) -fuzz '^FuzzLockFile$$' -fuzztime $(call fuzztime,60000) ./dist/tfconfig
	$(FUZZ) -fuzz '^FuzzConfig$$' -fuzztime $(call fuzztime,60000) ./dist/tfconfig
	$(FUZZ) -fuzz '^FuzzConstEval$$' -fuzztime $(call fuzztime,40000) ./dist/tfconfig
	$(FUZZ) -fuzz '^FuzzParseSpec$$' -fuzztime $(call fuzztime,12000) ./dist/export
	$(FUZZ) -fuzz '^FuzzZipFromTarGz$$' -fuzztime $(call fuzztime,120000) ./dist/modzip
	$(FUZZ) -fuzz '^FuzzRenderKey$$' -fuzztime $(call fuzztime,6000) ./server
	$(FUZZ) -fuzz '^FuzzReadUsage$$' -fuzztime $(call fuzztime,20000) ./bundle/store
	$(FUZZ) -fuzz '^FuzzRewrite$$' -fuzztime $(call fuzztime,60000) ./dist/vendoring
	$(FUZZ) -fuzz '^FuzzCheck$$' -fuzztime $(call fuzztime,200000) ./dist/zipdir
	$(FUZZ) -fuzz '^FuzzAccessFields$$' -fuzztime $(call fuzztime,20000) ./server/ops
	$(FUZZ) -fuzz '^FuzzLineHandler$$' -fuzztime $(call fuzztime,8000) ./server/ops
	$(FUZZ) -fuzz '^FuzzHelperOutput$$' -fuzztime $(call fuzztime,50000) ./dist/registry
	$(FUZZ) -fuzz '^FuzzMirrorArchives$$' -fuzztime $(call fuzztime,20000) ./dist/registry
	$(FUZZ) -fuzz '^FuzzDocsTar$$' -fuzztime $(call fuzztime,12000) ./dist/docs
	$(FUZZ) -fuzz '^FuzzFrontMatter$$' -fuzztime $(call fuzztime,25000) ./dist/docs
	$(FUZZ) -fuzz '^FuzzRenderMarkdown$$' -fuzztime $(call fuzztime,6000) ./server/ui
	$(FUZZ) -fuzz '^FuzzCLIConfig$$' -fuzztime $(call fuzztime,20000) ./dist/registry
	$(FUZZ) -fuzz '^FuzzAuthenticate$$' -fuzztime $(call fuzztime,15000) ./server
	$(FUZZ) -fuzz '^FuzzLoginRequests$$' -fuzztime $(call fuzztime,3000) ./server
	$(FUZZ) -fuzz '^FuzzRouteAccess$$' -fuzztime $(call fuzztime,20000) ./server
	$(FUZZ) -fuzz '^FuzzParse$$' -fuzztime $(call fuzztime,20000) ./server/acl
	$(FUZZ) -fuzz '^FuzzPattern$$' -fuzztime $(call fuzztime,60000) ./server/acl
	$(FUZZ) -fuzz '^FuzzParsePinsFile$$' -fuzztime $(call fuzztime,30000) ./bundle/store
	$(FUZZ) -fuzz '^FuzzParseAgainst$$' -fuzztime $(call fuzztime,30000) ./bundle/store
	$(FUZZ) -fuzz '^FuzzParse$$' -fuzztime $(call fuzztime,4500) ./bundle/approval
	$(FUZZ) -fuzz '^FuzzSet$$' -fuzztime $(call fuzztime,90000) ./dist/portable
	$(FUZZ) -fuzz '^FuzzScanner$$' -fuzztime $(call fuzztime,25000) ./dist/goinfo
	$(FUZZ) -fuzz '^FuzzCountSARIF$$' -fuzztime $(call fuzztime,60000) ./dist
	$(FUZZ) -fuzz '^FuzzHCLTokens$$' -fuzztime $(call fuzztime,30000) ./dist
	$(FUZZ) -fuzz '^FuzzHCLTemplateTokens$$' -fuzztime $(call fuzztime,25000) ./dist
	$(FUZZ) -fuzz '^FuzzParseHCL$$' -fuzztime $(call fuzztime,30000) ./dist
	$(FUZZ) -fuzz '^FuzzParseHCLFragments$$' -fuzztime $(call fuzztime,30000) ./dist
	$(FUZZ) -fuzz '^FuzzHCLNestingBound$$' -fuzztime $(call fuzztime,30000) ./dist

bench:
	bash testdata/bench/run.sh

bench-smoke:
	SMOKE=1 bash testdata/bench/run.sh

# The docs of an AWS-sized provider (two releases of a synthetic repository
# of its size and page count on the loopback git server): export time
# against --no-docs, sizes, serve's page times (docs/documentation.md).
bench-docs:
	AIRGAP_BENCH_DOCS=1 $(GO) test -count=1 -timeout 30m -run '^TestDocsLargeProvider$$' -v ./testdata/e2e/docs 2>&1 | grep -E 'docs_measure_test|^(ok|FAIL|---)'

# The whole journey on loopback from built-in fixtures; leaves
# 'airgap serve' running on https://localhost:$(DEMO_PORT) and the stand-in
# internet up, and prints how to use both. A second demo at once needs
# another port and directory: make demo DEMO_PORT=8444 DEMO_DIR=demo2.
DEMO_PORT ?= 8443
DEMO_DIR  ?= demo
demo: build
	$(GO) run ./testdata/demo -airgap $(BIN) -listen 127.0.0.1:$(DEMO_PORT) -dir $(DEMO_DIR)

clean:
	rm -rf bin
