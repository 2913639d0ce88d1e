package supervisor

import (
	"log/slog"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/netproxy"
)

// Ending says how a run ended.
type Ending string

// Endings.
const (
	Exited       Ending = "exited"
	Signaled     Ending = "signaled"
	Timeout      Ending = "timeout"
	CPUBudget    Ending = "cpu_budget"
	OOM          Ending = "oom"
	PidsLimitHit Ending = "pids_limit_hit"
	SetupFailed  Ending = "setup_failed"
	Refused      Ending = "refused"
)

// Exit codes of the helper itself.
const (
	ExitTimeout       = 124
	ExitSetup         = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
	// ExitCPUBudget is 128+SIGXCPU, what a single process gets from
	// RLIMIT_CPU: the tree's budget ends it the same way.
	ExitCPUBudget = 128 + int(unix.SIGXCPU)
)

// Result is how a run ended.
type Result struct {
	Ending   Ending
	ExitCode int
	// Signal is the signal that ended the program, when Ending is signaled.
	Signal syscall.Signal
	// Err is the setup failure or refusal, when there was one.
	Err error
	// Started is true once the program's exec succeeded.
	Started bool
	Wall    time.Duration
	// Cgroup figures, when the run had a cgroup.
	Cgroup *CgroupResult
	// Proxy figures, in the allowlist network mode.
	Proxy *netproxy.Stats
	// Denials counts what the supervisor saw refused.
	Denials DenialCounts
	// Files says whether the run's file denials were observed, when a
	// denial log or a report asked.
	Files *FileDenialsResult
	// WriteBack says, per scratch cache, what --persist-cache wrote back.
	WriteBack []string
}

// CgroupResult is what the run's cgroup saw.
type CgroupResult struct {
	Mode  cgroups.Mode
	Path  string
	Stats cgroups.Stats
}

var discard = slog.New(slog.DiscardHandler)

// withEnv returns env with key set to value (replacing any earlier value).
func withEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+"="+value)
}
