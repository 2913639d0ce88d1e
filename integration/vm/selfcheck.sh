#!/usr/bin/env bash
# Checks the harness itself end to end, one fresh guest per case:
#   - stdout and stderr come back separately and byte for byte, the exit code
#     exactly;
#   - a failing test makes `go test` report FAIL and exit non-zero;
#   - a guest kernel panic, a hung guest and one that never starts the
#     payload are failures, never passes;
#   - SE_VM_USER=nobody runs the payload unprivileged.
# Usage: integration/vm/selfcheck.sh     (about 8 guests; a minute on a quiet machine)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/lib.sh"
cd "$REPO_ROOT"

t0=$(vm_now)
"$VM_SETUP" >/dev/null
tmp=$(mktemp -d "$VM_CACHE/selfcheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # NAME CONDITION-STATUS
	if [[ $2 == 0 ]]; then
		pass=$((pass + 1))
		vm_log "selfcheck: ok   $1"
	else
		fail=$((fail + 1))
		vm_log "selfcheck: FAIL $1"
	fi
}
has() { grep -qE -- "$1" "$2"; }

# 1. Raw bytes (CR, NUL, 0xff...) both ways, and the exit code.
head -c 65536 /dev/urandom >"$tmp/blob1"
head -c 65536 /dev/urandom >"$tmp/blob2"
set +e
# shellcheck disable=SC2016 # expanded by the guest's shell
"$VM_DIR/exec" /bin/sh -c 'cat "$1"; cat "$2" >&2; exit 7' sh "$tmp/blob1" "$tmp/blob2" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "exit code 7 comes back (got $rc)" $((rc != 7))
check "stdout byte-exact" "$(cmp -s "$tmp/blob1" "$tmp/out"; echo $?)"
check "stderr byte-exact and separate" "$(cmp -s "$tmp/blob2" "$tmp/err"; echo $?)"

gotest() { # LOG ENV... -- go test args
	local log=$1
	shift
	local envs=()
	while [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	set +e
	env "${envs[@]}" go test -count=1 -exec "$VM_DIR/exec" "$@" ./integration/vm/selftest/ >"$log" 2>&1
	local rc=$?
	set -e
	return $rc
}

# 2. A failing test in the guest.
rc=0
gotest "$tmp/fail.log" SE_VM_SELFTEST_FAIL=1 -- -run 'TestForcedFailure' || rc=$?
check "failing test: go test exits non-zero (got $rc)" $((rc == 0))
check "failing test: --- FAIL and a FAIL line" "$(has '^--- FAIL: TestForcedFailure' "$tmp/fail.log" &&
	has '^FAIL[[:space:]]+sandbox-executable/integration/vm/selftest' "$tmp/fail.log"; echo $?)"

# 3. A kernel panic in the guest.
rc=0
gotest "$tmp/panic.log" SE_VM_SELFTEST_PANIC=1 -- -run 'TestForcedPanic' || rc=$?
check "kernel panic: go test exits non-zero (got $rc)" $((rc == 0))
check "kernel panic: reported as such" "$(has 'vm: FAIL: .*Kernel panic' "$tmp/panic.log" &&
	has '^FAIL[[:space:]]+sandbox-executable' "$tmp/panic.log"; echo $?)"

# 4. A payload that hangs (it sleeps), with a short timeout: the guest's
#    watchdog ends it for making no progress, with Go's goroutine dump.
rc=0
gotest "$tmp/hang.log" SE_VM_SELFTEST_HANG=1 SE_VM_TIMEOUT=40 -- -run 'TestForcedHang' || rc=$?
check "hang: go test exits non-zero (got $rc)" $((rc == 0))
check "hang: reported as no progress, with the stacks" "$(has 'vm: FAIL: the payload made no progress for 40s' "$tmp/hang.log" &&
	has '^SIGQUIT: quit' "$tmp/hang.log"; echo $?)"

# 5. A guest that has not started the payload in time (SE_VM_BOOT_TIMEOUT=1:
#    every guest here takes longer than a second): booted once more, then a
#    failure, never a pass.
rc=0
gotest "$tmp/boot.log" SE_VM_BOOT_TIMEOUT=1 -- -run 'TestRunAsUser' || rc=$?
check "boot timeout: go test exits non-zero (got $rc)" $((rc == 0))
check "boot timeout: booted once more, then reported" "$(has 'booting it once more' "$tmp/boot.log" &&
	has 'vm: FAIL: the guest had not started the payload 1s after' "$tmp/boot.log"; echo $?)"

# 6. Unprivileged payload.
rc=0
gotest "$tmp/nobody.log" SE_VM_USER=nobody -- -v -run 'TestRunAsUser|TestWritablePlaces' || rc=$?
check "SE_VM_USER=nobody: passes (got $rc)" "$rc"
check "SE_VM_USER=nobody: TestRunAsUser ran" "$(has '^--- PASS: TestRunAsUser' "$tmp/nobody.log"; echo $?)"

if ((fail > 0)); then
	for f in "$tmp"/*.log; do
		vm_log "--- ${f##*/}"
		sed 's/^/    /' "$f" >&2
	done
fi
vm_log "selfcheck took $(vm_elapsed "$t0")s"
echo "selfcheck: $pass passed, $fail failed"
((fail == 0))
