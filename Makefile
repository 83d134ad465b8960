# jvmkit — see README.md. Two entry points do all set-up on a fresh machine:
#   make demo   build, start the bundled demo JVM, show every capability
#   make test   lint + every test (real JVMs; root for the namespace and other-uid tests)

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/jvmkit/jvmkit/internal/cli.Version=$(VERSION)
GOLANGCI  := $(BIN)/golangci-lint
GOLANGCI_VERSION := v2.15.0
FUZZTIME  ?= 20s
export GOTOOLCHAIN := local
export CGO_ENABLED := 0

.PHONY: all build test unit lint vet fmt-check demo bench fuzz clean agent

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

test: lint unit

# -p 1: the live tests start real JVMs; two cores are enough for one package at a time.
unit: build
	$(GO) test -p 1 -count=1 -timeout 15m ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: fmt-check vet $(GOLANGCI)
	$(GOLANGCI) run ./...

$(GOLANGCI):
	GOBIN=$(CURDIR)/$(BIN) CGO_ENABLED=1 $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

demo: build
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

# Rebuild the JVMTI perf-map agent that the perfmap package embeds (perfmap/agent/build.sh: gcc and a JDK 17's
# headers, JDK_INCLUDE=...); commit the library and its .buildinfo with the C source. `build` does not need
# gcc: it uses the committed library.
agent:
	perfmap/agent/build.sh

clean:
	rm -rf $(BIN)/gjcmd $(BIN)/jvmkit $(BIN)/gjmaps
