#!/usr/bin/env bash
# Checks that packaging/apparmor/sandbox-executable compiles, without
# loading it: apparmor_parser -Q (skip the kernel load) -K (no cache).
#
#   packaging/check-apparmor.sh
#
# The profile uses AppArmor 4 (abi <abi/4.0>, the userns rule), so this
# needs apparmor_parser 4.0 or newer and its /etc/apparmor.d (abi/4.0,
# tunables/global): Ubuntu 24.04, Debian 13. Debian 12's apparmor is 3.0.8,
# which cannot parse it (a syntax error at `userns,`); there the check is
# skipped with a message, unless APPARMOR_REQUIRE=1. APPARMOR_PARSER and
# APPARMOR_BASE name another parser and include directory: `make
# lint-packaging` passes Debian 13's parser, unpacked with its own libc by
# integration/vm/setup.sh --apparmor, and requires the check.
set -euo pipefail

cd "$(dirname "$0")/.."
parser=${APPARMOR_PARSER:-apparmor_parser}
base=${APPARMOR_BASE:-/etc/apparmor.d}
profile=packaging/apparmor/sandbox-executable

skip() {
	if [ "${APPARMOR_REQUIRE:-0}" = 1 ]; then
		echo "check-apparmor: $*" >&2
		exit 1
	fi
	echo "check-apparmor: skipped: $*"
	exit 0
}

# An empty config file keeps the host's parser.conf (cache and include
# settings) out of the check.
conf=$(mktemp)
trap 'rm -f "$conf"' EXIT

command -v "$parser" >/dev/null 2>&1 || skip "no $parser (package apparmor)"
version=$("$parser" --config-file="$conf" --version | head -n1)
major=$(sed -n 's/^AppArmor parser version \([0-9]*\)\..*/\1/p' <<<"$version")
if [ -z "$major" ] || [ "$major" -lt 4 ]; then
	skip "$parser is not AppArmor 4 or newer: $version"
fi
if [ ! -f "$base/abi/4.0" ] || [ ! -f "$base/tunables/global" ]; then
	skip "$base lacks abi/4.0 or tunables/global"
fi

# -M: compile against the abi/4.0 feature set rather than the running
# kernel's, which may have no AppArmor at all; --Werror: a warning is a
# failure.
"$parser" --config-file="$conf" -b "$base" -M "$base/abi/4.0" -Q -K --Werror "$profile"
echo "check-apparmor: $profile compiles ($version)"
