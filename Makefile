# jvmkit — see README.md. Two entry points do all set-up on a fresh machine (both run scripts/setup first):
#   make demo   build, start the bundled demo JVM, show every capability
#   make test   lint + every test (real JVMs on every JDK, containers; root), then a summary of what skipped
#   make check  the edit loop: build, vet and the tests that need no JVM (go test -short), in a minute

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    := $(shell git rev-parse HEAD 2>/dev/null)
# The commit's date, not the build's: two builds of one commit are the same bytes.
DATE      := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
CLIPKG    := github.com/jvmkit/jvmkit/cmd/internal/cliutil
LDFLAGS   := -s -w -X $(CLIPKG).Version=$(VERSION) -X $(CLIPKG).Commit=$(COMMIT) -X $(CLIPKG).Date=$(DATE)
DIST      ?= $(CURDIR)/dist
RELEASE   := cd cmd/release && $(GO) run .
GOLANGCI  := $(BIN)/golangci-lint
GOLANGCI_VERSION := v2.15.0
FUZZTIME  ?= 20s
export GOTOOLCHAIN := local
export CGO_ENABLED := 0

.PHONY: all build setup check test unit lint vet fmt-check demo bench fuzz clean agent release image release-test arm64

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

# Installs the Debian packages in scripts/packages and builds the cache of other JDKs (JVMKIT_CACHE, default
# /var/cache/jvmkit) when missing; without root it lists what is missing. Idempotent; quick when all is there.
setup:
	scripts/setup

# Lint and the two small tiers side by side, then the long one alone: the tiers do not time anything
# (the arm64 one mostly waits on qemu, the release one on dpkg and podman), the unit tests sample and
# measure, so nothing runs beside them. One minute less than running the three one after the other.
test: setup
	$(MAKE) -j3 lint arm64 release-test
	$(MAKE) unit

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

# --allow-serial-runners: another golangci-lint on the machine (another checkout's make) is waited for,
# not a failure ("parallel golangci-lint is running").
lint: fmt-check vet $(GOLANGCI)
	$(GOLANGCI) run --allow-serial-runners ./...
	cd cmd/release && $(GO) vet ./... && $(CURDIR)/$(GOLANGCI) run --allow-serial-runners ./...

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

# Rebuild the JVMTI agents that the jvmti package embeds (jvmti/agent/build.sh and a JDK 17's
# headers, JDK_INCLUDE=...): amd64 with gcc, arm64 with Debian's gcc-aarch64-linux-gnu. Commit the libraries
# and their .buildinfo with the C source; TestAgentLibraryFresh fails on a stale one. `build` and `release`
# need no C compiler: they use the committed libraries.
agent:
	for n in perfmap heapsample; do \
		NAME=$$n CC=gcc ARCH=amd64 jvmti/agent/build.sh && \
		NAME=$$n CC=aarch64-linux-gnu-gcc ARCH=arm64 jvmti/agent/build.sh || exit 1; \
	done

# Everything a user downloads, from the commit at HEAD (VERSION= to name it otherwise): per architecture
# (amd64, arm64) a .tar.gz (binaries, README, completions, man pages), a .deb, an .rpm and an OCI image
# archive, and SHA256SUMS, in dist/. Reproducible: a second run gives the same SHA256SUMS. See
# cmd/release (a module of its own, so that nfpm and go-containerregistry stay out of go.mod).
release:
	$(RELEASE) dist -version '$(VERSION)' -commit '$(COMMIT)' -date '$(DATE)' -out '$(DIST)'
	cd '$(DIST)' && sha256sum -c SHA256SUMS

# The OCI image archives alone (dist/jvmkit_<version>_linux_<arch>.oci.tar), built without a container daemon:
#   podman load -i dist/jvmkit_*_linux_amd64.oci.tar     or     skopeo copy oci-archive:... docker://...
image:
	$(RELEASE) image -version '$(VERSION)' -commit '$(COMMIT)' -date '$(DATE)' -out '$(DIST)'

# The release tool's tests: one release built and shared (both architectures; a second amd64 run for
# reproducibility), the packages read back with dpkg-deb and rpm, the amd64 .deb installed into a dpkg root
# of its own (nothing on the host's /usr or PATH) and used against a live JVM (man pages, bash completion),
# the arm64 binaries under qemu, the Kubernetes manifests against docs/deploy.md's table, and each row's
# capabilities verified with setpriv against a live JVM. About 60 s on a quiet 2-core machine.
# Through testsummary as unit is: skipped tests listed with their reasons, CPU and wall time per test.
release-test:
	$(GO) build -o $(BIN)/testsummary ./scripts/testsummary
	cd cmd/release && $(CURDIR)/$(BIN)/testsummary -json $(CURDIR)/$(BIN)/release-test-events.json \
	  -cpu $(CURDIR)/$(BIN)/release-test-cpu.json -- \
	  $(GO) test -json -exec '$(CURDIR)/$(BIN)/testsummary wrap' -count=1 -timeout 20m ./...

# The packages whose tests need no live JVM, built for arm64 and run under qemu-user-static (go test -exec).
# The exhaustive truncation and corruption loops are left to the amd64 run: they test the same code on
# every byte, at 10-20 times the cost under emulation, and find nothing that their arm64 seeds do not.
ARM64_PKGS := ./attach/... ./flame/... ./jfr/... ./internal/hsperf/... ./internal/javaname/... ./cmd/internal/agent/... ./cmd/internal/gjcmd/... ./cmd/internal/gjmaps/... ./cmd/internal/jfrexport/... ./cmd/internal/jitrecord/... ./cmd/internal/jvmkit/... ./cmd/internal/cliutil/...
ARM64_SKIP := ^(TestCorrupt|TestTruncated|TestRealTruncated|TestFoldRandom)$$
arm64:
	GOARCH=arm64 $(GO) test -short -count=1 -skip '$(ARM64_SKIP)' -exec qemu-aarch64-static $(ARM64_PKGS)

clean:
	rm -rf $(BIN)/gjcmd $(BIN)/jvmkit $(BIN)/gjmaps $(DIST)
