# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# Shared by setup.sh, exec and run-tests.sh (sourced, never run). Holds the
# paths and the few helpers they all need, so each script stays readable.

VM_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$VM_DIR/../.." && pwd)
# The cache lives in the work tree (.vmcache/ is git-ignored). SE_VM_CACHE lets a
# CI machine keep one cache for several clones.
VM_CACHE=${SE_VM_CACHE:-$REPO_ROOT/.vmcache}

# The guest kernel (SE_VM_KERNEL). Each name means the kernel package that
# linux-image-amd64 depends on in one Debian suite (vm_kernel_suite); "" is
# the machine's own apt sources (bookworm here: 6.1.x, Landlock ABI 2). The
# other suites are read through a private apt state each (setup.sh), never
# the machine's sources. A literal package name (linux-image-6.1.0-57-amd64)
# pins one from the machine's sources.
VM_KERNEL=${SE_VM_KERNEL:-bookworm}

# vm_kernel_suite NAME prints the suite a kernel name means, "" for the
# machine's own sources; fails for an unknown name. One row per kernel:
#   5.10        bullseye            (Debian 11: no Landlock, no CLOSE_RANGE_CLOEXEC)
#   6.1         the machine's own   (bookworm: Landlock ABI 2)
#   6.12        bookworm-backports  (Landlock ABI 6: scoping)
#   7.3         trixie-backports    (Landlock ABI 11)
#   ubuntu-6.8  noble-updates       (Ubuntu 24.04's, from Ubuntu's archive:
#               AppArmor's user-namespace restriction, an Ubuntu patch no
#               Debian kernel has; vm_suite_ubuntu)
vm_kernel_suite() {
	case $1 in
	6.1 | bookworm | stable | default | linux-image-*) echo "" ;;
	5.10 | bullseye) echo bullseye ;;
	6.12 | backports | bookworm-backports) echo bookworm-backports ;;
	7.3 | trixie-backports) echo trixie-backports ;;
	ubuntu-6.8 | noble) echo noble-updates ;;
	*) return 1 ;;
	esac
}

# vm_suite_ubuntu SUITE: whether the suite is Ubuntu's rather than Debian's.
vm_suite_ubuntu() { [[ $1 == noble* ]]; }

# The kernels `make vm-test-kernels` runs the suite on, besides the default.
VM_EXTRA_KERNELS=(5.10 6.12 7.3)

# vm_accel prints QEMU's accelerator and CPU options: KVM when it can run a
# stock kernel (SE_VM_ACCEL=auto, the default), else TCG (software
# emulation, what CI without /dev/kvm gets; SE_VM_ACCEL=tcg forces it,
# SE_VM_ACCEL=kvm forces KVM). KVM counts only with /dev/kvm read-write and a
# hardware-virtualization module (kvm_intel, kvm_amd): a /dev/kvm served by
# kvm_pvm (a PVM host, as on some cloud VMs) runs only PVM-built guest
# kernels; a Debian kernel stops there at its first instruction KVM cannot
# emulate ("KVM internal error. Suberror: 1") and the guest hangs.
vm_accel() {
	local want=${SE_VM_ACCEL:-auto}
	case $want in
	auto)
		if [[ -r /dev/kvm && -w /dev/kvm ]] && [[ -d /sys/module/kvm_intel || -d /sys/module/kvm_amd ]]; then
			echo "-accel kvm -cpu host"
			return 0
		fi
		;;
	kvm)
		[[ -r /dev/kvm && -w /dev/kvm ]] || vm_die "SE_VM_ACCEL=kvm but /dev/kvm is not usable"
		echo "-accel kvm -cpu host"
		return 0
		;;
	tcg) ;;
	*) vm_die "SE_VM_ACCEL=$want: want auto, kvm or tcg" ;;
	esac
	echo "-accel tcg,thread=multi -cpu max"
}

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
