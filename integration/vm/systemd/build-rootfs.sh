#!/usr/bin/env bash
# Builds (once, cached) the root filesystem of the systemd guest: a minimal
# Debian bookworm with Debian's own systemd as PID 1, the system and user D-Bus
# (dbus, dbus-user-session), pam_systemd (libpam-systemd), and a test user `se`
# (uid 1000) whose user manager starts at boot (lingering, as
# `loginctl enable-linger se` records it); python3 for an optional benchmark.
#
# The tree is a plain directory under $VM_CACHE/systemd/rootfs-<key>, <key>
# hashing this script: the guest mounts it read-only over virtio-9p with a
# tmpfs overlay on top, so nothing a run does reaches the cache.
#
# Usage: build-rootfs.sh          prints ROOTFS=<dir>
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../lib.sh"

key=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
root=$VM_CACHE/systemd/rootfs-$key
if [[ -e $root/.ready ]]; then
	echo "ROOTFS=$root"
	exit 0
fi
mkdir -p "$VM_CACHE/systemd"
exec 9>"$VM_CACHE/systemd/.build.lock"
flock 9
if [[ -e $root/.ready ]]; then
	echo "ROOTFS=$root"
	exit 0
fi
[[ $(id -u) == 0 ]] || vm_die "building the systemd guest's rootfs needs root (mmdebstrap --mode=root)"
if ! command -v mmdebstrap >/dev/null; then
	vm_log "installing mmdebstrap"
	apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends mmdebstrap >&2
fi
# The mirror the machine already uses for its own suite.
# shellcheck disable=SC1091
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
# shellcheck disable=SC2016 # $(...) is apt's own format syntax
mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
	awk -v s="$codename" '$2 == s { print $1; exit }')
mirror=${mirror:-http://deb.debian.org/debian/}

rm -rf "$VM_CACHE"/systemd/rootfs-* # older keys: one tree is a few hundred MB
tmp=$VM_CACHE/systemd/tmp.$$
rm -rf "$tmp"
t0=$(vm_now)
vm_log "building the systemd guest's rootfs (Debian bookworm, $mirror)"
# minbase + what the guest needs; no recommends (no cron, no timers to mask).
# The hooks: the test user, its lingering user manager, no getty, no
# network-wait, a fixed hostname; an empty machine-id (systemd makes one at
# boot, in the tmpfs overlay).
# shellcheck disable=SC2016 # "$1" is the hooks' own argument (the tree), expanded by mmdebstrap
mmdebstrap --mode=root --variant=minbase --aptopt='APT::Install-Recommends "false"' \
	--include=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,procps,libseccomp2,util-linux,python3 \
	--customize-hook='chroot "$1" useradd -m -u 1000 -U -s /bin/sh se' \
	--customize-hook='mkdir -p "$1/var/lib/systemd/linger" && touch "$1/var/lib/systemd/linger/se"' \
	--customize-hook='echo se-guest >"$1/etc/hostname"' \
	--customize-hook=': >"$1/etc/machine-id"' \
	--customize-hook='for u in getty@tty1.service serial-getty@ttyS0.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service; do ln -sf /dev/null "$1/etc/systemd/system/$u"; done' \
	--customize-hook='rm -rf "$1/var/cache/apt/archives"/*.deb "$1/var/lib/apt/lists"/*' \
	bookworm "$tmp" "$mirror" >&2
touch "$tmp/.ready"
mv "$tmp" "$root"
vm_log "rootfs ready in $(vm_elapsed "$t0") s ($(du -sm "$root" | cut -f1) MB)"
echo "ROOTFS=$root"
