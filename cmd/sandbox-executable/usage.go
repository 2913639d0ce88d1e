package main

// usage is the --help text. The man page is generated from it.
const usage = `Usage:
  sandbox-executable [OPTIONS] -- PROGRAM [ARGS...]
  sandbox-executable [OPTIONS] --sandbox-policy JSON [--] PROGRAM [ARGS...]
  sandbox-executable explain [OPTIONS] [--] PATH...
  sandbox-executable doctor [--json]
  sandbox-executable decider SOCKET

Runs PROGRAM under a sandbox: Landlock limits writes to the policy's writable
roots and hides the denied paths, a seccomp filter blocks dangerous system
calls, resource limits and a wall-clock timeout bound the whole process tree.
stdin, stdout and stderr are the program's, untouched; the helper prints
nothing on stdout and one line on stderr when it fails.

Without --sandbox-policy, PROGRAM runs under a built-in default made for an
untrusted build or script: the working directory is writable, VT Code's
secrets are unreadable, the network is loopback only (the run's own
namespace), the limits fit the machine (half its memory, 256 tasks per CPU
and at least 4096, 300 CPU-seconds per CPU, 10 minutes), and the build
caches are throwaway copies. The flags below change it, and so do the
settings files: .sandbox.json in the working directory or the nearest
parent, and $XDG_CONFIG_HOME/sandbox-executable/config.json, with the same
words as JSON keys ({"rw":["../out"],"net":"allow:proxy.golang.org",
"memory":"8G"}); a file in a writable root of the run is ignored, since the
program could have written it. With --sandbox-policy no settings file is
read, and only the flags that narrow the policy compose with it.

Options end at "--" or at the first word that is not an option; everything
after that belongs to the program. Every option takes "--opt VALUE" or
"--opt=VALUE".

Changing the built-in default (each repeatable where it names a path):
  --rw PATH                   make PATH writable too (a directory; relative
                              to the working directory); a default secret
                              named so becomes readable and writable
  --ro PATH                   keep PATH, inside a writable root, read-only;
                              a default secret named so becomes readable
  --hide PATH                 make PATH unreadable and unwritable
  --net MODE                  loopback (the default), none, full, or
                              allow:HOST[:PORT][,...] (through a filtering
                              proxy; port 443 unless given)
  --timeout DURATION          wall-clock limit of the whole tree (90s, 20m,
                              1h; a bare number is seconds)
  --memory SIZE               memory limit of the tree (512M, 8G; a bare
                              number is MB; unlimited)
  --pids N                    processes and threads of the tree (unlimited)
  --cpu DURATION              CPU-time budget of the tree (unlimited)
  --persist-cache             write what a run that exits 0 added to the
                              build caches back to the host's (new files
                              only): later builds, sandboxed or not, use
                              them, so only for commands trusted that much
  --allow-git-commit          make the .git directory at the top of each
                              writable root writable (git add, commit,
                              stash, checkout -b, rebase work) but for what
                              git runs or loads (config, hooks, info,
                              modules, worktrees, commondir, the files the
                              config names); no link, FIFO or socket in it.
                              A repository the program adds as a submodule
                              is still one git enters: see the README
  --scratch-caches            give a --sandbox-policy the default's
                              throwaway build caches
  --no-project-files          read no settings file

Policy (the JSON shapes VT Code sends; @FILE reads the JSON from a file):
  --sandbox-policy JSON       the SandboxPolicy: {"type":"read_only",...} or
                              {"type":"workspace_write","writable_roots":[...],...};
                              without it, the built-in default above
  --sandbox-policy-cwd DIR    the policy's working directory (default: the
                              current one); writable under workspace_write
  --seccomp-profile JSON      the SeccompProfile (default: derived from the
                              policy as VT Code derives it; a policy that
                              carries its own must agree with it)
  --resource-limits JSON      the ResourceLimits (default: derived likewise;
                              the same agreement); without a policy, only
                              the fields it gives change the default

Running:
  --keep-env                  pass the environment as given (default: drop
                              the variables VT Code treats as secrets)
  --keep-fd N                 keep file descriptor N open in the program
                              (repeatable; every other fd above 2 is closed)
  --fs-mode MODE              auto (default): exact where a mount namespace
                              can be had, else refuse; exact: masks and
                              read-only mounts under Landlock; landlock:
                              Landlock alone (narrower, and chmod/chown/utimes
                              outside the roots are not stopped)
  --cgroup-parent PATH        put the run's cgroup under PATH (a path inside
                              the cgroup hierarchy); default: a dedicated
                              subtree as root, the delegated own cgroup else
  --cpu-quota CORES           cap the tree's CPU bandwidth at CORES CPUs
                              (cpu.max); not in the policy, so a flag
  --allow-degraded            run even when the kernel cannot enforce the
                              whole policy, and say on stderr what is missing

Reporting (nothing of it goes to stdout):
  --quiet, -q                 without --sandbox-policy, say nothing on
                              stderr but a refusal: not why a limit ended
                              the run, nor that a settings file was ignored
  --explain-endings           with --sandbox-policy, say on stderr, in one
                              line, why a limit ended the run (without one
                              that is the default)
  --report-file PATH          write a JSON report when the run ends: how it
                              ended, time, CPU, peak memory, what was enforced
                              and what was not (schema: report/schema.json)
  --report-fd N               the same, to an open file descriptor above 2
  --log-denials PATH          write each denied operation as a JSON line:
                              system calls the filter refused (seen through
                              seccomp user notifications, still refused) and
                              requests the network proxy refused; asks the
                              kernel to audit-log Landlock denials too
  --log-level LEVEL           structured logs (debug, info, warn, error) on
                              stderr; also from $SANDBOX_EXECUTABLE_LOG
  --log-format FORMAT         text (default) or json; without a level: info
  --log-file PATH             write the logs there instead of stderr; without
                              a level: info

Information:
  explain [OPTIONS] PATH...   say whether a run with OPTIONS may read, write
                              and execute each PATH, the rule that decides,
                              and what would allow it; nothing runs
  doctor [--json]             say what this host can enforce and how to fix
                              each gap (exit 0 when everything is available)
  --explain                   print the resolved plan, where its settings came
                              from and how this host will enforce it (or
                              the refusal a run would meet), as JSON on
                              stdout; run nothing
  --help, -h                  this text
  --version                   the version

Start-up:
  decider SOCKET              stay resident and decide, at SOCKET (an absolute
                              path), the first runs of the invocations that
                              ask (SANDBOX_EXECUTABLE_DECIDER): they start
                              from its stored decision instead of deciding
                              themselves; until SIGTERM, SIGINT or SIGHUP

Environment:
  SANDBOX_EXECUTABLE_WARM     "off": every run is decided anew (no recipe is
                              looked up or stored); "debug": say on stderr
                              what the warm path did, and where a warm run's
                              time went (microseconds per phase). By default
                              a run of an invocation seen before is carried
                              out from its stored decision while what it
                              read still holds
  SANDBOX_EXECUTABLE_DECIDER  the socket of a resident decider (an absolute
                              path) to ask for a run's decision when none is
                              stored; the program may not reach it

Exit status:
  the program's own; 128+N when it was killed by signal N (137 when the
  memory limit ended the tree); 124 when the wall-clock timeout ended it; 152
  (128+SIGXCPU) when the tree's CPU budget ended it; 125 when the helper
  refused the policy or failed before the program ran; 126 when the program
  could not be executed; 127 when it was not found. Without --sandbox-policy
  (or with --explain-endings) a run a limit ended says which on stderr.
`
