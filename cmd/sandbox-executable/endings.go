package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"sandbox-executable/supervisor"
)

// Every run the helper ends, rather than its program, gets one line on
// stderr saying which limit ended it, its value and what raises it: in
// the standalone form unless --quiet, and in VT Code's form (a
// --sandbox-policy given) only with --explain-endings, so that its stderr
// stays the program's.

// wantEndings says whether endings are said on stderr.
func (inv *invocation) wantEndings() bool {
	if inv.o.explainEndings {
		return true
	}
	return inv.composed != nil && inv.composed.standalone && !inv.o.quiet
}

// endInGo says the run's end must be seen by Go even where the spawn
// stage's runner could end it alone: a pids limit hit is read from the
// cgroup once the program is gone (timeouts, CPU budgets and OOM kills are
// handed over to Go anyway).
func (inv *invocation) endInGo(pr *supervisor.Prepared) bool {
	return inv.wantEndings() && pr.Plan.Limits.Pids > 0
}

// sayEnding writes the ending's line, when there is one and it is wanted.
// It is what every path that ends a run calls once its Result is known.
func (inv *invocation) sayEnding(pr *supervisor.Prepared, res supervisor.Result) {
	if !inv.wantEndings() {
		return
	}
	if line := endingLine(pr, res, inv.composed != nil && inv.composed.standalone); line != "" {
		fmt.Fprintf(os.Stderr, "%s: %s\n", prog, line)
	}
}

// endingLine is the line for a run a limit ended, "" for one the program
// ended itself. standalone names the flags that raise a limit, else the
// policy's fields.
func endingLine(pr *supervisor.Prepared, res supervisor.Result, standalone bool) string {
	l := pr.Plan.Limits
	raise := func(flag, field string) string {
		if standalone {
			return flag + " raises it"
		}
		return "the policy's resource_limits." + field + " sets it"
	}
	switch res.Ending {
	case supervisor.Timeout:
		return fmt.Sprintf("ended by the wall-clock timeout: %d s passed (exit %d; %s)", l.TimeoutSeconds, res.ExitCode, raise("--timeout", "timeout_secs"))
	case supervisor.CPUBudget:
		return fmt.Sprintf("ended by the CPU-time budget: the process tree used its %d s of CPU time (exit %d; %s)", l.CPUSeconds, res.ExitCode, raise("--cpu", "cpu_time_secs"))
	case supervisor.OOM:
		return fmt.Sprintf("ended by the memory limit: the process tree reached %d MB and was killed (exit %d; %s)", l.MemoryBytes>>20, res.ExitCode, raise("--memory", "max_memory_mb"))
	case supervisor.PidsLimitHit:
		return fmt.Sprintf("the pids limit of %d tasks (processes and threads together) refused a fork or a new thread, and the program ended with exit %d (%s)", l.Pids, res.ExitCode, raise("--pids", "max_pids"))
	case supervisor.Signaled:
		// Without a cgroup (--allow-degraded) the per-process rlimits
		// stand in, and their signals say which one ended the program.
		for _, r := range res.Rlimits {
			switch {
			case res.Signal == unix.SIGXCPU && r.Resource == unix.RLIMIT_CPU:
				return fmt.Sprintf("ended by the CPU-time limit: one process used its %d s of CPU time (RLIMIT_CPU; exit %d; %s)", r.Cur, res.ExitCode, raise("--cpu", "cpu_time_secs"))
			case res.Signal == unix.SIGXFSZ && r.Resource == unix.RLIMIT_FSIZE:
				return fmt.Sprintf("ended by RLIMIT_FSIZE: a file reached the largest size allowed, %d MB (exit %d; the policy's resource_limits.max_disk_mb sets it)", r.Cur>>20, res.ExitCode)
			}
		}
	}
	return ""
}
