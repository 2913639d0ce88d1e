#!/usr/bin/env bash
# Boots the systemd guest (QEMU; KVM when /dev/kvm is usable, else TCG) and
# runs guest-test.sh in it: the helper as an unprivileged user from a
# root-owned login scope, a delegated scope from the user's own systemd
# manager, the limits, the cleanup, and the refusal without a manager.
#
# Usage: run.sh [BINARY [BASE_BINARY]]
#   BINARY       the helper to test (default bin/sandbox-executable)
#   BASE_BINARY  an older build to run the login-session case against too
# Environment: SE_VM_ACCEL=kvm|tcg (default: kvm when usable), SE_VM_TIMEOUT
# (seconds, default 900), SE_VM_KEEP=1 keeps the run directory, SE_VM_DEBUG=1
# shows boot messages, SE_SYSTEMD_BENCH=1 adds the start-up benchmark,
# SE_VM_CACHE.
# Exit: 0 pass, 1 fail, 125 the guest could not be prepared or booted.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../lib.sh"
SD_DIR=$VM_DIR/systemd

bin=$(realpath -- "${1:-$REPO_ROOT/bin/sandbox-executable}")
base=${2:-}
probe=$REPO_ROOT/bin/probe
[[ -x $bin ]] || vm_die "no helper at $bin (make build)"
[[ -x $probe ]] || vm_die "no probe at $probe (make probe)"

t0=$(vm_now)
declare -A S=()
while IFS='=' read -r k v; do S[$k]=$v; done < <("$VM_DIR/setup.sh")
[[ -n ${S[KERNEL]:-} ]] || vm_die "setup.sh gave no kernel"
ROOTFS=$("$SD_DIR/build-rootfs.sh" | sed -n 's/^ROOTFS=//p')
[[ -d $ROOTFS ]] || vm_die "no rootfs"

# The initramfs: busybox, the 9p/virtio/overlay modules, init. Cached.
key=$(cat "$SD_DIR/init" /bin/busybox "${S[KDIR]}/load.order" | sha256sum | cut -c1-16)
initrd=$VM_CACHE/systemd/initrd-${S[KREL]}-$key.cpio
if [[ ! -e $initrd ]]; then
	st=$(mktemp -d "$VM_CACHE/systemd/tmp.XXXXXX")
	mkdir -p "$st"/{bin,dev,proc,lib/modules}
	cp /bin/busybox "$st/bin/busybox"
	ln -s busybox "$st/bin/sh"
	install -m 0755 "$SD_DIR/init" "$st/init"
	cp "${S[KDIR]}"/modules/*.ko "$st/lib/modules/" 2>/dev/null || true
	cp "${S[KDIR]}/load.order" "$st/lib/modules/load.order"
	mknod "$st/dev/console" c 5 1
	(cd "$st" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	rm -rf "$st"
fi

accel=${SE_VM_ACCEL:-}
if [[ -z $accel ]]; then
	# /dev/kvm alone is not enough: on a VM without nested virtualisation
	# (no vmx/svm flag) it opens, and the guest hangs before its first line.
	accel=tcg
	{ : <>/dev/kvm; } 2>/dev/null && grep -qwE 'vmx|svm' /proc/cpuinfo && accel=kvm
fi
# shellcheck disable=SC2054 # commas belong to QEMU's option syntax
case $accel in
kvm) accel_opts=(-accel kvm -cpu host) ;;
tcg) accel_opts=(-accel tcg,thread=multi -cpu max) ;;
*) vm_die "SE_VM_ACCEL=$accel: want kvm or tcg" ;;
esac

mkdir -p "$VM_CACHE/runs"
run=$(mktemp -d "$VM_CACHE/runs/systemd.XXXXXX")
[[ ${SE_VM_KEEP:-0} == 1 ]] || trap 'rm -rf "$run"' EXIT
mkdir -p "$run/se/bin" "$run/out"
cp "$bin" "$run/se/bin/sandbox-executable"
cp "$probe" "$run/se/bin/probe"
[[ -n $base ]] && cp "$base" "$run/se/bin/sandbox-executable.base"
# SE_SYSTEMD_BENCH=1: the guest also times start-up with farm-bench (the
# machine's own tool, copied into this run only).
if [[ ${SE_SYSTEMD_BENCH:-0} == 1 ]]; then
	fb=$(command -v farm-bench) || vm_die "SE_SYSTEMD_BENCH=1 but no farm-bench on PATH"
	cp "$fb" "$run/se/bin/farm-bench"
fi
cp "$SD_DIR/guest-test.sh" "$SD_DIR/user-case.sh" "$SD_DIR/se-test.service" "$run/se/"
echo "$accel" >"$run/se/accel"

esc() { printf '%s' "${1//,/,,}"; }
cmdline="console=ttyS0 panic=-1 quiet loglevel=1 rdinit=/init systemd.show_status=0 mitigations=off"
# SE_VM_DEBUG=1: the kernel's and systemd's messages on the console.
[[ ${SE_VM_DEBUG:-0} == 1 ]] && cmdline="console=ttyS0 panic=-1 loglevel=6 rdinit=/init systemd.show_status=1 mitigations=off"
# shellcheck disable=SC2054 # commas belong to QEMU's option syntax
qemu=(qemu-system-x86_64 -machine pc "${accel_opts[@]}" -m "${SE_VM_MEM:-1024}" -smp "${SE_VM_SMP:-2}"
	-nodefaults -no-user-config -display none -no-reboot
	-bios /usr/share/qemu/qboot.rom -kernel "${S[KERNEL]}" -initrd "$initrd"
	-append "$cmdline"
	-serial "file:$(esc "$run/console")"
	-fsdev "local,id=rootfs,path=$(esc "$ROOTFS"),security_model=none,readonly=on,multidevs=remap"
	-device virtio-9p-pci,fsdev=rootfs,mount_tag=rootfs
	-fsdev "local,id=se,path=$(esc "$run/se"),security_model=none,readonly=on,multidevs=remap"
	-device virtio-9p-pci,fsdev=se,mount_tag=se
	-fsdev "local,id=se_out,path=$(esc "$run/out"),security_model=none,multidevs=remap"
	-device virtio-9p-pci,fsdev=se_out,mount_tag=se_out
)
t_qemu=$(vm_now)
set +e
setpriv --pdeathsig KILL timeout -k 5 "${SE_VM_TIMEOUT:-900}" setpriv --pdeathsig KILL "${qemu[@]}" </dev/null
qrc=$?
set -e
cat "$run/out/log" 2>/dev/null || true
result=$(sed -n 's/^SE-SYSTEMD-RESULT=//p' "$run/out/result" 2>/dev/null | head -n1) || true
vm_log "systemd guest ($accel): prepared in $(awk -v a="$t0" -v b="$t_qemu" 'BEGIN { printf "%.1f", b - a }') s, guest ran $(vm_elapsed "$t_qemu") s, result: ${result:-none (qemu exit $qrc)}"
case $result in
pass) exit 0 ;;
fail*) exit 1 ;;
*)
	vm_log "FAIL: the guest stopped without a verdict; its console:"
	tr -d '\r' <"$run/console" | tail -n 40 >&2
	exit 1
	;;
esac
