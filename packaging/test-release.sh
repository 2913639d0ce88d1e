#!/usr/bin/env bash
# Tests a release binary on this kernel: verify-release.sh's checks
# (static, version, sandboxed smoke runs), then the integration suite with
# the binary as $SANDBOX_EXECUTABLE. Dockerfile.test runs it as the
# container's command; it works the same on a host.
#
#   packaging/test-release.sh [BINARY]
#
# BINARY defaults to the only dist/sandbox-executable-*-linux-* there is.
# Needs root (the suite also runs programs as nobody, and makes cgroups),
# Landlock in the kernel, and gcc for the static probe.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}

if [ $# -gt 1 ]; then
	echo "usage: $0 [BINARY]" >&2
	exit 2
fi
if [ $# -eq 1 ]; then
	bin=$1
else
	shopt -s nullglob
	found=()
	for f in dist/sandbox-executable-*-linux-*; do
		[[ $f == *.sha256 ]] || found+=("$f")
	done
	if [ "${#found[@]}" -ne 1 ]; then
		echo "test-release: want exactly one dist/sandbox-executable-*-linux-* binary, found ${#found[@]}; name one" >&2
		exit 2
	fi
	bin=${found[0]}
fi
bin=$(realpath "$bin")

# The version the binary should report is in its file name.
name=$(basename "$bin")
version=${name#sandbox-executable-}
version=${version%-linux-*}
packaging/verify-release.sh "$bin" "$version"

make probe
echo "test-release: integration suite against $bin"
SANDBOX_EXECUTABLE=$bin SANDBOX_PROBE=$PWD/bin/probe "$GO" test -count=1 ./integration/
