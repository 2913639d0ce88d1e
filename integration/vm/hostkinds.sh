#!/usr/bin/env bash
# Prints the README's table of host kinds: TestHostKind (and, on this host,
# the container matrix) run here and in each VM guest, each run's HOSTKIND
# lines rendered by integration/vm/hostkinds. Run through `make host-kinds`
# (which builds the x86_64 and arm64 binaries and probes first).
set -euo pipefail
cd "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/../.."
export SANDBOX_EXECUTABLE=$PWD/bin/sandbox-executable SANDBOX_PROBE=$PWD/bin/probe
render() { go run ./integration/vm/hostkinds "$@"; }

hostcg=$(stat -fc %T /sys/fs/cgroup)
case $hostcg in cgroup2fs) hostcg="unified cgroup v2" ;; tmpfs) hostcg="hybrid cgroups (v1 + v2)" ;; esac
render -header </dev/null
go test -count=1 -v -run '^(TestHostKind|TestContainerMatrix)$' ./integration/ | render -kind "this host ($hostcg)"
for k in 5.10 6.1 6.12 7.3; do
	SE_VM_KERNEL=$k integration/vm/run-tests.sh -v -run '^TestHostKind$' ./integration/ 2>/dev/null |
		render -kind "VM guest: Debian's $k, unified cgroup v2"
done
SE_VM_ARCH=arm64 SANDBOX_EXECUTABLE=$PWD/bin/sandbox-executable-arm64 SANDBOX_PROBE=$PWD/bin/probe-arm64 \
	integration/vm/run-tests.sh -v -run '^TestHostKind$' ./integration/ 2>/dev/null |
	render -kind "VM guest: arm64, Debian's 6.1, unified cgroup v2"
