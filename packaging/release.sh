#!/usr/bin/env bash
# Builds the "install anywhere" release binary of sandbox-executable and
# checks that it is one.
#
#   packaging/release.sh [VERSION [OUTDIR]]
#
# VERSION defaults to `git describe --always --dirty` (or "dev" outside a
# checkout), OUTDIR to dist. Writes
#   OUTDIR/sandbox-executable-VERSION-linux-ARCH
#   OUTDIR/sandbox-executable-VERSION-linux-ARCH.sha256
# and then runs packaging/verify-release.sh on it. `make release` and
# Dockerfile.test both call this script, so the flags live here only.
#
# Environment: GO (the go command, default "go"); RELEASE_SMOKE=0 skips the
# sandboxed smoke run (for places without namespaces, such as a `docker
# build` step; the static-linking checks still run).
set -euo pipefail

cd "$(dirname "$0")/.."

GO=${GO:-go}
version=${1:-$(git describe --always --dirty 2>/dev/null || echo dev)}
outdir=${2:-dist}

# The version goes into a file name and into -X main.version=...: refuse
# anything a shell, the linker or a file name could misread.
if [[ ! $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
	echo "release: invalid version '$version' (letters, digits and ._+- only)" >&2
	exit 2
fi

goos=$($GO env GOOS)
arch=$($GO env GOARCH)
if [ "$goos" != linux ]; then
	echo "release: GOOS is $goos; sandbox-executable is Linux only" >&2
	exit 2
fi

name="sandbox-executable-$version-linux-$arch"
mkdir -p "$outdir"
out="$outdir/$name"
log=$(mktemp)
trap 'rm -f "$log" "$out.tmp"' EXIT

# Why each flag:
#  CGO_ENABLED=1        libseccomp-golang and the C spawn stage are cgo.
#  -linkmode=external   cgo programs link through gcc anyway; saying so makes
#                       -extldflags certain to apply, and the C start-up
#                       runs spawn/stage.c's constructor before the runtime.
#  -extldflags=-static  gcc links libc.a and libseccomp.a (Debian's
#                       libseccomp-dev ships it; pkg-config yields -lseccomp).
#  -tags osusergo,netgo the pure-Go os/user and net resolvers: the cgo ones
#                       call getpwnam_r, getaddrinfo and friends, which in a
#                       static glibc binary dlopen NSS modules of the build
#                       host's glibc at run time (the linker warns about it).
#  -s -w                no symbol table, no DWARF: a smaller download.
#  -trimpath            no build-host paths in the binary.
#  -buildvcs=false      the version is stamped with -X; VCS stamping would
#                       need git and .git, which a container build may lack.
echo "release: building $out"
if ! CGO_ENABLED=1 "$GO" build \
	-trimpath -buildvcs=false \
	-tags osusergo,netgo \
	-ldflags "-s -w -X main.version=$version -linkmode=external -extldflags=-static" \
	-o "$out.tmp" ./cmd/sandbox-executable >"$log" 2>&1; then
	cat "$log" >&2
	echo "release: go build failed" >&2
	exit 1
fi
cat "$log" >&2
# glibc's warning for NSS-using functions in a static link means the binary
# would depend on the running host's glibc after all: not a release.
if grep -q 'in statically linked applications requires at runtime' "$log"; then
	echo "release: the static link pulled in glibc NSS functions (see above)" >&2
	exit 1
fi
mv "$out.tmp" "$out"

# The checksum file names the binary without the directory, so that
# `sha256sum -c` works from inside OUTDIR after a download.
(cd "$outdir" && sha256sum "$name" >"$name.sha256")

packaging/verify-release.sh "$out" "$version"

size=$(stat -c %s "$out")
echo "release: $out ($size bytes)"
echo "release: $out.sha256: $(cut -d' ' -f1 "$out.sha256")"
