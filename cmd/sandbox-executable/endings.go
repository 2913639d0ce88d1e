package main

import (
	"fmt"

	"sandbox-executable/spawn"
	"sandbox-executable/supervisor"

	"golang.org/x/sys/unix"
)

// Every run the helper ends, rather than its program, gets one line on
// stderr saying which limit ended it, its value and what raises it: in
// the standalone form unless --quiet, and in VT Code's form (a
// --sandbox-policy given) only with --explain-endings, so that its stderr
// stays the program's; a run it could not serve is a fatal error, said in
// every form. The lines are decided with the run and said by the
// runner, which ends it (spawn.Recipe.Say), warm or not.

// wantEndings says whether endings are said on stderr.
func (inv *invocation) wantEndings() bool {
	if inv.o.explainEndings {
		return true
	}
	return inv.composed != nil && inv.composed.standalone && !inv.o.quiet
}

// says are the lines the run says on stderr: as it starts (index 0: the
// settings' notes, and a degradation --allow-degraded let go, which Recipe
// adds) and for each ending the runner gives it.
func (inv *invocation) says(pr *supervisor.Prepared) [spawn.EndingsN]string {
	var s [spawn.EndingsN]string
	s[0] = inv.notesLine()
	// A run the helper could not serve as decided is a fatal error, said
	// in every form (the runner adds what failed).
	s[spawn.EndService] = prog + ": the helper ended the run (exit 125): it could not serve it as decided"
	if !inv.wantEndings() {
		return s
	}
	for _, e := range []int{spawn.EndTimeout, spawn.EndCPU, spawn.EndOOM, spawn.EndPids, spawn.EndFsize} {
		if line := endingLine(pr, e, inv.composed != nil && inv.composed.standalone); line != "" {
			s[e] = prog + ": " + line
		}
	}
	return s
}

// endingLine is the line for a run that limit ended (a spawn.End
// constant). standalone names the flags that raise a limit, else the
// policy's fields.
func endingLine(pr *supervisor.Prepared, ending int, standalone bool) string {
	l := pr.Plan.Limits
	raise := func(flag, field string) string {
		if standalone {
			return flag + " raises it"
		}
		return "the policy's resource_limits." + field + " sets it"
	}
	switch ending {
	case spawn.EndTimeout:
		if l.TimeoutSeconds > 0 {
			return fmt.Sprintf("ended by the wall-clock timeout: %d s passed (exit %d; %s)", l.TimeoutSeconds, supervisor.ExitTimeout, raise("--timeout", "timeout_secs"))
		}
	case spawn.EndCPU:
		if l.CPUSeconds > 0 {
			return fmt.Sprintf("ended by the CPU-time budget: the process tree (or one process, RLIMIT_CPU) used its %d s of CPU time (exit %d; %s)", l.CPUSeconds, supervisor.ExitCPUBudget, raise("--cpu", "cpu_time_secs"))
		}
	case spawn.EndFsize:
		if l.FileSizeBytes > 0 {
			return fmt.Sprintf("ended by RLIMIT_FSIZE: a file reached the largest size allowed, %d MB (exit %d; %s)", l.FileSizeBytes>>20, 128+int(unix.SIGXFSZ), "the policy's resource_limits.max_disk_mb sets it")
		}
	case spawn.EndOOM:
		if l.MemoryBytes > 0 {
			return fmt.Sprintf("ended by the memory limit: the process tree reached %d MB and was killed (exit 137; %s)", l.MemoryBytes>>20, raise("--memory", "max_memory_mb"))
		}
	case spawn.EndPids:
		if l.Pids > 0 {
			return fmt.Sprintf("the pids limit of %d tasks (processes and threads together) refused a fork or a new thread, and the program failed (%s)", l.Pids, raise("--pids", "max_pids"))
		}
	}
	return ""
}
