#!/bin/sh
# One case of the systemd guest test, run as the unprivileged user `se` by
# guest-test.sh (through `su -l`: PAM and pam_systemd put this shell in a
# root-owned session-N.scope). Prints KEY=VALUE lines guest-test.sh checks.
#   user-case.sh CASE BINARY
set -u
case_=$1 bin=$2
probe=/se/bin/probe
pol='{"type":"read_only"}'
lim() { printf '{"max_memory_mb":%s,"max_pids":%s,"cpu_time_secs":60,"timeout_secs":120}' "$1" "$2"; }
own=$(cut -d: -f3 /proc/self/cgroup)
echo "cgroup=$own"
echo "cgroup_owner=$(stat -c %U "/sys/fs/cgroup$own")"
echo "xdg_runtime_dir=${XDG_RUNTIME_DIR:-}"
echo "dbus=${DBUS_SESSION_BUS_ADDRESS:-}"
run() { # NAME LIMITS PROGRAM...: runs the helper, prints NAME_rc, NAME_out, NAME_err, the report's lines
	n=$1 l=$2
	shift 2
	"$bin" --sandbox-policy "$pol" --resource-limits "$l" --report-file "/tmp/$n.json" \
		--log-level debug --log-file "/tmp/$n.log" -- "$@" >"/tmp/$n.out" 2>"/tmp/$n.err"
	echo "${n}_rc=$?"
	echo "${n}_out=$(tr '\n' ' ' <"/tmp/$n.out")"
	echo "${n}_err=$(cat "/tmp/$n.err")"
	echo "${n}_errlines=$(wc -l <"/tmp/$n.err")"
	[ -r "/tmp/$n.json" ] && echo "${n}_report=$(tr -d '\n ' <"/tmp/$n.json")"
	# The scope's own debug line (when the manager was asked), with its time.
	echo "${n}_scope=$(grep -m1 'systemd user scope' "/tmp/$n.log" 2>/dev/null)"
}
case $case_ in
true) run true "$(lim 64 32)" /bin/sh -c 'exit 0' ;;
forkbomb) run forkbomb "$(lim 64 32)" "$probe" forkmax 1000 ;;
oom) run oom "$(lim 64 32)" "$probe" hog 256 ;;
kill)
	# The helper killed with SIGKILL while its program sleeps.
	"$bin" --sandbox-policy "$pol" --resource-limits "$(lim 64 32)" -- "$probe" sleep 300 tag-se-kill >/dev/null 2>/tmp/kill.err &
	pid=$!
	i=0
	while [ $i -lt 200 ]; do
		scope=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "sandbox-executable-$pid-*.scope" 2>/dev/null | head -n1)
		[ -n "$scope" ] && pgrep -f "^$probe sleep 300 tag-se-kill" >/dev/null && break
		i=$((i + 1))
		sleep 0.1
	done
	echo "kill_scope=$scope"
	echo "kill_program_started=$(pgrep -f "^$probe sleep 300 tag-se-kill" >/dev/null && echo yes || echo no)"
	kill -KILL "$pid"
	wait "$pid"
	echo "kill_rc=$?"
	i=0
	while [ $i -lt 100 ] && { [ -e "$scope" ] || pgrep -f "^$probe sleep 300 tag-se-kill" >/dev/null; }; do
		i=$((i + 1))
		sleep 0.1
	done
	echo "kill_scope_left=$([ -n "$scope" ] && [ -e "$scope" ] && echo yes || echo no)"
	echo "kill_program_left=$(pgrep -f "^$probe sleep 300 tag-se-kill" >/dev/null && echo yes || echo no)"
	;;
doctor)
	# doctor's verdict on cgroups here, from its JSON (python3 is in the
	# guest), and its text's cgroups line.
	"$bin" doctor --json >/tmp/doctor.json 2>/tmp/doctor.err
	echo "doctor_rc=$?"
	echo "doctor_errlines=$(wc -l </tmp/doctor.err)"
	python3 -c '
import json, sys
r = json.load(open("/tmp/doctor.json"))
cg = [c for c in r["checks"] if c["id"] == "cgroups"][0]
print("doctor_ok=" + str(r["ok"]).lower())
print("doctor_cgroups=" + cg["status"])
print("doctor_cgroups_notes=" + " | ".join(cg.get("notes", [])))
print("doctor_cgroups_fix=" + cg.get("fix", ""))
' 2>&1
	"$bin" doctor >/tmp/doctor.txt 2>&1
	echo "doctor_text_rc=$?"
	echo "doctor_text_cgroups=$(grep -m1 -E '^[a-z]+ +cgroups ' /tmp/doctor.txt)"
	;;
*) echo "unknown case $case_" >&2; exit 2 ;;
esac
exit 0
