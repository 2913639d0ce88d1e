# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# Shared by setup.sh, exec and run-tests.sh (sourced, never run). Holds the
# paths and the few helpers they all need, so each script stays readable.

VM_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$VM_DIR/../.." && pwd)
# The cache lives in the work tree (.vmcache/ is git-ignored). SE_VM_CACHE lets a
# CI machine keep one cache for several clones.
VM_CACHE=${SE_VM_CACHE:-$REPO_ROOT/.vmcache}

# Default kernel: the one linux-image-amd64 points at in the machine's own apt
# sources (bookworm: 6.1.x, Landlock ABI 2). "backports" uses a private apt
# state for bookworm-backports (6.12.x, Landlock ABI 6). A literal package name
# (linux-image-6.1.0-57-amd64) pins one.
VM_KERNEL=${SE_VM_KERNEL:-bookworm}

vm_log() { printf 'vm: %s\n' "$*" >&2; }
vm_die() { printf 'vm: error: %s\n' "$*" >&2; exit 125; }

# POSIX single-quoting, for values that the guest's busybox sh will read back.
# bash's printf %q emits $'...' forms that are not worth trusting to ash.
vm_sq() {
	local s=${1//\'/\'\\\'\'}
	printf "'%s'" "$s"
}

# Seconds since the epoch with milliseconds, for timings.
vm_now() { date +%s.%3N; }
vm_elapsed() { awk -v a="$1" -v b="$(vm_now)" 'BEGIN { printf "%.1f", b - a }'; }

# The guest's architecture: amd64 (this machine's, the default) or arm64
# (qemu-system-aarch64 under TCG; arm64.sh holds what differs).
VM_ARCH=${SE_VM_ARCH:-amd64}
VM_SETUP=$VM_DIR/setup.sh
case $VM_ARCH in
amd64 | x86_64) ;;
arm64 | aarch64)
	# shellcheck source-path=SCRIPTDIR source=arm64.sh
	. "$VM_DIR/arm64.sh"
	;;
*) vm_die "SE_VM_ARCH=$VM_ARCH: want amd64 or arm64" ;;
esac
