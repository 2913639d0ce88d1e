#!/usr/bin/env bash
# setup.sh for the arm64 guest (SE_VM_ARCH=arm64): prepares what
# qemu-system-aarch64 needs and prints where it is, in setup.sh's KEY=VALUE
# form (KDIR, KERNEL, INITRD, KREL) plus USR, the guest's /usr.
#
#   - qemu-system-arm (qemu-system-aarch64), installed when missing;
#   - a private apt state with APT::Architecture=arm64 (the machine's own
#     sources, its own lists, caches and an empty dpkg status), so nothing of
#     the machine's apt configuration changes;
#   - Debian's arm64 kernel (the package linux-image-arm64 depends on),
#     fetched with apt-get download and never installed: its boot/vmlinuz is
#     a gzip'd Image, decompressed once (QEMU's virt machine boots an Image);
#     the 9p/virtio/overlay/veth modules with their dependencies, in load
#     order, as setup.sh does for x86;
#   - the base initramfs: busybox-static:arm64, guest/init, the modules;
#   - an arm64 /usr: the guest mounts the host's root as the x86 guest does
#     (so the repository, go test's build directories, $HOME are where they
#     are on the host) with this /usr over the host's, so that /bin/sh,
#     /usr/bin/env and the libc the test binaries link are arm64 ones. It is
#     unpacked from a small set of Debian packages (ROOT_PACKAGES) and what
#     they depend on.
# Everything is cached under $VM_CACHE/arm64/, keyed by package versions; a
# warm call takes a few milliseconds.
#
# Usage: setup-arm64.sh [--refresh]   (--refresh: ask apt again)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

refresh=${SE_VM_REFRESH:-0}
case ${1:-} in
--refresh) refresh=1 ;;
"") ;;
*) vm_die "usage: setup-arm64.sh [--refresh]" ;;
esac

A=$VM_CACHE/arm64
KROOT=$A/kernel
# The modules the guest loads (roots only; dependencies from each module's
# modinfo). virtio_console gives the payload's stdout and stderr their own
# ports (hvc0, hvc1): the virt machine has a single UART, the console.
ROOT_MODULES=(virtio_pci virtio_console 9pnet_virtio 9p overlay veth)
# The guest's userland. The helper and the probe are static; the test
# binaries link libc (and libseccomp: the spawn tests are cgo); the suite
# runs sh (dash), bash, coreutils, grep, sed, find, awk, python3, hostname,
# renice and ip inside the sandbox (git, go, npm and cargo are not here: the
# tests that need them are outside make vm-test-arm64's subset).
ROOT_PACKAGES=(libc6 libseccomp2 dash bash coreutils grep sed findutils mawk diffutils
	util-linux bsdutils hostname iproute2 procps python3 gzip tar)

ready() { [[ -e $1/ready && $(cat "$1/ready") == "${ROOT_MODULES[*]}" ]]; }
base_key() { cat "$VM_DIR/guest/init" "$A/busybox" "$1/load.order" | sha256sum | cut -c1-16; }
root_key() { printf '%s\n' "${ROOT_PACKAGES[@]}" | sha256sum | cut -c1-16; }
emit() {
	local kdir=$1
	printf 'KDIR=%s\nKERNEL=%s\nINITRD=%s\nKREL=%s\nUSR=%s\n' "$kdir" "$kdir/Image" \
		"$kdir/initrd-base-$(base_key "$kdir").cpio" "$(cat "$kdir/release")" "$A/root-$(root_key)/usr"
}
complete() {
	[[ -r $A/current-kernel && -x $A/busybox && -e $A/root-$(root_key)/ready ]] || return 1
	local kdir
	kdir=$KROOT/$(cat "$A/current-kernel")
	ready "$kdir" && [[ -e $kdir/initrd-base-$(base_key "$kdir").cpio ]] &&
		command -v qemu-system-aarch64 >/dev/null
}

# Fast path: everything already there, no lock, no apt.
if [[ $refresh != 1 ]] && complete; then
	emit "$KROOT/$(cat "$A/current-kernel")"
	exit 0
fi

mkdir -p "$KROOT"
exec 9>"$A/.setup.lock"
flock 9
rm -rf "$A"/tmp.*

if ! command -v qemu-system-aarch64 >/dev/null; then
	vm_log "installing qemu-system-arm"
	apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends qemu-system-arm >&2
fi

# The private apt state: the machine's sources, arm64 only, its own lists and
# caches, an empty dpkg status (nothing is installed from here: apt-get
# download and dpkg-deb only).
d=$A/apt
mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/empty-parts"
: >"$d/status"
APT_OPTS=(-o APT::Architecture=arm64 -o APT::Architectures=arm64
	-o "Dir::State::Lists=$d/lists" -o "Dir::State::status=$d/status" -o "Dir::Cache=$d/cache"
	-o Acquire::Languages=none -o APT::Sandbox::User=root -o Debug::NoLocking=1)
apt_arm64() { apt-get "${APT_OPTS[@]}" "$@"; }
if [[ $refresh == 1 ]] || ! compgen -G "$d/lists/*arm64_Packages*" >/dev/null; then
	vm_log "fetching the arm64 package lists into a private apt state ($d)"
	apt_arm64 update -qq >&2
fi
version_of() { apt-cache "${APT_OPTS[@]}" show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -n1; }

# download DIR PKG=VER...: the .deb files, into DIR.
download() {
	local dir=$1
	shift
	(cd "$dir" && apt_arm64 -qq download "$@" >&2)
}

# --- busybox-static:arm64, for the initramfs -------------------------------
if [[ $refresh == 1 || ! -x $A/busybox ]]; then
	tmp=$(mktemp -d "$A/tmp.XXXXXX")
	download "$tmp" "busybox-static=$(version_of busybox-static)"
	dpkg-deb --fsys-tarfile "$tmp"/busybox-static_*.deb | tar -x -C "$tmp" ./bin/busybox
	file -b "$tmp/bin/busybox" | grep -q 'ARM aarch64.*statically linked' ||
		vm_die "busybox-static:arm64 is not a static aarch64 binary: $(file -b "$tmp/bin/busybox")"
	mv "$tmp/bin/busybox" "$A/busybox"
	rm -rf "$tmp"
fi

# --- the kernel --------------------------------------------------------------
fetch_kernel() { # PKG VER KDIR
	local pkg=$1 ver=$2 kdir=$3 tmp line name m d src ko
	tmp=$(mktemp -d "$A/tmp.XXXXXX")
	vm_log "downloading $pkg $ver (arm64)"
	download "$tmp" "$pkg=$ver"
	mkdir -p "$tmp/x" "$tmp/k/modules"
	dpkg-deb --fsys-tarfile "$tmp"/*.deb >"$tmp/data.tar"
	rm -f "$tmp"/*.deb
	tar -tf "$tmp/data.tar" >"$tmp/list"
	local -A path_of=() seen=() deps_of=() placed=()
	local want=() pass=() next=()
	while read -r line; do
		[[ $line =~ /([^/]+)\.ko(\.xz|\.zst|\.gz)?$ ]] || continue
		name=${BASH_REMATCH[1]//-/_}
		path_of[$name]=$line
	done <"$tmp/list"
	mapfile -t pass < <(grep -E '^\./boot/(vmlinuz|config)-' "$tmp/list")
	want=("${ROOT_MODULES[@]}")
	while :; do
		next=()
		for m in "${want[@]}"; do
			[[ -n ${seen[$m]:-} ]] && continue
			seen[$m]=1
			if [[ -z ${path_of[$m]:-} ]]; then
				seen[$m]=builtin # not shipped as a module: built in
				continue
			fi
			pass+=("${path_of[$m]}")
			next+=("$m")
		done
		((${#pass[@]} == 0)) && break
		tar -x -f "$tmp/data.tar" -C "$tmp/x" "${pass[@]}"
		pass=() want=()
		for m in "${next[@]}"; do
			src=$tmp/x/${path_of[$m]#./} ko=$tmp/k/modules/$m.ko
			case $src in
			*.xz) xz -dc "$src" >"$ko" ;;
			*.zst) zstd -qdc "$src" >"$ko" ;;
			*.gz) gzip -dc "$src" >"$ko" ;;
			*) cp "$src" "$ko" ;;
			esac
			deps_of[$m]=$(tr '\0' '\n' <"$ko" | sed -n 's/^depends=//p' | head -n1 | tr ',' ' ')
			for d in ${deps_of[$m]}; do want+=("${d//-/_}"); done
		done
	done
	place() {
		local m=$1 d
		[[ -n ${placed[$m]:-} || ${seen[$m]:-} == builtin ]] && return 0
		placed[$m]=1
		for d in ${deps_of[$m]:-}; do place "${d//-/_}"; done
		echo "$m" >>"$tmp/k/load.order"
	}
	: >"$tmp/k/load.order"
	for m in "${ROOT_MODULES[@]}"; do place "$m"; done

	local vmlinuz
	vmlinuz=$(echo "$tmp"/x/boot/vmlinuz-*)
	[[ -f $vmlinuz ]] || vm_die "$pkg has no /boot/vmlinuz-*"
	cp "$tmp"/x/boot/config-* "$tmp/k/config"
	echo "${vmlinuz##*/vmlinuz-}" >"$tmp/k/release"
	# arm64's vmlinuz is the Image, gzip'd (no self-decompressor on arm64).
	case $(head -c 2 "$vmlinuz" | od -An -tx1 | tr -d ' \n') in
	1f8b) gzip -dc "$vmlinuz" >"$tmp/k/Image" ;;
	*) cp "$vmlinuz" "$tmp/k/Image" ;;
	esac
	# The arm64 Image header: "ARM\x64" at offset 56.
	[[ $(tail -c +57 "$tmp/k/Image" | head -c 4 | od -An -tx1 | tr -d ' \n') == 41524d64 ]] ||
		vm_die "$vmlinuz is not an arm64 Image"
	echo "$pkg $ver" >"$tmp/k/package"
	rm -rf "$kdir"
	mv "$tmp/k" "$kdir"
	echo "${ROOT_MODULES[*]}" >"$kdir/ready"
	rm -rf "$tmp"
}

kdir=
if [[ $refresh != 1 && -r $A/current-kernel ]] && ready "$KROOT/$(cat "$A/current-kernel")"; then
	kdir=$KROOT/$(cat "$A/current-kernel")
else
	dep=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions linux-image-arm64 | sed -n 's/^Depends: //p' | head -n1)
	pkg=$(tr ',' '\n' <<<"$dep" | grep -o 'linux-image-[^ ]*' | head -n1)
	[[ -n $pkg ]] || vm_die "cannot tell which kernel package linux-image-arm64 depends on ($dep)"
	ver=$(version_of "$pkg")
	[[ -n $ver ]] || vm_die "apt knows no package $pkg for arm64"
	kdir=$KROOT/${pkg}_$ver
	if ! ready "$kdir"; then
		t0=$(vm_now)
		fetch_kernel "$pkg" "$ver" "$kdir"
		vm_log "arm64 kernel $(cat "$kdir/release") ready in $(vm_elapsed "$t0") s ($(wc -l <"$kdir/load.order") modules)"
	fi
	echo "${kdir##*/}" >"$A/current-kernel.tmp"
	mv "$A/current-kernel.tmp" "$A/current-kernel"
fi

# --- the base initramfs ------------------------------------------------------
initrd=$kdir/initrd-base-$(base_key "$kdir").cpio
if [[ ! -e $initrd ]]; then
	rm -f "$kdir"/initrd-base-*.cpio
	st=$(mktemp -d "$A/tmp.XXXXXX")
	mkdir -p "$st"/{bin,dev,proc,sys,newroot,rw,se-run,lib/modules}
	cp "$A/busybox" "$st/bin/busybox"
	ln -s busybox "$st/bin/sh"
	cp "$VM_DIR/guest/init" "$st/init"
	chmod 0755 "$st/init"
	cp "$kdir"/modules/*.ko "$st/lib/modules/" 2>/dev/null || true
	cp "$kdir/load.order" "$st/lib/modules/load.order"
	mknod "$st/dev/console" c 5 1
	(cd "$st" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	rm -rf "$st"
fi

# --- the arm64 /usr ----------------------------------------------------------
root=$A/root-$(root_key)
if [[ $refresh == 1 || ! -e $root/ready ]]; then
	t0=$(vm_now)
	tmp=$(mktemp -d "$A/tmp.XXXXXX")
	# What apt would install on an empty system: the packages and every
	# dependency, as name=version.
	mapfile -t debs < <(apt_arm64 -s -qq install --no-install-recommends "${ROOT_PACKAGES[@]}" 2>/dev/null |
		sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p')
	((${#debs[@]} > 0)) || vm_die "apt resolves no arm64 packages for ${ROOT_PACKAGES[*]}"
	vm_log "unpacking ${#debs[@]} arm64 packages for the guest's /usr"
	mkdir -p "$tmp/dl" "$tmp/r/usr/bin" "$tmp/r/usr/sbin" "$tmp/r/usr/lib" "$tmp/r/usr/lib64"
	# Merged /usr, as on the host: what a package puts in /bin or /lib lands
	# in usr/.
	for l in bin sbin lib lib64; do ln -s "usr/$l" "$tmp/r/$l"; done
	download "$tmp/dl" "${debs[@]}"
	for deb in "$tmp"/dl/*.deb; do
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/r" --keep-directory-symlink --no-same-owner \
			--exclude='./usr/share/doc/*' --exclude='./usr/share/man/*' --exclude='./usr/share/locale/*' \
			--exclude='./etc/*' --exclude='./var/*' --exclude='./run/*'
	done
	# Debian's maintainer scripts would make these; the suite needs them.
	ln -sf dash "$tmp/r/usr/bin/sh"
	[[ -e $tmp/r/usr/bin/python3 ]] || ln -sf "$(basename "$(echo "$tmp"/r/usr/bin/python3.[0-9]*)")" "$tmp/r/usr/bin/python3"
	[[ -e $tmp/r/usr/bin/awk ]] || ln -sf mawk "$tmp/r/usr/bin/awk"
	file -b "$tmp/r/usr/bin/dash" | grep -q 'ARM aarch64' || vm_die "the unpacked dash is not an aarch64 binary"
	rm -rf "$A"/root-* # the /usr of another package list, or a broken one
	mkdir -p "$root"
	mv "$tmp/r/usr" "$root/usr"
	printf '%s\n' "${debs[@]}" >"$root/packages"
	touch "$root/ready"
	rm -rf "$tmp"
	vm_log "arm64 /usr ready in $(vm_elapsed "$t0") s ($(du -sm "$root/usr" | cut -f1) MB)"
fi
emit "$kdir"
