# sandbox-executable: build, test and release entry points.
#   make build         the binary, bin/sandbox-executable
#   make test          the README's test command: lint, unit tests (race;
#                      spawn's C under ASan), integration tests on this kernel
#                      (and again through the warm path, and with a resident
#                      decider), short fuzz runs (Go; C under libFuzzer)
#   make test-vm       the QEMU guests, which CI runs beside it: 6.1; 5.10,
#                      6.12, 7.3; arm64; a systemd guest; Ubuntu's AppArmor
#   make host-kinds    the README's table of host kinds, from the tests
#   make bench         one table: start-up and real work under bare,
#                      bubblewrap and the helper (make vm-bench: in the VM)
GO       ?= go
BIN      := bin/sandbox-executable
PROBE    := bin/probe
# The tag when HEAD has one (v1.2.0), else the latest tag and the commits
# since (v1.2.0-3-gabc1234), else the commit; -dirty for local changes.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
UNIT_PKGS = $$($(GO) list ./... | grep -v -e /integration -e /bench)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

DIST     ?= dist
# The architectures make release builds (packaging/release.sh).
RELEASE_ARCHES ?= amd64 arm64

.PHONY: all install build build-arm64 probe probe-arm64 test test-vm lint lint-packaging unit unit-asan integration integration-warm integration-decider fuzz-short fuzz-c vm-test vm-test-kernels vm-test-arm64 vm-test-systemd vm-test-ubuntu vm-selfcheck host-kinds bench vm-bench release test-release manpage clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sandbox-executable

# The probe the integration tests run inside the sandbox: static, so it runs
# the same on the host and in the VM guest.
# Every C file is built with the warnings of CWARN and no warning passes
# (spawn's through its #cgo CFLAGS, which say the same).
CWARN := -Wall -Wextra -Wconversion -Werror
probe: $(PROBE)
$(PROBE): integration/probes/probe.c
	@mkdir -p bin
	gcc -static -O2 $(CWARN) -o $@ $<

# The same probe for the arm64 guest (make vm-test-arm64), cross-compiled.
PROBE_ARM64 := bin/probe-arm64
probe-arm64: $(PROBE_ARM64)
$(PROBE_ARM64): integration/probes/probe.c
	@mkdir -p bin
	aarch64-linux-gnu-gcc -static -O2 $(CWARN) -o $@ $<

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

# spawn's unit tests once more with its C under AddressSanitizer (go test
# -asan; gcc's, as clang cannot build libseccomp-golang's constants here):
# the stage, the runner and its raw clones, the parsers.
unit-asan:
	$(GO) test -asan -count=1 ./spawn/

integration: build probe
	SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) $(GO) test -race -count=1 -timeout 30m ./integration/...

# The integration suite again with every run carried out by the warm path
# where it can be: each helper invocation first runs once with /bin/true as
# its program, which stores the invocation's recipe (integration/harness_test.go).
integration-warm: build probe
	SE_IT_WARM=1 SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) $(GO) test -count=1 -timeout 30m ./integration/

# The integration tests once more with a resident decider to ask: every
# run's recipe is the one the decider decided for it (harness_test.go).
integration-decider: build probe
	SE_IT_DECIDER=1 SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) $(GO) test -count=1 -timeout 30m ./integration/

# A short, bounded fuzz run of the policy decoders and of the resident
# decider's request parser (the corpora are kept in policy/testdata/fuzz
# and decider/testdata/fuzz). Bounded by a count of executions, not a
# time: Go 1.26's fuzz coordinator can fail a run whose time is up while a
# starved worker is still busy ("context deadline exceeded", no input at
# fault: go.dev/issue/75804, fixed in 1.27).
FUZZTIME ?= 300000x
fuzz-short:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePolicy$$' -fuzztime $(FUZZTIME) ./policy/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./decider/

# The C parsers of data that crosses a trust or process boundary (a stored
# recipe, its dependency records, the store's entries, /proc/self/status
# for the recipe key), fuzzed by libFuzzer under AddressSanitizer and
# UndefinedBehaviorSanitizer (spawn/fuzz/README.md): FUZZ_C_TIME seconds
# each from the committed corpus, FUZZ_C_JOBS harnesses at a time; new
# inputs go to bin/fuzz/new, findings to bin/fuzz/crash-*. The harnesses
# link spawn's C but warm.c, whose constructor carries out stored recipes.
FUZZ_CC     ?= clang-14
FUZZ_C_TIME ?= 30
FUZZ_C_JOBS ?= 2
FUZZ_C      := recipe deps store status
FUZZ_SAN    := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SPAWN  := $(filter-out spawn/warm.c,$(wildcard spawn/*.c))
FUZZ_ENV    := ASAN_SYMBOLIZER_PATH=$$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer) \
	ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
bin/fuzz/%: spawn/fuzz/fuzz_%.c spawn/fuzz/confine.c spawn/fuzz/*.h spawn/fuzz/coverage-ignore.txt $(FUZZ_SPAWN) spawn/*.h
	@mkdir -p bin/fuzz
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -fsanitize-coverage-ignorelist=spawn/fuzz/coverage-ignore.txt \
		$(CWARN) -Ispawn -o $@ $< spawn/fuzz/confine.c $(FUZZ_SPAWN)
fuzz-c:
	@$(MAKE) --no-print-directory -j$(FUZZ_C_JOBS) --output-sync=target $(FUZZ_C:%=fuzz-c-%)
fuzz-c-%: bin/fuzz/%
	@echo "== fuzz-c: $*"; mkdir -p bin/fuzz/new/$*
	@$(FUZZ_ENV) bin/fuzz/$* -max_total_time=$(FUZZ_C_TIME) -print_final_stats=1 \
		-artifact_prefix=bin/fuzz/crash-$*- bin/fuzz/new/$* spawn/fuzz/corpus/$* </dev/null

# The same suites in a throwaway QEMU guest with a real unified cgroup v2 and
# another kernel (Debian 12's 6.1, Landlock ABI 2): integration/vm/README.md.
VM_PKGS ?= ./integration/ ./cgroups/ ./spawn/ ./integration/vm/selftest/
# Of the integration package, the tests whose outcome the guest's kernel does
# not change (which files git's configuration makes it run, a commit's
# outcome, the proxy's answers) are left to the host's run: under emulation
# they took 290 of its 990 s. VM_SKIP= runs them too.
VM_SKIP ?= ^Test(GitRunsNothingTheProgramWrote|GitCommitInTheSandbox|GitCommitKeepsWhatGitRuns|GitConfigEditedBetweenRuns|NetworkAllowlistFirstRequest|ProxyNeverReachesTheHost)$$
# A guest's limits follow its progress, not the wall clock (SE_VM_TIMEOUT,
# integration/vm/README.md): the -short integration package in one guest
# took 1,120 s on a quiet machine, 825 s with VM_SKIP.
vm-test: build probe
	SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) integration/vm/run-tests.sh -short $(if $(VM_SKIP),-skip '$(VM_SKIP)') $(VM_PKGS)

# The arm64 guest (integration/vm/arm64.sh): Debian 12's arm64 kernel in
# qemu-system-aarch64 under TCG, the cross-built static helper, probe and test
# binaries. cgroups and spawn run whole (the harness's own selftest runs in
# the 6.1 guest only: run-tests.sh's probe checks every guest's kernel,
# cgroups and Landlock ABI before any test); of the integration package,
# under emulation several times slower than the x86 guest, the tests of
# VM_ARM64_RUN: the C stage and its clone paths, seccomp
# (the strict model, the foreign architecture: AArch32), Landlock and the
# mount namespace, the other namespaces, the cgroup limits, exit codes and
# signals (VM_ARM64_RUN= runs them all).
BIN_ARM64 := bin/sandbox-executable-arm64
VM_ARM64_PKGS ?= ./cgroups/ ./spawn/
VM_ARM64_RUN ?= ^Test(BlockedSyscalls|LogOnlyKeepsTheStrictModel|NoNetwork|ForeignArchitectureKilled|InheritedFDsClosed|ProcessState|WriteBoundary|ReadOnlyPolicyWritesNothing|SecretsStayUnreadable|LandlockOnlyAsUnprivilegedUser|NoCapabilities|RootCannotUsePrivilege|OwnNamespaces|HostProcessesInvisible|MinimalDev|HelperKilledLeavesNothing|ForkBombHitsPidsLimit|CgroupWithoutClone3|MemoryHogKilled|CPUBudgetForTheTree|NothingOutlivesARunAndNoCgroupLeaks|SupervisorKilledNothingRunsOn|ExitCodes|TimeoutEndsTheWholeTree|SignalsReachTheProgram|StdioPassThrough|ReportForEveryEnding|HostKind)$$
VM_ARM64_ENV = SE_VM_ARCH=arm64 SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN_ARM64) SANDBOX_PROBE=$(CURDIR)/$(PROBE_ARM64)
build-arm64:
	CGO_ENABLED=1 GOARCH=arm64 CC=aarch64-linux-gnu-gcc PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig \
		$(GO) build -trimpath -tags osusergo,netgo -ldflags '$(LDFLAGS) -linkmode=external -extldflags=-static' \
		-o $(BIN_ARM64) ./cmd/sandbox-executable
vm-test-arm64: build-arm64 probe-arm64
	$(VM_ARM64_ENV) integration/vm/run-tests.sh -short $(VM_ARM64_PKGS)
	$(VM_ARM64_ENV) integration/vm/run-tests.sh -short $(if $(VM_ARM64_RUN),-run '$(VM_ARM64_RUN)') ./integration/

# The same on the other kernels the helper is proven on (integration/vm/lib.sh
# vm_kernel_suite: Debian 11's 5.10 without Landlock, bookworm-backports'
# 6.12 with Landlock ABI 6, trixie-backports' 7.3 with ABI 11), one after
# the other: spawn and cgroups whole (the selftest as for arm64), and of the
# integration suite the tests whose outcome depends on the kernel
# (VM_KERNELS_RUN, a -run regexp; VM_KERNELS_RUN=. runs all of it).
VM_KERNELS ?= 5.10 6.12 7.3
VM_KERNELS_PKGS ?= ./cgroups/ ./spawn/
VM_KERNELS_RUN ?= ^Test(WriteBoundary|ReadOnlyPolicyWritesNothing|SecretsStayUnreadable|LateSecrets|LandlockOnlyAsUnprivilegedUser|SymlinkOutOfTheRootGivesNothing|InheritedFDsClosed|KeepFDOnlyTheCallers|NoCapabilities|OwnNamespaces|HostProcessesInvisible|OutsideProcessSurvivesSIGKILL|MinimalDev|NoLandlockRefusedThenDegraded|NetworkNone|NetworkAllowlistWithoutNamespace|DaemonSockets|AbstractSockets|BlockedSyscalls|ForeignArchitectureKilled|NoNetwork|ForkBombHitsPidsLimit|CgroupWithoutClone3|MemoryHogKilled|NothingOutlivesARunAndNoCgroupLeaks|ExitCodes|ScratchCacheLayersUnprivileged|PrivateTmpIsBounded)$$
vm-test-kernels: build probe
	@set -e; for k in $(VM_KERNELS); do \
		echo "== vm-test-kernels: kernel $$k"; \
		SE_VM_KERNEL=$$k SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) \
			integration/vm/run-tests.sh -short $(VM_KERNELS_PKGS); \
		SE_VM_KERNEL=$$k SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) \
			integration/vm/run-tests.sh -short -run '$(VM_KERNELS_RUN)' ./integration/; \
	done

# Ubuntu 24.04's kernel (integration/vm/lib.sh: ubuntu-6.8) with Ubuntu's
# restriction of unprivileged user namespaces on and its unprivileged_userns
# profile loaded: the helper as nobody without a profile, with the packaged
# one (packaging/apparmor) and at a path it does not cover
# (integration/apparmor_test.go). setup.sh --apparmor gives the AppArmor 4
# parser and Ubuntu's defaults; /usr/local/bin is overlaid writable in the
# guest for the binary's copy where the profile names it.
VM_UBUNTU_RUN ?= ^TestUbuntuAppArmorUserns$$
# Ubuntu's archive is not one of this machine kind's registries: where it
# cannot be reached the target says so and passes.
vm-test-ubuntu: build probe
	@if ! curl -sf --max-time 30 -o /dev/null http://archive.ubuntu.com/ubuntu/dists/noble-updates/InRelease; then \
		echo "vm-test-ubuntu: skipped: archive.ubuntu.com cannot be reached (the guest's kernel and AppArmor defaults come from it)"; exit 0; fi; \
	set -e; aa=$$(integration/vm/setup.sh --apparmor); eval "$$aa"; \
	au=$$(integration/vm/setup.sh --apparmor-ubuntu); eval "$$au"; \
	SE_VM_KERNEL=ubuntu-6.8 SE_VM_WRITABLE=/usr/local/bin SE_APPARMOR_PARSER="$$APPARMOR_PARSER" \
		SE_APPARMOR_BASE="$$APPARMOR_BASE" SE_APPARMOR_UBUNTU="$$APPARMOR_UBUNTU" \
		SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) SANDBOX_PROBE=$(CURDIR)/$(PROBE) \
		integration/vm/run-tests.sh -short -v -run '$(VM_UBUNTU_RUN)' ./integration/

vm-selfcheck:
	integration/vm/selfcheck.sh

# What the helper enforces on each kind of host, from TestHostKind and the
# container matrix run here and in every guest: the README's table.
host-kinds: build probe build-arm64 probe-arm64
	integration/vm/hostkinds.sh

# Rootless on systemd: a Debian bookworm guest with systemd as PID 1 and a
# user manager; the helper as that user from a root-owned login scope
# (integration/vm/systemd/). BASE=path also runs an older build there.
vm-test-systemd: build probe
	integration/vm/systemd/run.sh $(CURDIR)/$(BIN) $(BASE)

# The README's test command: everything that runs on this machine's own
# kernel. The QEMU guests (other kernels, a unified cgroup v2, arm64,
# systemd, Ubuntu's AppArmor) are test-vm, which CI runs after it (.ci/run).
test: lint lint-packaging unit unit-asan integration integration-warm integration-decider fuzz-short fuzz-c

test-vm: vm-test vm-test-kernels vm-test-arm64 vm-test-systemd vm-test-ubuntu

# The static "install anywhere" binaries (linux-amd64, linux-arm64) and their
# .sha256 in $(DIST), checked by the script (statically linked, no dynamic
# dependency, a sandboxed run on this machine's architecture).
release:
	GO=$(GO) RELEASE_ARCHES='$(RELEASE_ARCHES)' packaging/release.sh '$(VERSION)' '$(DIST)'

# The release binary for this machine's architecture, installed as
# $(PREFIX)/bin/sandbox-executable.
PREFIX ?= /usr/local
install: release
	install -D -m 0755 "$(RELEASE_BIN)" "$(DESTDIR)$(PREFIX)/bin/sandbox-executable"

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
	@set -e; aa=$$(integration/vm/setup.sh --apparmor); eval "$$aa"; \
	APPARMOR_PARSER="$$APPARMOR_PARSER" APPARMOR_BASE="$$APPARMOR_BASE" APPARMOR_REQUIRE=1 packaging/check-apparmor.sh

# Measured with the release binary (static, as installed): one table of
# bare, bubblewrap and the helper, paired round by round (bench/main.go).
# BENCH_ARGS: e.g. "-n 200", "-work open,stat", "all" (adds the split of
# the file work into seccomp's and Landlock's own cost, denials, memory).
BENCH_ARGS ?= -cold -first -decider
RELEASE_BIN = $(DIST)/sandbox-executable-$(VERSION)-linux-$$($(GO) env GOARCH)
bench: release probe
	$(GO) run ./bench -bin "$(RELEASE_BIN)" -probe $(PROBE) $(BENCH_ARGS)

# The same table inside the unified-v2 VM guest (integration/vm/), bubblewrap
# from the host's userland, which the guest mounts read-only. The guest runs
# Go code several times slower: fewer rounds, and the work items that finish
# there in seconds.
VM_BENCH_ARGS ?= -n 50 -cold -first -decider -static-true -work open,stat,compileall -scale 0.5
vm-bench: release probe
	$(GO) build -o bin/bench ./bench
	SE_VM_PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/go/bin integration/vm/exec $(CURDIR)/bin/bench -bin "$(CURDIR)/$(RELEASE_BIN)" -probe $(CURDIR)/$(PROBE) $(VM_BENCH_ARGS)

clean:
	rm -rf bin dist
