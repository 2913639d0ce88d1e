#!/usr/bin/env bash
# Builds the "install anywhere" release binaries of sandbox-executable and
# checks that they are.
#
#   packaging/release.sh [VERSION [OUTDIR]]
#
# VERSION defaults to `git describe --tags --always --dirty` (the tag when
# HEAD has one, else the latest tag with the commits since, else the commit;
# "dev" outside a checkout), OUTDIR to dist. Writes, for each ARCH of RELEASE_ARCHES,
#   OUTDIR/sandbox-executable-VERSION-linux-ARCH
#   OUTDIR/sandbox-executable-VERSION-linux-ARCH.sha256
# and then runs packaging/verify-release.sh on each. `make release` and
# Dockerfile.test both call this script, so the flags live here only.
#
# Environment: GO (the go command, default "go"); RELEASE_ARCHES, the Go
# architectures to build (default: this machine's; `make release` asks for
# "amd64 arm64"): a foreign one is cross-built with the Debian cross
# compiler (aarch64-linux-gnu-gcc, x86_64-linux-gnu-gcc; CC_<arch>
# overrides it) against that architecture's libseccomp.a (libseccomp-dev:ARCH,
# see .ci/install-deps); RELEASE_SMOKE=0 skips the sandboxed smoke run (for
# places without namespaces, such as a `docker build` step; the
# static-linking checks still run; a foreign binary's runs happen in its VM
# guest instead, `make vm-test-arm64`).
set -euo pipefail

cd "$(dirname "$0")/.."

GO=${GO:-go}
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
outdir=${2:-dist}

# The version goes into a file name and into -X main.version=...: refuse
# anything a shell, the linker or a file name could misread.
if [[ ! $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
	echo "release: invalid version '$version' (letters, digits and ._+- only)" >&2
	exit 2
fi

goos=$($GO env GOOS)
native=$($GO env GOARCH)
if [ "$goos" != linux ]; then
	echo "release: GOOS is $goos; sandbox-executable is Linux only" >&2
	exit 2
fi
read -r -a arches <<<"${RELEASE_ARCHES:-$native}"
((${#arches[@]} > 0)) || arches=("$native")

mkdir -p "$outdir"
log=$(mktemp)
cleanup=("$log")
trap 'rm -f "${cleanup[@]}"' EXIT

# build_one ARCH: one static binary, its .sha256, and its checks.
build_one() {
	local arch=$1 name out triple cc cc_var pcdir
	name="sandbox-executable-$version-linux-$arch"
	out="$outdir/$name"
	cleanup+=("$out.tmp")
	local -a env=(CGO_ENABLED=1 GOARCH="$arch")
	if [ "$arch" != "$native" ]; then
		case $arch in
		arm64) triple=aarch64-linux-gnu ;;
		amd64) triple=x86_64-linux-gnu ;;
		*)
			echo "release: no cross toolchain known for GOARCH $arch (amd64 and arm64 are supported)" >&2
			exit 2
			;;
		esac
		cc_var=CC_$arch
		cc=${!cc_var:-$triple-gcc}
		command -v "$cc" >/dev/null || {
			echo "release: $cc not found: install gcc-$triple and libseccomp-dev:$arch (.ci/install-deps)" >&2
			exit 1
		}
		pcdir=/usr/lib/$triple/pkgconfig
		[ -e "$pcdir/libseccomp.pc" ] || {
			echo "release: no $pcdir/libseccomp.pc: install libseccomp-dev:$arch (.ci/install-deps)" >&2
			exit 1
		}
		# The cross compiler, and pkg-config reading that architecture's
		# libseccomp.pc only.
		env+=(CC="$cc" PKG_CONFIG_LIBDIR="$pcdir")
	fi

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
	if ! env "${env[@]}" "$GO" build \
		-trimpath -buildvcs=false \
		-tags osusergo,netgo \
		-ldflags "-s -w -X main.version=$version -linkmode=external -extldflags=-static" \
		-o "$out.tmp" ./cmd/sandbox-executable >"$log" 2>&1; then
		cat "$log" >&2
		echo "release: go build failed ($arch)" >&2
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
}

for a in "${arches[@]}"; do
	build_one "$a"
done
