#!/usr/bin/env bash
# Lints Dockerfile.test without a Docker engine.
#
#   packaging/lint-dockerfile.sh [DOCKERFILE...]   (default: Dockerfile.test)
#
# Always runs packaging/dockerlint, the project's own small checker (parses
# the file; rejects latest/untagged base images, apt-get install without -y
# or --no-install-recommends, apt-get upgrade, and a release build that does
# not go through packaging/release.sh). hadolint is not packaged for Debian
# 12, so it runs in addition only where someone has installed it.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}

files=("$@")
if [ "${#files[@]}" -eq 0 ]; then files=(Dockerfile.test); fi

if command -v hadolint >/dev/null 2>&1; then
	hadolint "${files[@]}"
else
	echo "lint-dockerfile: hadolint not installed; running packaging/dockerlint only"
fi
"$GO" run ./packaging/dockerlint -release-script packaging/release.sh "${files[@]}"
