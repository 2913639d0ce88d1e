# fish completion for sandbox-executable(1).
# Install: copy to ~/.config/fish/completions/sandbox-executable.fish or
# /usr/local/share/fish/vendor_completions.d/.
# cmd/gen-manpage's tests check that it offers every option of --help.

set -l c sandbox-executable
complete -c $c -n '__fish_use_subcommand' -a doctor -d 'what this host can enforce'
complete -c $c -n '__fish_use_subcommand' -a explain -d 'what a run may do with paths'
complete -c $c -n '__fish_use_subcommand' -a decider -d 'decide first runs, resident'
complete -c $c -n '__fish_seen_subcommand_from doctor' -l json -d 'machine-readable output'

complete -c $c -l rw -r -a '(__fish_complete_directories)' -d 'make a directory writable too'
complete -c $c -l ro -r -F -d 'keep a path inside a writable root read-only'
complete -c $c -l hide -r -F -d 'make a path unreadable and unwritable'
complete -c $c -l net -x -a 'loopback none full allow:' -d 'network mode'
complete -c $c -l timeout -x -d 'wall-clock limit of the tree (90s, 20m)'
complete -c $c -l memory -x -d 'memory limit of the tree (512M, 8G, unlimited)'
complete -c $c -l pids -x -d 'processes and threads of the tree'
complete -c $c -l cpu -x -d 'CPU-time budget of the tree'
complete -c $c -l persist-cache -d "write a successful run's cache additions back"
complete -c $c -l allow-git-commit -d "make .git writable but for what git runs or loads"
complete -c $c -l scratch-caches -d 'give a policy the throwaway build caches'
complete -c $c -l no-project-files -d 'read no settings file'
complete -c $c -l quiet -s q -d 'say nothing on stderr but a refusal'
complete -c $c -l explain-endings -d 'with a policy, say why a limit ended the run'
complete -c $c -l sandbox-policy -r -F -d 'the SandboxPolicy JSON, or @FILE'
complete -c $c -l sandbox-policy-cwd -r -a '(__fish_complete_directories)' -d 'the policy working directory'
complete -c $c -l seccomp-profile -r -F -d 'the SeccompProfile JSON, or @FILE'
complete -c $c -l resource-limits -r -F -d 'the ResourceLimits JSON, or @FILE'
complete -c $c -l keep-env -d 'pass the environment as given'
complete -c $c -l keep-fd -x -d 'keep a file descriptor open in the program'
complete -c $c -l fs-mode -x -a 'auto exact landlock' -d 'filesystem mode'
complete -c $c -l cgroup-parent -x -d "cgroup to make the run's under"
complete -c $c -l cpu-quota -x -d 'CPU bandwidth cap in CPUs'
complete -c $c -l allow-degraded -d 'run even when the kernel cannot enforce everything'
complete -c $c -l report-file -r -F -d 'write a JSON report'
complete -c $c -l report-fd -x -d 'write the report to a descriptor'
complete -c $c -l log-denials -r -F -d 'write each denied operation as a JSON line'
complete -c $c -l log-level -x -a 'debug info warn error' -d 'structured log level'
complete -c $c -l log-format -x -a 'text json' -d 'structured log format'
complete -c $c -l log-file -r -F -d 'write the logs to a file'
complete -c $c -l explain -d 'print the resolved plan and run nothing'
complete -c $c -l help -s h -d 'show the help'
complete -c $c -l version -d 'show the version'
