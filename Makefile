# airgap — see README.md
GO        ?= go
BIN       ?= bin/airgap
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.Version=$(VERSION)
FUZZTIME  ?= 10s

.PHONY: build test test-short fuzz bench bench-smoke demo vet clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

# The whole suite, end-to-end with the real terraform included, then a short
# run of every fuzz target.
test: vet
	$(GO) test -count=1 -timeout 20m ./...
	$(MAKE) fuzz FUZZTIME=5s

test-short:
	$(GO) test -count=1 -short ./...

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# -fuzzminimizetime 20x: minimizing a new input may otherwise run past
# -fuzztime and fail the run with "context deadline exceeded".
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./bundle
	$(GO) test -run '^$$' -fuzz '^FuzzParseManifest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./bundle
	$(GO) test -run '^$$' -fuzz '^FuzzCheckManifest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./bundle
	$(GO) test -run '^$$' -fuzz '^FuzzParseShasums$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist
	$(GO) test -run '^$$' -fuzz '^FuzzReadKeyring$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./verify
	$(GO) test -run '^$$' -fuzz '^FuzzPrintable$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist
	$(GO) test -run '^$$' -fuzz '^FuzzGetterParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist/getter
	$(GO) test -run '^$$' -fuzz '^FuzzExtract$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist/getter
	$(GO) test -run '^$$' -fuzz '^FuzzLockFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist/tfconfig
	$(GO) test -run '^$$' -fuzz '^FuzzConfig$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist/tfconfig
	$(GO) test -run '^$$' -fuzz '^FuzzParseSpec$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist/export
	$(GO) test -run '^$$' -fuzz '^FuzzZipFromTarGz$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist/modzip
	$(GO) test -run '^$$' -fuzz '^FuzzRenderKey$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./server
	$(GO) test -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist/vendoring
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./dist/zipdir
	$(GO) test -run '^$$' -fuzz '^FuzzAccessFields$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 20x ./server

bench:
	bash testdata/bench/run.sh

bench-smoke:
	SMOKE=1 bash testdata/bench/run.sh

# The whole journey on loopback from built-in fixtures; leaves
# 'airgap serve' running on https://localhost:8443 and prints the client config.
demo: build
	$(GO) run ./testdata/demo -airgap $(BIN)

clean:
	rm -rf bin
