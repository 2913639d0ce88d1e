#!/bin/sh
# shellcheck disable=SC2015 # ok and bad always succeed: A && ok || bad is an if
# The systemd guest's test, run as root by se-test.service once the system is
# up (Debian's systemd as PID 1, user@1000.service started for the lingering
# user `se`). Writes its log to /se-out/log and the verdict to /se-out/result:
# "SE-SYSTEMD-RESULT=pass" or "...=fail N". The checks are made here, in the
# guest; the host only reads the verdict.
set -u
bin=/se/bin/sandbox-executable
base=/se/bin/sandbox-executable.base
fails=0
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fails=$((fails + 1)); }
val() { sed -n "s/^$1=//p" "$2" | head -n1; }
user_case() { # CASE BINARY OUTFILE: one case as `se` in a fresh login session
	su -l se -c "sh /se/user-case.sh $1 $2" >"$3" 2>&1
	sed 's/^/      /' "$3"
}

echo "kernel $(uname -r); $(systemctl --version | head -n1); accel $(cat /se/accel)"
i=0
until systemctl is-active -q user@1000.service || [ $i -ge 300 ]; do i=$((i + 1)); sleep 0.1; done
systemctl is-active -q user@1000.service && ok "user@1000.service is active (lingering user se)" || bad "user@1000.service did not start"
echo "cgroup2 root controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "user@1000 delegates: $(cat /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers 2>/dev/null)"

# 1. The helper as se from a login session: a delegated scope from se's
#    manager, the run's cgroup inside it.
o=/tmp/c-true
user_case true "$bin" $o
cg=$(val cgroup $o)
case $cg in
*/session-*.scope) ok "the login shell sits in $cg" ;;
*) bad "the login shell is not in a session scope: $cg" ;;
esac
[ "$(val cgroup_owner $o)" = root ] && ok "its scope is owned by root (not manageable by se)" || bad "session scope owner $(val cgroup_owner $o)"
[ "$(val true_rc $o)" = 0 ] && ok "a run with --resource-limits exits 0" || bad "the run exited $(val true_rc $o): $(val true_err $o)"
case $(val true_report $o) in
*'"path":"/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/'*sandbox-executable-*.scope/*) ok "its cgroup is inside a transient scope of se's manager" ;;
*) bad "the run's cgroup is not in a user scope: $(val true_report $o | grep -o '"cgroup":{[^}]*}')" ;;
esac
echo "      $(val true_scope $o)"

# 1b. doctor from the same kind of session: limits through a user scope (it
#     says so instead of "missing"), and it leaves no unit behind.
o=/tmp/c-doctor
user_case doctor "$bin" $o
[ "$(val doctor_cgroups $o)" = ok ] && ok "doctor: cgroups ok from a login session" || bad "doctor: cgroups $(val doctor_cgroups $o): $(val doctor_cgroups_notes $o)"
case $(val doctor_cgroups_notes $o) in
*"limits will be enforced through a transient systemd user scope"*user@1000.service*) ok "doctor: limits through a systemd user scope below user@1000.service" ;;
*) bad "doctor does not name the user scope: $(val doctor_cgroups_notes $o)" ;;
esac
# Its exit status is its verdict (0 only when every strict item is ok; the
# 6.1 guest's Landlock ABI 2 is degraded), the same for text and JSON.
drc=$(val doctor_rc $o)
[ "$drc:$(val doctor_ok $o)" = 0:true ] || [ "$drc:$(val doctor_ok $o)" = 1:false ]
agree=$?
[ $agree = 0 ] && [ "$(val doctor_text_rc $o)" = "$drc" ] && [ "$(val doctor_errlines $o)" = 0 ] &&
	ok "doctor: exit $drc agrees with ok=$(val doctor_ok $o), text and JSON alike, nothing on stderr" || bad "doctor: exit $drc (text $(val doctor_text_rc $o)), ok=$(val doctor_ok $o), $(val doctor_errlines $o) stderr lines"
units=$(su -l se -c "systemctl --user list-units --all --plain --no-legend 'sandbox-executable-*'" 2>&1)
left=$(find /sys/fs/cgroup -type d -name 'sandbox-executable-*' 2>/dev/null)
[ -z "$units$left" ] && ok "doctor made no unit and no cgroup" || bad "after doctor: units '$units', cgroups '$left'"
if [ -x $base ]; then
	o=/tmp/c-doctor-base
	user_case doctor "$base" $o
	echo "      base doctor: cgroups $(val doctor_cgroups $o)"
fi

# 2. The limits hold there: a fork bomb stops at max_pids, an allocation
#    over max_memory_mb is OOM-killed.
o=/tmp/c-fork
user_case forkbomb "$bin" $o
n=$(val forkbomb_out $o | tr -d ' ')
if [ "$(val forkbomb_rc $o)" = 0 ] && [ -n "$n" ] && [ "$n" -lt 32 ] && [ "$n" -gt 10 ]; then
	ok "the fork bomb stopped at $n children (max_pids 32)"
else
	bad "fork bomb: rc $(val forkbomb_rc $o), children '$n' ($(val forkbomb_err $o))"
fi
o=/tmp/c-oom
user_case oom "$bin" $o
rep=$(val oom_report $o)
if [ "$(val oom_rc $o)" = 137 ] && echo "$rep" | grep -q '"ending":"oom"' && [ "$(val oom_out $o | tr -d ' ')" != survived ]; then
	ok "256 MB under max_memory_mb 64: OOM-killed, exit 137, ending oom"
else
	bad "oom: rc $(val oom_rc $o), out '$(val oom_out $o)', $(echo "$rep" | grep -o '"ending":"[a-z_]*"')"
fi

# 3. Nothing left: no scope unit, no cgroup named for the helper.
sleep 0.5
i=0
while [ $i -lt 50 ]; do
	left=$(find /sys/fs/cgroup -type d -name 'sandbox-executable-*' 2>/dev/null)
	units=$(su -l se -c "systemctl --user list-units --all --plain --no-legend 'sandbox-executable-*'" 2>&1)
	[ -z "$left$units" ] && break
	i=$((i + 1))
	sleep 0.1
done
[ -z "$left" ] && ok "no sandbox-executable cgroup is left" || bad "cgroups left: $left"
[ -z "$units" ] && ok "no sandbox-executable unit is left in se's manager" || bad "units left: $units"

# 4. The helper killed with SIGKILL: the guardian ends the program, the
#    scope empties and systemd removes it.
o=/tmp/c-kill
user_case kill "$bin" $o
[ -n "$(val kill_scope $o)" ] && [ "$(val kill_program_started $o)" = yes ] && ok "killed helper: its program ran in $(val kill_scope $o | sed 's|.*/||')" || bad "kill: no scope or program seen"
[ "$(val kill_rc $o)" = 137 ] && ok "the helper died of SIGKILL" || bad "kill: the helper exited $(val kill_rc $o)"
[ "$(val kill_program_left $o)" = no ] && ok "its program is gone" || bad "its program outlived the helper"
[ "$(val kill_scope_left $o)" = no ] && ok "its scope is gone" || bad "its scope is left: $(val kill_scope $o)"

# 5. A root-owned scope made by systemd-run (no PAM session), with se's
#    manager up: the same works through the private socket.
o=/tmp/c-sr
systemd-run --quiet --scope --slice=user-1000.slice -- setpriv --reuid=1000 --regid=1000 --clear-groups \
	env -i PATH=/usr/bin:/bin HOME=/home/se XDG_RUNTIME_DIR=/run/user/1000 sh /se/user-case.sh true "$bin" >$o 2>&1
sed 's/^/      /' $o
case $(val cgroup $o) in
*/run-*.scope) [ "$(val cgroup_owner $o)" = root ] && ok "systemd-run put se in a root-owned $(val cgroup $o | sed 's|.*/||')" || bad "owner $(val cgroup_owner $o)" ;;
*) bad "systemd-run scope: $(val cgroup $o)" ;;
esac
[ "$(val true_rc $o)" = 0 ] && ok "from there too the run exits 0 ($(val true_scope $o | grep -o 'via=[^ ]*'))" || bad "from systemd-run's scope: rc $(val true_rc $o): $(val true_err $o)"

# 6. The base binary (before the D-Bus path) from the same login session.
if [ -x $base ]; then
	o=/tmp/c-base
	user_case true "$base" $o
	[ "$(val true_rc $o)" = 125 ] && ok "the base binary refuses there: exit 125" || bad "the base binary exited $(val true_rc $o)"
	echo "      base: $(val true_err $o)"
fi

# Start-up, when asked for (SE_SYSTEMD_BENCH=1): from a login session, the
# helper that asks for its scope against the same helper wrapped by hand in
# systemd-run --user --scope -p Delegate=yes; and each in a delegated scope
# of its own (no D-Bus in the helper) this helper against the base binary.
if [ -x /se/bin/farm-bench ]; then
	echo '{"type":"read_only"}' >/tmp/bench-policy.json
	echo '{"max_memory_mb":64,"max_pids":32}' >/tmp/bench-limits.json
	chmod 0644 /tmp/bench-policy.json /tmp/bench-limits.json
	args="--sandbox-policy @/tmp/bench-policy.json --resource-limits @/tmp/bench-limits.json -- /bin/true"
	echo "bench 1: from a session scope, A = the helper (asks the manager), B = systemd-run --user --scope -p Delegate=yes the helper"
	su -l se -c "/se/bin/farm-bench -n 10 --warmup 1 --timeout 1200 --vs \"systemd-run --user --scope -p Delegate=yes --quiet $bin $args\" -- $bin $args" 2>&1 | sed 's/^/      /'
	if [ -x $base ]; then
		# Each run in a delegated scope of its own: one shared with
		# farm-bench would hold another process, which New cannot move.
		sr="systemd-run --user --scope -p Delegate=yes --quiet"
		echo "bench 2: each in a delegated scope of its own (no D-Bus in the helper), A = the helper, B = the base binary"
		su -l se -c "/se/bin/farm-bench -n 10 --warmup 1 --timeout 1200 --vs \"$sr $base $args\" -- $sr $bin $args" 2>&1 | sed 's/^/      /'
	fi
fi

# 7. No user manager: the one-line refusal, exit 125.
systemctl stop user@1000.service
systemctl is-active -q user@1000.service && bad "user@1000.service still active"
o=/tmp/c-none
systemd-run --quiet --scope --slice=user-1000.slice -- setpriv --reuid=1000 --regid=1000 --clear-groups \
	env -i PATH=/usr/bin:/bin HOME=/home/se XDG_RUNTIME_DIR=/run/user/1000 sh /se/user-case.sh true "$bin" >$o 2>&1
sed 's/^/      /' $o
err=$(val true_err $o)
if [ "$(val true_rc $o)" = 125 ] && [ "$(val true_errlines $o)" = 1 ] && echo "$err" | grep -q 'no systemd user manager answered'; then
	ok "without a user manager: exit 125, one line naming it"
else
	bad "without a user manager: rc $(val true_rc $o), $(val true_errlines $o) lines: $err"
fi

o=/tmp/c-doctor-none
systemd-run --quiet --scope --slice=user-1000.slice -- setpriv --reuid=1000 --regid=1000 --clear-groups \
	env -i PATH=/usr/bin:/bin HOME=/home/se XDG_RUNTIME_DIR=/run/user/1000 sh /se/user-case.sh doctor "$bin" >$o 2>&1
sed 's/^/      /' $o
case "$(val doctor_cgroups $o) $(val doctor_cgroups_notes $o)" in
"missing "*"no systemd user manager answered"*) ok "doctor without a user manager: cgroups missing, saying none answered" ;;
*) bad "doctor without a user manager: $(val doctor_cgroups $o): $(val doctor_cgroups_notes $o)" ;;
esac

if [ $fails = 0 ]; then
	echo "SE-SYSTEMD-RESULT=pass" >/se-out/result
else
	echo "SE-SYSTEMD-RESULT=fail $fails" >/se-out/result
fi
sync
