# shellcheck shell=bash disable=SC2034 # sourced by lib.sh when SE_VM_ARCH=arm64
# What the arm64 guest does differently from the x86 one; everything else
# (guest/init, the overlays, the markers, go test -exec) is shared.
#
#   - setup-arm64.sh prepares the kernel (Debian's arm64 Image), the base
#     initramfs (busybox-static:arm64) and an arm64 /usr;
#   - the guest mounts the host's root as the x86 one does, with that /usr
#     over the host's (share se_ro_usr, read-only): the repository, go test's
#     build directories and $HOME keep their paths, and /bin/sh, env and the
#     libc the test binaries link are arm64's;
#   - qemu-system-aarch64 -M virt under TCG (no KVM for arm on an x86 host);
#     its one UART (ttyAMA0) is the console, the payload's stdout and stderr
#     are virtio consoles (hvc0, hvc1);
#   - go test cross-compiles: GOARCH=arm64, cgo through aarch64-linux-gnu-gcc
#     against libseccomp-dev:arm64 (.ci/install-deps).
#
# Variables: SE_VM_CPU (default max,pauth-impdef=on: QEMU's fastest model
# under TCG; cortex-a57 also works), and those of README.md.

VM_SETUP=$VM_DIR/setup-arm64.sh
# The arm64 guest has an arm64 /usr only: the host's PATH (pyenv shims, Go
# in /usr/local) means nothing there.
SE_VM_PATH=${SE_VM_PATH:-/usr/sbin:/usr/bin:/sbin:/bin}

export GOARCH=arm64 CGO_ENABLED=1
if [[ $(uname -m) != aarch64 ]]; then
	export CC=${CC_arm64:-aarch64-linux-gnu-gcc}
	export PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig
fi

# vm_arch_prepare (exec, before the initramfs is packed): the guest's tty
# names, and the arm64 /usr as a read-only share.
vm_arch_prepare() {
	# shellcheck disable=SC2154 # $in is exec's: the run's initramfs input
	printf 'SE_CON=/dev/ttyAMA0\nSE_OUT=/dev/hvc0\nSE_ERR=/dev/hvc1\n' >>"$in/config"
	printf 'se_ro_usr /usr\n' >>"$in/shares"
}

# vm_arch_qemu (exec): the QEMU command line for the arm64 guest, from exec's
# own variables (mem, smp, run, shares, S[...]).
vm_arch_qemu() {
	# shellcheck disable=SC2054 # commas belong to QEMU's option syntax
	qemu=(qemu-system-aarch64
		-machine virt -accel tcg,thread=multi -cpu "${SE_VM_CPU:-max,pauth-impdef=on}" -m "$mem" -smp "$smp"
		-nodefaults -no-user-config -display none -no-reboot
		-kernel "${S[KERNEL]}" -initrd "$run/initrd"
		-append "console=ttyAMA0 panic=-1 quiet loglevel=1 rdinit=/init mitigations=off ${SE_VM_APPEND:-}"
		-serial "file:$(esc "$run/console")"
		-device virtio-serial-pci
		-chardev "file,id=se_out,path=$(esc "$run/stdout")" -device virtconsole,chardev=se_out
		-chardev "file,id=se_err,path=$(esc "$run/stderr")" -device virtconsole,chardev=se_err
		-fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
		-fsdev "local,id=se_ro_usr,path=$(esc "${S[USR]}"),security_model=none,readonly=on,multidevs=remap"
		-device virtio-9p-pci,fsdev=se_ro_usr,mount_tag=se_ro_usr
		"${shares[@]}"
	)
}
