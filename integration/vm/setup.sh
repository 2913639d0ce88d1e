#!/usr/bin/env bash
# Prepares everything the VM harness needs and prints where it is:
#   - apt packages (qemu, busybox-static, cpio, xz, zstd) when missing;
#   - the guest kernel, taken from the Debian kernel package WITHOUT installing it
#     (apt-get download + dpkg-deb --fsys-tarfile | tar of just the files we use);
#   - an uncompressed ELF vmlinux carved out of the bzImage (boots through PVH
#     with qboot, about 3 s faster under TCG than the bzImage path);
#   - the 9p/virtio/overlay modules and their dependencies, in load order;
#   - the base initramfs (busybox, /init, those modules).
# Everything is cached under $VM_CACHE keyed by package name and version; the
# base initramfs is keyed by a hash of its inputs, so editing guest/init
# rebuilds it on the next run. A warm call takes a few milliseconds.
#
# Usage: setup.sh [--refresh | --apparmor | --apparmor-ubuntu]
#   --refresh  re-resolve the kernel package from apt (default: reuse the last
#              resolved one for $SE_VM_KERNEL, so runs are reproducible).
#   --apparmor instead: an AppArmor 4 parser, unpacked (apparmor_parser_4);
#   --apparmor-ubuntu: Ubuntu's AppArmor defaults, unpacked (apparmor_ubuntu).
# Output (stdout): KEY=VALUE lines (KDIR, KERNEL, INITRD, KREL; with
# --apparmor, APPARMOR_PARSER and APPARMOR_BASE; with --apparmor-ubuntu,
# APPARMOR_UBUNTU).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

refresh=${SE_VM_REFRESH:-0}
apparmor=0
case ${1:-} in
--refresh) refresh=1 ;;
--apparmor) apparmor=1 ;;
--apparmor-ubuntu) apparmor=ubuntu ;;
"") ;;
*) vm_die "usage: setup.sh [--refresh | --apparmor | --apparmor-ubuntu]" ;;
esac

KROOT=$VM_CACHE/kernel
pointer=$KROOT/current-$VM_KERNEL

# Modules the guest loads, roots only: dependencies come from each module's
# own modinfo. Anything not shipped as a module is assumed built in. veth is
# for the network tests' own hosts (a veth pair into a namespace); unix_diag
# is sock_diag for unix sockets, which the helper asks which abstract socket
# a name is bound to (sockmed): a host loads it on demand through modprobe,
# which the guest cannot (the host's /lib/modules is another kernel's).
ROOT_MODULES=(virtio_pci 9pnet_virtio 9p overlay veth unix_diag)

# ready says a kernel directory is complete for this module list: a cache
# made for another list is fetched again.
ready() { [[ -e $1/ready && $(cat "$1/ready") == "${ROOT_MODULES[*]}" ]]; }

base_key() {
	# The base initramfs depends on exactly these inputs.
	cat "$VM_DIR/guest/init" /bin/busybox "$1/load.order" | sha256sum | cut -c1-16
}

emit() {
	local kdir=$1 key
	key=$(base_key "$kdir")
	printf 'KDIR=%s\nKERNEL=%s\nINITRD=%s\nKREL=%s\n' "$kdir" "$kdir/$(cat "$kdir/kernel.name")" \
		"$kdir/initrd-base-$key.cpio" "$(cat "$kdir/release")"
}

# Fast path: everything already there, no lock, no apt.
if [[ $refresh != 1 && $apparmor == 0 && -r $pointer ]]; then
	kdir=$KROOT/$(cat "$pointer")
	if ready "$kdir" && [[ -x /bin/busybox ]] && command -v qemu-system-x86_64 >/dev/null &&
		[[ -e $kdir/initrd-base-$(base_key "$kdir").cpio ]]; then
		emit "$kdir"
		exit 0
	fi
fi

mkdir -p "$KROOT"
# Parallel `go test -p N` runs start several wrappers at once: one prepares,
# the others wait here and then take the fast path's result.
exec 9>"$VM_CACHE/.setup.lock"
flock 9
# Work dirs of a setup that was killed (under the lock, so none is in use).
rm -rf "$VM_CACHE"/tmp.*

install_packages() {
	local missing=()
	command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
	[[ -r /usr/share/qemu/qboot.rom ]] || missing+=(qemu-system-data)
	# busybox-static, not busybox: the initramfs has no libc.
	dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing+=(busybox-static)
	command -v cpio >/dev/null || missing+=(cpio)
	command -v xz >/dev/null || missing+=(xz-utils)
	command -v zstd >/dev/null || missing+=(zstd)
	((${#missing[@]} == 0)) && return 0
	vm_log "installing ${missing[*]}"
	# A fresh machine may have empty or stale lists.
	apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends "${missing[@]}" >&2
}

# apt configuration for the kernel: the machine's own sources for the default,
# a private state directory per other suite (vm_kernel_suite). The private
# state never touches /etc/apt nor the machine's lists: its own sources.list,
# lists and caches under $VM_CACHE/apt-<suite>/.
APT_OPTS=()
# The package whose first linux-image-* dependency is the kernel.
KMETA=linux-image-amd64
apt_private() {
	local suite=$1 d=$VM_CACHE/apt-$1 codename mirror
	if vm_suite_ubuntu "$suite"; then
		apt_ubuntu "$suite" "$d"
		return
	fi
	# shellcheck disable=SC1091
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	# Reuse the mirror the machine already uses for its main suite.
	# shellcheck disable=SC2016 # $(...) is apt's own format syntax
	mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
		awk -v s="$codename" '$2 == s { print $1; exit }')
	[[ -n $mirror ]] || vm_die "no apt source for suite $codename found to derive a $suite mirror from"
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/parts"
	# The archive keyring holds the keys of every current release.
	printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
		"$mirror" "$suite" >"$d/sources.list"
	APT_OPTS=(-o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=$d/parts"
		-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o Acquire::Languages=none)
	if ! compgen -G "$d/lists/*Packages*" >/dev/null; then
		vm_log "fetching the $suite package lists into a private apt state"
		apt-get "${APT_OPTS[@]}" update -qq >&2
	fi
}

# apt_ubuntu SUITE DIR: a private apt state on Ubuntu's archive (main, amd64
# only), for the kernel with AppArmor's user-namespace restriction.
#
# What is checked, and how: Debian has no package with Ubuntu's archive keys
# (no ubuntu-keyring in bookworm), so the signature of the suite's InRelease
# is NOT verified ([trusted=yes]: apt then says "NO_PUBKEY 871920D1991BC93C"
# and goes on). The rest of apt's chain still holds: the Packages index must
# match the SHA256 the (In)Release file lists for it, and each .deb the
# SHA256 the Packages index lists for it (apt refuses a "Hash Sum mismatch").
# So the kernel is exactly what that Release file names; trusting the Release
# file itself comes down to the connection to the archive. This kernel only
# ever runs inside the throwaway guest, never on the host.
apt_ubuntu() {
	local suite=$1 d=$2
	KMETA=linux-image-generic
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/parts"
	printf 'deb [trusted=yes] http://archive.ubuntu.com/ubuntu %s main\n' "$suite" >"$d/sources.list"
	# APT::Architectures: the machine's dpkg also knows arm64; only the
	# amd64 index is wanted.
	APT_OPTS=(-o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=$d/parts"
		-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o Acquire::Languages=none
		-o APT::Architectures=amd64 -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false)
	if ! compgen -G "$d/lists/*Packages*" >/dev/null; then
		vm_log "fetching Ubuntu's $suite package list into a private apt state (its signature is not checked: no Ubuntu keyring in Debian; the hashes are)"
		apt-get "${APT_OPTS[@]}" update -qq >&2
	fi
}

apt_update() {
	vm_log "apt-get update"
	apt-get "${APT_OPTS[@]}" -o DPkg::Lock::Timeout=300 update -qq >&2
}

# Prints "package version" of the kernel image package to use.
resolve_kernel() {
	local meta=$KMETA pkg dep ver
	[[ $VM_KERNEL == linux-image-* ]] && meta='' pkg=$VM_KERNEL
	if [[ -n $meta ]]; then
		dep=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions "$meta" 2>/dev/null | sed -n 's/^Depends: //p' | head -n1) || true
		if [[ -z $dep ]]; then
			apt_update
			dep=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions "$meta" | sed -n 's/^Depends: //p' | head -n1)
		fi
		pkg=$(tr ',' '\n' <<<"$dep" | grep -o 'linux-image-[^ ]*' | head -n1)
		[[ -n $pkg ]] || vm_die "cannot tell which kernel package $meta depends on ($dep)"
	fi
	ver=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -n1) || true
	[[ -n $ver ]] || vm_die "apt knows no package $pkg"
	echo "$pkg $ver"
}

# Writes the decompressed kernel proper of a bzImage to $2 (an ELF vmlinux,
# bootable through its PVH note). Reads the x86 boot protocol header rather
# than scanning for magic bytes: setup_sects at 0x1f1, payload_offset and
# payload_length at 0x248/0x24c (boot protocol >= 2.08).
extract_vmlinux() {
	local bz=$1 out=$2 sects off len magic
	sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$bz" | tr -d ' ')
	read -r off len < <(od -An -tu4 -j $((0x248)) -N8 "$bz")
	off=$(((sects + 1) * 512 + off))
	magic=$(tail -c +$((off + 1)) "$bz" | head -c 6 | od -An -tx1 | tr -d ' \n')
	# The build appends the decompressed size (4 bytes) after the stream.
	case $magic in
	fd377a585a00*) tail -c +$((off + 1)) "$bz" | head -c "$len" | xz -dc --single-stream >"$out" ;;
	28b52ffd*) tail -c +$((off + 1)) "$bz" | head -c $((len - 4)) | zstd -qdc >"$out" ;;
	1f8b*) tail -c +$((off + 1)) "$bz" | head -c "$len" | gzip -dc >"$out" 2>/dev/null || [[ $? == 2 ]] ;;
	*) return 1 ;;
	esac
	[[ $(head -c 4 "$out" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]]
}

fetch_kernel() {
	local pkg=$1 ver=$2 kdir=$3 tmp deb
	tmp=$(mktemp -d "$VM_CACHE/tmp.XXXXXX")
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" EXIT
	vm_log "downloading $pkg $ver"
	# APT::Sandbox::User=root: the _apt user cannot write into our cache dir.
	if ! (cd "$tmp" && apt-get "${APT_OPTS[@]}" -o APT::Sandbox::User=root -qq download "$pkg=$ver" >&2); then
		apt_update # stale lists point at a file the mirror no longer has
		(cd "$tmp" && apt-get "${APT_OPTS[@]}" -o APT::Sandbox::User=root -qq download "$pkg=$ver" >&2)
	fi
	# Newer kernels (trixie-backports' 7.x) split the image package: it only
	# depends on linux-binary-* (the vmlinuz), linux-base-* (the config) and
	# linux-modules-* of the same version. Ubuntu's image package holds the
	# vmlinuz and depends on linux-modules-* (with no version: the same
	# one). Fetch those too.
	local parts
	parts=$(apt-cache "${APT_OPTS[@]}" show "$pkg=$ver" 2>/dev/null | sed -n 's/^Depends: //p' | head -n1 |
		grep -oE "linux-(binary|base|modules)-[^ ,]+( \(= [^)]+\))?" | sed "s/ (= /=/; s/)\$//; /=/!s/\$/=$ver/") || true
	if [[ -n $parts ]]; then
		vm_log "downloading its parts: $(tr '\n' ' ' <<<"$parts")"
		# shellcheck disable=SC2086 # one word per package
		(cd "$tmp" && apt-get "${APT_OPTS[@]}" -o APT::Sandbox::User=root -qq download $parts >&2)
	fi
	mkdir -p "$tmp/x" "$tmp/k/modules"
	# Decompress the payload once (3 s here): the listing and the one tar pass
	# per dependency level below then read a plain tar instead of
	# decompressing 70 MB of xz each time. Several packages' payloads are
	# concatenated: tar reads them with --ignore-zeros.
	for deb in "$tmp"/*.deb; do
		dpkg-deb --fsys-tarfile "$deb" >>"$tmp/data.tar"
		rm -f "$deb"
	done
	tar -itf "$tmp/data.tar" >"$tmp/list"

	# Extract the boot files and the root modules together, then one pass per
	# dependency level (usually two or three more).
	local -A path_of=() seen=() deps_of=()
	local line name want=() pass=() m d
	while read -r line; do
		[[ $line =~ /([^/]+)\.ko(\.xz|\.zst|\.gz)?$ ]] || continue
		name=${BASH_REMATCH[1]//-/_}
		path_of[$name]=$line
	done <"$tmp/list"
	mapfile -t pass < <(grep -E '^\./(boot/(vmlinuz|config)-|usr/lib/modules/[^/]+/(vmlinuz|config)$)' "$tmp/list")
	want=("${ROOT_MODULES[@]}")
	while :; do
		local next=()
		for m in "${want[@]}"; do
			[[ -n ${seen[$m]:-} ]] && continue
			seen[$m]=1
			if [[ -z ${path_of[$m]:-} ]]; then
				vm_log "module $m is not in $pkg: assuming it is built in"
				seen[$m]=builtin
				continue
			fi
			pass+=("${path_of[$m]}")
			next+=("$m")
		done
		((${#pass[@]} == 0)) && break
		tar -i -x -f "$tmp/data.tar" -C "$tmp/x" "${pass[@]}"
		pass=()
		want=()
		for m in "${next[@]}"; do
			local src=$tmp/x/${path_of[$m]#./} ko=$tmp/k/modules/$m.ko
			case $src in
			*.xz) xz -dc "$src" >"$ko" ;;
			*.zst) zstd -qdc "$src" >"$ko" ;;
			*.gz) gzip -dc "$src" >"$ko" ;;
			*) cp "$src" "$ko" ;;
			esac
			# .modinfo holds NUL-separated key=value strings; "depends=a,b".
			deps_of[$m]=$(tr '\0' '\n' <"$ko" | sed -n 's/^depends=//p' | head -n1 | tr ',' ' ')
			for d in ${deps_of[$m]}; do want+=("${d//-/_}"); done
		done
	done

	# Load order: dependencies first (depth-first post-order from the roots).
	local -A placed=()
	place() {
		local m=$1 d
		[[ -n ${placed[$m]:-} || ${seen[$m]:-} == builtin ]] && return 0
		placed[$m]=1
		for d in ${deps_of[$m]:-}; do place "${d//-/_}"; done
		echo "$m" >>"$tmp/k/load.order"
	}
	: >"$tmp/k/load.order"
	for m in "${ROOT_MODULES[@]}"; do place "$m"; done

	local bz rel
	bz=$(echo "$tmp"/x/boot/vmlinuz-*)
	if [[ -f $bz ]]; then
		cp "$tmp"/x/boot/config-* "$tmp/k/config"
		rel=${bz##*/vmlinuz-}
	else
		bz=$(echo "$tmp"/x/usr/lib/modules/*/vmlinuz)
		[[ -f $bz ]] || vm_die "$pkg has no /boot/vmlinuz-* nor /usr/lib/modules/*/vmlinuz"
		rel=${bz%/vmlinuz}
		rel=${rel##*/}
		cp "$tmp/x/usr/lib/modules/$rel/config" "$tmp/k/config"
	fi
	echo "$rel" >"$tmp/k/release"
	if extract_vmlinux "$bz" "$tmp/k/vmlinux"; then
		echo vmlinux >"$tmp/k/kernel.name"
	else
		# Still bootable, just slower: QEMU's linuxboot path decompresses it.
		vm_log "could not extract an ELF vmlinux from $bz: booting the bzImage"
		rm -f "$tmp/k/vmlinux"
		cp "$bz" "$tmp/k/vmlinuz"
		echo vmlinuz >"$tmp/k/kernel.name"
	fi
	echo "$pkg $ver" >"$tmp/k/package"
	rm -rf "$kdir"
	mv "$tmp/k" "$kdir"
	echo "${ROOT_MODULES[*]}" >"$kdir/ready"
	rm -rf "$tmp"
	trap - EXIT
}

build_base_initrd() {
	local kdir=$1 out=$2 st
	st=$(mktemp -d "$VM_CACHE/tmp.XXXXXX")
	mkdir -p "$st"/{bin,dev,proc,sys,newroot,rw,se-run,lib/modules}
	cp /bin/busybox "$st/bin/busybox"
	# Only sh here; /init links the other applets itself (one exec at boot
	# instead of 400 forks of ln here).
	ln -s busybox "$st/bin/sh"
	cp "$VM_DIR/guest/init" "$st/init"
	chmod 0755 "$st/init"
	cp "$kdir"/modules/*.ko "$st/lib/modules/" 2>/dev/null || true
	cp "$kdir/load.order" "$st/lib/modules/load.order"
	# The kernel opens /dev/console for /init's stdio before /init can mount
	# devtmpfs.
	mknod "$st/dev/console" c 5 1
	# Stored uncompressed: a few MB copied by QEMU beats decompressing them
	# under TCG.
	(cd "$st" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) >"$out.tmp"
	mv "$out.tmp" "$out"
	rm -rf "$st"
}

# apparmor_parser_4 prints where an AppArmor 4 parser and its
# /etc/apparmor.d are, fetching them once into $VM_CACHE/apparmor/. The
# packaged profile (packaging/apparmor) is AppArmor 4 (abi/4.0, the userns
# rule): Debian 12's parser (3.0.8) stops at `userns,` with a syntax error,
# and the AppArmor 4 packages (Debian 13's, Ubuntu 24.04's) need glibc 2.38,
# newer than Debian 12's. So this unpacks Debian 13's apparmor and libc6
# (never installed; apt checks them against Debian's archive keyring) and
# runs that parser with its own dynamic loader and libc. It runs anywhere:
# on the host (packaging/check-apparmor.sh) and in the guests, which see the
# host's root.
AA_SUITE=trixie
apparmor_parser_4() {
	local top=$VM_CACHE/apparmor cur d tmp ver libc deb
	if [[ -r $top/current ]]; then
		d=$top/$(cat "$top/current")
		if [[ -x $d/apparmor_parser && -e $d/ready ]]; then
			printf 'APPARMOR_PARSER=%s\nAPPARMOR_BASE=%s\n' "$d/apparmor_parser" "$d/root/etc/apparmor.d"
			return 0
		fi
	fi
	apt_private "$AA_SUITE"
	ver=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions apparmor | sed -n 's/^Version: //p' | head -n1)
	libc=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions libc6 | sed -n 's/^Version: //p' | head -n1)
	[[ -n $ver && -n $libc ]] || vm_die "no apparmor or libc6 in $AA_SUITE"
	cur=apparmor_${ver}_libc6_${libc}
	d=$top/$cur
	mkdir -p "$top"
	tmp=$(mktemp -d "$top/tmp.XXXXXX")
	vm_log "downloading apparmor $ver and libc6 $libc ($AA_SUITE) for an AppArmor 4 parser"
	(cd "$tmp" && apt-get "${APT_OPTS[@]}" -o APT::Sandbox::User=root -qq download "apparmor=$ver" "libc6=$libc" >&2)
	mkdir -p "$tmp/root"
	for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
	rm -f "$tmp"/*.deb
	[[ -x $tmp/root/usr/sbin/apparmor_parser && -e $tmp/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 ]] ||
		vm_die "apparmor $ver or libc6 $libc lacks the parser or the loader"
	# The loader runs the parser with the libc beside it, not the host's.
	cat >"$tmp/apparmor_parser" <<-EOF
		#!/bin/sh
		# apparmor_parser $ver, with Debian $AA_SUITE's libc6 $libc (integration/vm/setup.sh --apparmor)
		r=$d/root
		exec "\$r/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "\$r/usr/lib/x86_64-linux-gnu" "\$r/usr/sbin/apparmor_parser" "\$@"
	EOF
	chmod 0755 "$tmp/apparmor_parser"
	rm -rf "$d"
	mv "$tmp" "$d"
	: >"$d/ready"
	echo "$cur" >"$top/current.tmp"
	mv "$top/current.tmp" "$top/current"
	printf 'APPARMOR_PARSER=%s\nAPPARMOR_BASE=%s\n' "$d/apparmor_parser" "$d/root/etc/apparmor.d"
}

# apparmor_ubuntu prints APPARMOR_UBUNTU: Ubuntu 24.04's apparmor package,
# unpacked once into $VM_CACHE/apparmor-ubuntu/, for what Ubuntu's userland
# sets at boot: the sysctl that turns the restriction on
# (usr/lib/sysctl.d/10-apparmor.conf) and the profile an unconfined process
# is moved to when it makes a user namespace (etc/apparmor.d/
# unprivileged_userns: no capabilities; Debian 13's copy is in complain
# mode, Ubuntu's enforces). Fetched as the Ubuntu kernel is (apt_ubuntu), so
# only the Ubuntu guest depends on Ubuntu's archive.
AA_UBUNTU_SUITE=noble-updates
apparmor_ubuntu() {
	local top=$VM_CACHE/apparmor-ubuntu d tmp uver
	if [[ -r $top/current && -e $top/$(cat "$top/current")/ready ]]; then
		printf 'APPARMOR_UBUNTU=%s\n' "$top/$(cat "$top/current")"
		return 0
	fi
	apt_private "$AA_UBUNTU_SUITE"
	uver=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions apparmor | sed -n 's/^Version: //p' | head -n1)
	[[ -n $uver ]] || vm_die "no apparmor in Ubuntu's $AA_UBUNTU_SUITE"
	mkdir -p "$top"
	tmp=$(mktemp -d "$top/tmp.XXXXXX")
	vm_log "downloading Ubuntu's apparmor $uver ($AA_UBUNTU_SUITE) for its AppArmor defaults"
	(cd "$tmp" && apt-get "${APT_OPTS[@]}" -o APT::Sandbox::User=root -qq download "apparmor=$uver" >&2)
	mkdir -p "$tmp/root"
	dpkg-deb -x "$tmp"/apparmor_*.deb "$tmp/root"
	rm -f "$tmp"/*.deb
	[[ -f $tmp/root/etc/apparmor.d/unprivileged_userns && -f $tmp/root/usr/lib/sysctl.d/10-apparmor.conf ]] ||
		vm_die "Ubuntu's apparmor $uver lacks unprivileged_userns or 10-apparmor.conf"
	d=$top/apparmor_$uver
	rm -rf "$d"
	mv "$tmp/root" "$d"
	rm -rf "$tmp"
	: >"$d/ready"
	echo "apparmor_$uver" >"$top/current.tmp"
	mv "$top/current.tmp" "$top/current"
	printf 'APPARMOR_UBUNTU=%s\n' "$d"
}

if [[ $apparmor == 1 ]]; then
	apparmor_parser_4
	exit 0
fi
if [[ $apparmor == ubuntu ]]; then
	apparmor_ubuntu
	exit 0
fi

install_packages
# ldd fails on a static binary; the initramfs has no libc for a dynamic one.
! ldd /bin/busybox >/dev/null 2>&1 || vm_die "/bin/busybox is dynamically linked: install busybox-static"

kdir=
if [[ $refresh != 1 && -r $pointer ]] && ready "$KROOT/$(cat "$pointer")"; then
	kdir=$KROOT/$(cat "$pointer")
else
	suite=$(vm_kernel_suite "$VM_KERNEL") ||
		vm_die "SE_VM_KERNEL=$VM_KERNEL: want 5.10, 6.1, 6.12, 7.3, ubuntu-6.8 (or bookworm, backports, a linux-image-* package name)"
	[[ -z $suite ]] || apt_private "$suite"
	read -r pkg ver < <(resolve_kernel)
	[[ -n ${pkg:-} ]] || exit 125
	kdir=$KROOT/${pkg}_$ver
	if ! ready "$kdir"; then
		t0=$(vm_now)
		fetch_kernel "$pkg" "$ver" "$kdir"
		vm_log "kernel $(cat "$kdir/release") ready in $(vm_elapsed "$t0") s ($(wc -l <"$kdir/load.order") modules)"
	fi
	echo "${kdir##*/}" >"$pointer.tmp"
	mv "$pointer.tmp" "$pointer"
fi

initrd=$kdir/initrd-base-$(base_key "$kdir").cpio
if [[ ! -e $initrd ]]; then
	rm -f "$kdir"/initrd-base-*.cpio # stale keys
	build_base_initrd "$kdir" "$initrd"
fi
emit "$kdir"
