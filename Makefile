# sandbox-executable: build, test and release entry points.
#   make build         the binary, bin/sandbox-executable
#   make test          what CI runs: lint, unit tests (race), integration
#                      tests on this kernel, a short fuzz run, the VM suite
#   make bench         startup, file-heavy and memory figures against bare
#                      and bubblewrap
GO       ?= go
BIN      := bin/sandbox-executable
PROBE    := bin/probe
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
UNIT_PKGS = $$($(GO) list ./... | grep -v -e /integration -e /bench)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

DIST     ?= dist

.PHONY: all build probe test lint lint-packaging unit integration fuzz-short vm-test vm-test-kernels vm-selfcheck bench release test-release manpage clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sandbox-executable

# The probe the integration tests run inside the sandbox: static, so it runs
# the same on the host and in the VM guest.
probe: $(PROBE)
$(PROBE): integration/probes/probe.c
	@mkdir -p bin
	gcc -static -O2 -Wall -o $@ $<

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

integration: build probe
	SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) $(GO) test -race -count=1 ./integration/...

# A short, bounded fuzz run of the policy decoders (the corpus is kept in
# policy/testdata/fuzz).
FUZZTIME ?= 15s
fuzz-short:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePolicy$$' -fuzztime $(FUZZTIME) ./policy/

# The same suites in a throwaway QEMU guest with a real unified cgroup v2 and
# another kernel (Debian 12's 6.1, Landlock ABI 2): integration/vm/README.md.
VM_PKGS ?= ./integration/ ./cgroups/ ./spawn/ ./integration/vm/selftest/
vm-test: build probe
	SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) integration/vm/run-tests.sh -short $(VM_PKGS)

# The same on the other kernels the helper is proven on (integration/vm/lib.sh
# vm_kernel_suite: Debian 11's 5.10 without Landlock, bookworm-backports'
# 6.12 with Landlock ABI 6, trixie-backports' 7.3 with ABI 11), one after
# the other: spawn, cgroups and the harness's selftest whole, and of the
# integration suite the tests whose outcome depends on the kernel
# (VM_KERNELS_RUN, a -run regexp; VM_KERNELS_RUN=. runs all of it).
VM_KERNELS ?= 5.10 6.12 7.3
VM_KERNELS_PKGS ?= ./cgroups/ ./spawn/ ./integration/vm/selftest/
VM_KERNELS_RUN ?= ^Test(WriteBoundary|ReadOnlyPolicyWritesNothing|SecretsStayUnreadable|LateSecrets|LandlockOnlyAsUnprivilegedUser|SymlinkOutOfTheRootGivesNothing|InheritedFDsClosed|KeepFDOnlyTheCallers|NoCapabilities|OwnNamespaces|HostProcessesInvisible|OutsideProcessSurvivesSIGKILL|MinimalDev|NoLandlockRefusedThenDegraded|NetworkNone|NetworkAllowlistWithoutNamespace|DaemonSockets|AbstractSockets|BlockedSyscalls|ForeignArchitectureKilled|NoNetwork|ForkBombHitsPidsLimit|CgroupWithoutClone3|MemoryHogKilled|NothingOutlivesARunAndNoCgroupLeaks|ExitCodes|ScratchCacheLayersUnprivileged|PrivateTmpIsBounded)$$
vm-test-kernels: build probe
	@set -e; for k in $(VM_KERNELS); do \
		echo "== vm-test-kernels: kernel $$k"; \
		SE_VM_KERNEL=$$k SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) \
			integration/vm/run-tests.sh -short $(VM_KERNELS_PKGS); \
		SE_VM_KERNEL=$$k SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) \
			integration/vm/run-tests.sh -short -run '$(VM_KERNELS_RUN)' ./integration/; \
	done

vm-selfcheck:
	integration/vm/selfcheck.sh

test: lint lint-packaging unit integration fuzz-short vm-test

# The static "install anywhere" binary and its .sha256 in $(DIST), checked
# by the script (statically linked, no dynamic dependency, a sandboxed run).
release:
	GO=$(GO) packaging/release.sh '$(VERSION)' '$(DIST)'

# The release binary through its checks and the integration suite (as root).
test-release: release probe
	GO=$(GO) packaging/test-release.sh '$(DIST)/sandbox-executable-$(VERSION)-linux-'"$$($(GO) env GOARCH)"

# The man page, from --help; cmd/gen-manpage's test fails when it is stale.
manpage:
	$(GO) run ./cmd/gen-manpage -o packaging/sandbox-executable.1

# Dockerfile.test (without Docker), the packaging scripts, and the AppArmor
# profile (skipped where AppArmor 4 is not installed).
lint-packaging:
	GO=$(GO) packaging/lint-dockerfile.sh
	shellcheck packaging/*.sh packaging/completion/sandbox-executable.bash
	packaging/check-apparmor.sh

# Measured with the release binary (static, as installed).
bench: release probe
	$(GO) run ./bench -bin '$(DIST)/sandbox-executable-$(VERSION)-linux-'"$$($(GO) env GOARCH)" -probe $(PROBE)

clean:
	rm -rf bin dist
