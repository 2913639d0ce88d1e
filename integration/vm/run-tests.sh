#!/usr/bin/env bash
# Runs Go test packages inside throwaway QEMU guests with a real unified
# cgroup v2 (cpu, memory, pids): what CI and `make vm-test` call.
#
# Usage: integration/vm/run-tests.sh [go test flags] [packages]   (default ./...)
#
# 1. installs and caches what the guest needs (setup.sh);
# 2. boots one guest with a tiny probe and prints its kernel, Landlock ABI and
#    cgroup controllers (and stops right there if the guest does not work);
# 3. runs `go test -count=1 -exec integration/vm/exec ARGS...`: each test
#    binary runs in a fresh guest, go test prints its own ok/FAIL lines;
# 4. prints a one-line summary; exits with go test's status.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/lib.sh"
cd "$REPO_ROOT"
t0=$(vm_now)

setup_out=$("$VM_SETUP") || vm_die "${VM_SETUP##*/} failed"
krel=$(sed -n 's/^KREL=//p' <<<"$setup_out")
vm_log "guest kernel $krel ($(cat "$(sed -n 's/^KDIR=//p' <<<"$setup_out")/package")), setup $(vm_elapsed "$t0")s"

mkdir -p "$VM_CACHE"
go build -o "$VM_CACHE/probe-$VM_ARCH" ./integration/vm/probe
t1=$(vm_now)
info=$("$VM_DIR/exec" "$VM_CACHE/probe-$VM_ARCH") || vm_die "the guest does not work (probe failed, see above)"
vm_log "guest: $info ($(vm_elapsed "$t1")s)"
field() { sed -n "s/.*\\b$1=\\(\"[^\"]*\"\\|[^ ]*\\).*/\\1/p" <<<"$info" | tr -d '"'; }
[[ $(field cgroup) == unified ]] || vm_die "guest cgroup mode is $(field cgroup), want unified"
# SE_STRICT (internal/testcap) on the host says CI expects its capabilities:
# the guests then expect theirs, as the probe found them.
if [[ -n ${SE_STRICT:-} ]]; then
	strict=cgroups,namespaces
	[[ ${SE_VM_USER:-root} == root ]] && strict+=,root
	[[ $(field landlock_abi) =~ ^[1-9] ]] && strict+=,landlock
	[[ $(field controllers) == *memory* && $(field controllers) == *pids* ]] && strict+=,unified-cgroup
	[[ $(field apparmor_userns) == yes ]] && strict+=,apparmor-userns
	# The arm64 guest has its own, smaller /usr; amd64 ones run the host's.
	[[ $VM_ARCH == amd64 ]] && strict+=,installed
	export SE_STRICT=$strict
	vm_log "SE_STRICT in the guests: $strict"
fi

((${#@} > 0)) || set -- ./...
# go test's own limit on each package (its default, 10m, is less than the
# integration package takes in a guest on a busy machine) is only a backstop
# for a test that spins forever: a stuck guest or payload is ended by the
# progress watchdogs (exec, guest/init). A -timeout among the arguments wins.
set -- -timeout "${SE_VM_GO_TIMEOUT:-60m}" "$@"
timings=$(mktemp "$VM_CACHE/timings.XXXXXX")
log=$(mktemp "$VM_CACHE/gotest.XXXXXX")
trap 'rm -f "$timings" "$log"' EXIT
t2=$(vm_now)
set +e
SE_VM_TIMING_FILE=$timings go test -count=1 -exec "$VM_DIR/exec" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e

# A guest that hung (no answer within SE_VM_TIMEOUT) is tried once more when
# hangs are all that failed: emulated guests of some kernels (5.10 under TCG)
# have hung now and then with nothing of ours running. A package that hangs
# again, or fails, fails the run. SE_VM_RETRY_HANG=0 turns this off.
hung=$(awk '/vm: FAIL: guest timed out/ { h = 1 } /^FAIL\t/ { if (h) print $2; else other = 1; h = 0 } END { if (other) print "OTHER" }' "$log")
if ((rc != 0)) && [[ ${SE_VM_RETRY_HANG:-1} == 1 && -n $hung && $hung != *OTHER* ]]; then
	flags=()
	for a in "$@"; do [[ $a == ./* || $a == */... ]] || flags+=("$a"); done
	vm_log "a guest hung in $(tr '\n' ' ' <<<"$hung"): running that once more (a second hang fails)"
	set +e
	# shellcheck disable=SC2086
	SE_VM_TIMING_FILE=$timings go test -count=1 -exec "$VM_DIR/exec" "${flags[@]}" $hung 2>&1 | tee -a "$log"
	rc=${PIPESTATUS[0]}
	set -e
fi

ok=$(grep -c '^ok ' "$log" || true)
failed=$(grep -cE '^FAIL\s+\S+' "$log" || true)
notests=$(grep -c '^?  ' "$log" || true)
boots=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^boot=/) { sub("boot=", "", $i); if ($i + 0 > max) max = $i + 0; n++ } }
	END { if (n) printf "%d guests, slowest boot-to-payload %.1fs", n, max; else printf "0 guests" }' "$timings")
vm_log "summary: kernel $(field kernel), cgroup $(field cgroup) [$(field controllers)], Landlock ABI $(field landlock_abi);" \
	"packages: $ok ok, $failed FAIL, $notests without tests; $boots; go test $(vm_elapsed "$t2")s, total $(vm_elapsed "$t0")s; exit $rc"
exit "$rc"
