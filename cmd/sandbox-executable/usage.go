package main

// usage is the --help text. The man page is generated from it.
const usage = `Usage:
  sandbox-executable [OPTIONS] --sandbox-policy JSON [--] PROGRAM [ARGS...]
  sandbox-executable [OPTIONS] -- PROGRAM [ARGS...]
  sandbox-executable doctor [--json]

Runs PROGRAM under a sandbox: Landlock limits writes to the policy's writable
roots and hides the denied paths, a seccomp filter blocks dangerous system
calls, resource limits and a wall-clock timeout bound the whole process tree.
stdin, stdout and stderr are the program's, untouched; the helper prints
nothing on stdout and one line on stderr when it fails.

Options end at "--" or at the first word that is not an option; everything
after that belongs to the program. Every option takes "--opt VALUE" or
"--opt=VALUE".

Policy (the JSON shapes VT Code sends; @FILE reads the JSON from a file):
  --sandbox-policy JSON       the SandboxPolicy: {"type":"read_only",...} or
                              {"type":"workspace_write","writable_roots":[...],...};
                              without it: workspace_write on the working
                              directory, VT Code's secrets denied, no network,
                              the conservative limits, and the build caches
                              (~/.cache/go-build, ~/go/pkg/mod, ~/.npm,
                              ~/.cache/pip, ~/.cargo/registry, ~/.cargo/git)
                              writable as throwaway copies: the host's are
                              never written
  --sandbox-policy-cwd DIR    the policy's working directory (default: the
                              current one); writable under workspace_write
  --seccomp-profile JSON      the SeccompProfile (default: derived from the
                              policy as VT Code derives it; a policy that
                              carries its own must agree with it)
  --resource-limits JSON      the ResourceLimits (default: derived likewise;
                              the same agreement)

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
  doctor [--json]             say what this host can enforce and how to fix
                              each gap (exit 0 when everything is available)
  --explain                   print the resolved plan and how this host will
                              enforce it, as JSON on stdout; run nothing
  --help, -h                  this text
  --version                   the version

Environment:
  SANDBOX_EXECUTABLE_WARM     "off": every run is decided anew (no recipe is
                              looked up or stored); "debug": say on stderr
                              what the warm path did, and where a warm run's
                              time went (microseconds per phase). By default
                              a run of an invocation seen before is carried
                              out from its stored decision while what it
                              read still holds

Exit status:
  the program's own; 128+N when it was killed by signal N (137 when the
  memory limit ended the tree); 124 when the wall-clock timeout ended it; 152
  (128+SIGXCPU) when the tree's CPU budget ended it; 125 when the helper
  refused the policy or failed before the program ran; 126 when the program
  could not be executed; 127 when it was not found.
`
