#!/usr/bin/env bash
# Checks that a release binary is what release.sh promises: statically
# linked, no dynamic dependency, the right version, and a working sandbox.
#
#   packaging/verify-release.sh BINARY [VERSION]
#
# RELEASE_SMOKE=0 skips the runs that need namespaces and Landlock (a
# `docker build` step has neither); the static-linking checks always run.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 BINARY [VERSION]" >&2
	exit 2
fi
bin=$1
version=${2:-}
fail() {
	echo "verify-release: $bin: $*" >&2
	exit 1
}

for tool in file ldd readelf sha256sum; do
	command -v "$tool" >/dev/null || fail "needs $tool (packages file, libc-bin, binutils, coreutils)"
done
[ -x "$bin" ] || fail "not an executable file"

# 1. Static: file(1) reads the ELF headers...
desc=$(file -b "$bin")
case $desc in
*"statically linked"*) ;;
*) fail "file(1) does not say statically linked: $desc" ;;
esac
# ...ldd(1) asks the dynamic loader (it exits 1 for a static binary, hence
# the || true; the message is what counts)...
ldd_out=$(LC_ALL=C ldd "$bin" 2>&1 || true)
case $ldd_out in
*"not a dynamic executable"*) ;;
*) fail "ldd finds dynamic dependencies:"$'\n'"$ldd_out" ;;
esac
# ...and readelf confirms there is no interpreter and no DT_NEEDED entry,
# independent of how either tool words its answer.
if LC_ALL=C readelf -lW "$bin" | grep -q 'INTERP'; then
	fail "has a PT_INTERP program header (needs a dynamic loader)"
fi
if LC_ALL=C readelf -dW "$bin" 2>/dev/null | grep -q '(NEEDED)'; then
	fail "has DT_NEEDED entries: $(readelf -dW "$bin" | grep '(NEEDED)')"
fi

# 2. The checksum file beside it, when there is one, matches.
if [ -f "$bin.sha256" ]; then
	(cd "$(dirname "$bin")" && sha256sum --quiet -c "$(basename "$bin").sha256") ||
		fail "does not match $bin.sha256"
fi

# 3. Its architecture. A binary for another machine than this one (the
# arm64 release cross-built on amd64) cannot run here: its runs are
# integration/vm's arm64 guest's (make vm-test-arm64).
machine=$(LC_ALL=C readelf -hW "$bin" | sed -n 's/^ *Machine: *//p')
case $machine in
*X86-64*) barch=x86_64 ;;
AArch64) barch=aarch64 ;;
*) fail "built for an unsupported machine: $machine" ;;
esac
if [ "$barch" != "$(uname -m)" ]; then
	echo "verify-release: $bin: static, $barch (not this machine's $(uname -m): runs skipped here, see make vm-test-arm64)"
	exit 0
fi

# 4. It runs, and says the version it was stamped with.
got=$("$bin" --version) || fail "--version failed"
if [ -n "$version" ] && [ "$got" != "sandbox-executable $version" ]; then
	fail "--version printed '$got', want 'sandbox-executable $version'"
fi

if [ "${RELEASE_SMOKE:-1}" = 0 ]; then
	echo "verify-release: $bin: static, $got (smoke run skipped: RELEASE_SMOKE=0)"
	exit 0
fi

# 5. A real sandboxed run succeeds...
policy='{"type":"read_only"}'
rc=0
"$bin" --sandbox-policy "$policy" -- /bin/true || rc=$?
[ "$rc" -eq 0 ] || fail "sandboxed /bin/true exited $rc (125: see the line above)"

# ...and the sandbox is really there: a write outside the (empty) writable
# roots fails inside it.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
rc=0
# shellcheck disable=SC2016 # $1 is for the inner sh, not this one
"$bin" --sandbox-policy "$policy" -- /bin/sh -c ': >"$1"' sh "$scratch/inside" 2>/dev/null || rc=$?
if [ -e "$scratch/inside" ] || [ "$rc" -eq 0 ]; then
	fail "a read_only sandbox let the program create $scratch/inside"
fi
# 125-127 would be the helper failing, not the program's write.
[ "$rc" -lt 125 ] || fail "the write test did not run the program (exit $rc)"

# 6. spawn/stage.c's constructor ran in the static binary: it records the
# signal dispositions the helper started with, before the Go runtime
# installs its handlers (which exec would reset to the default), so that
# the program inherits them. A plain Go program loses an ignored SIGUSR1 or
# SIGTERM across exec; the helper must not. Only those two bits are
# compared: a caller such as make(1) may also ignore glibc's internal
# signals 32 and 33, which are not this check's business.
sigign() { # prints the SigIgn mask of the command it runs, in decimal
	local line
	line=$(trap '' USR1 TERM && "$@" grep '^SigIgn:' /proc/self/status) || return 1
	echo $((16#${line##*[[:space:]]}))
}
bits=$(((1 << (10 - 1)) | (1 << (15 - 1)))) # SIGUSR1 (10), SIGTERM (15)
bare=$(sigign env) || fail "cannot read SigIgn"
[ $((bare & bits)) -eq "$bits" ] || fail "trap '' USR1 TERM did not ignore them here (SigIgn $bare)"
inside=$(sigign "$bin" --sandbox-policy "$policy" --) || fail "sandboxed grep failed"
[ $((inside & bits)) -eq "$bits" ] ||
	fail "ignored SIGUSR1/SIGTERM not passed on to the program (constructor not run?): SigIgn $inside, want bits $bits"

echo "verify-release: $bin: static, $got, sandboxed runs OK"
