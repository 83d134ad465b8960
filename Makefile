# jvmkit — see README.md. Two entry points do all set-up on a fresh machine (both run scripts/setup first):
#   make demo   build, start the bundled demo JVM, show every capability
#   make test   lint + every test (real JVMs on every JDK, containers; root), then a summary of what skipped
#   make check  the edit loop: build, vet and the tests that need no JVM (go test -short), in a minute

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/jvmkit/jvmkit/internal/cliutil.Version=$(VERSION)
GOLANGCI  := $(BIN)/golangci-lint
GOLANGCI_VERSION := v2.15.0
FUZZTIME  ?= 20s
export GOTOOLCHAIN := local
export CGO_ENABLED := 0

.PHONY: all build setup check test unit lint vet fmt-check demo bench fuzz clean agent

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

# Installs the Debian packages in scripts/packages and builds the cache of other JDKs (JVMKIT_CACHE, default
# /var/cache/jvmkit) when missing; without root it lists what is missing. Idempotent; quick when all is there.
setup:
	scripts/setup

test: setup lint unit

# -p 1: the live tests start real JVMs; two cores are enough for one package at a time. The summary lists every
# skipped test with its reason, the slowest packages and tests, and the CPU time of each package, test and JDK
# (each test binary runs in a cgroup of its own, through testsummary wrap); the raw events are kept in
# bin/test-events.json, the CPU times in bin/test-cpu.json.
unit: build
	$(GO) build -o $(BIN)/testsummary ./scripts/testsummary
	$(BIN)/testsummary -json $(BIN)/test-events.json -cpu $(BIN)/test-cpu.json -- \
	  $(GO) test -json -exec '$(CURDIR)/$(BIN)/testsummary wrap' -p 1 -count=1 -timeout 30m ./...

# The edit loop: no JVM, no root, no external tools. In -short mode testutil's helpers (JDKs, StartJVM,
# MustHaveRoot, MustHaveTool, ...) skip the test, so only pure tests (parsers, fuzz seeds, golden files) run.
check: build vet
	$(GO) test -short -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: fmt-check vet $(GOLANGCI)
	$(GOLANGCI) run ./...

$(GOLANGCI):
	GOBIN=$(CURDIR)/$(BIN) CGO_ENABLED=1 $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

demo: setup build
	scripts/demo

bench: build
	scripts/bench-attach

# Run every fuzz target for FUZZTIME each (the seed corpora also run in `make unit`).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list 'Fuzz.*' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run XXX -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Rebuild the JVMTI perf-map agents that the perfmap package embeds (perfmap/agent/build.sh and a JDK 17's
# headers, JDK_INCLUDE=...): amd64 with gcc, arm64 with Debian's gcc-aarch64-linux-gnu. Commit the libraries
# and their .buildinfo with the C source; TestAgentLibraryFresh fails on a stale one. `build` and `release`
# need no C compiler: they use the committed libraries.
agent:
	CC=gcc ARCH=amd64 perfmap/agent/build.sh
	CC=aarch64-linux-gnu-gcc ARCH=arm64 perfmap/agent/build.sh

clean:
	rm -rf $(BIN)/gjcmd $(BIN)/jvmkit $(BIN)/gjmaps
