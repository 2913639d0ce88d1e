package policy

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestResolveLimits(t *testing.T) {
	e := newTestEnv(t)
	for _, tt := range []struct {
		name  string
		in    ResourceLimits
		want  Limits
		notes []string
	}{
		{"all zero", ResourceLimits{}, Limits{TimeoutSeconds: 300, TimeoutRule: "timeout_secs 0 means the default, 300 s"}, nil},
		{"moderate", ResourceLimits{MaxMemoryMB: 2048, MaxPids: 256, MaxDiskMB: 4096, CPUTimeSecs: 300, TimeoutSecs: 600},
			Limits{MemoryBytes: 2048 << 20, Pids: 256, FileSizeBytes: 4096 << 20, CPUSeconds: 300, TimeoutSeconds: 600, TimeoutRule: "timeout_secs 600"}, nil},
		{"largest representable", ResourceLimits{MaxMemoryMB: maxMegabytes, MaxDiskMB: maxMegabytes, CPUTimeSecs: 1<<62 - 1, TimeoutSecs: maxTimeoutSecs, MaxPids: pidMaxLimit},
			Limits{MemoryBytes: maxMegabytes << 20, FileSizeBytes: maxMegabytes << 20, CPUSeconds: 1<<62 - 1, Pids: pidMaxLimit,
				TimeoutSeconds: maxTimeoutSecs, TimeoutRule: "timeout_secs 9223372036"}, nil},
		{"pids beyond PID_MAX_LIMIT", ResourceLimits{MaxPids: math.MaxUint32, TimeoutSecs: 1},
			Limits{TimeoutSeconds: 1, TimeoutRule: "timeout_secs 1"},
			[]string{"max_pids 4294967295 is above the kernel's PID_MAX_LIMIT (4194304) and can never be reached, so no pids limit is set."}},
		{"pids just beyond", ResourceLimits{MaxPids: pidMaxLimit + 1},
			Limits{TimeoutSeconds: 300, TimeoutRule: "timeout_secs 0 means the default, 300 s"},
			[]string{"max_pids 4194305 is above the kernel's PID_MAX_LIMIT (4194304) and can never be reached, so no pids limit is set."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := e.input(SandboxPolicy{Kind: KindReadOnly})
			in.Limits = tt.in
			plan := mustResolve(t, in)
			if plan.Limits != tt.want || !reflect.DeepEqual(plan.Notes, tt.notes) {
				t.Fatalf("got %+v %q\nwant %+v %q", plan.Limits, plan.Notes, tt.want, tt.notes)
			}
		})
	}
	if time.Duration(maxTimeoutSecs)*time.Second < 0 {
		t.Fatal("maxTimeoutSecs overflows time.Duration")
	}

	for _, tt := range []struct {
		name string
		from Source
		in   ResourceLimits
		want string
	}{
		{"memory", SourceUnset, ResourceLimits{MaxMemoryMB: maxMegabytes + 1},
			"--resource-limits: max_memory_mb: 8796093022208 MB does not fit in a 64-bit byte count (at most 8796093022207 MB)"},
		{"disk, embedded", SourcePolicy, ResourceLimits{MaxDiskMB: math.MaxUint64},
			"--sandbox-policy: resource_limits.max_disk_mb: 18446744073709551615 MB does not fit in a 64-bit byte count (at most 8796093022207 MB)"},
		{"cpu, policy source", SourcePolicy, ResourceLimits{CPUTimeSecs: 1 << 62},
			"--sandbox-policy: resource_limits.cpu_time_secs: 4611686018427387904 seconds is too large (at most 4611686018427387903)"},
		{"timeout", SourceResourceLimits, ResourceLimits{TimeoutSecs: maxTimeoutSecs + 1},
			"--resource-limits: timeout_secs: 9223372037 seconds is too large (at most 9223372036)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := e.input(SandboxPolicy{Kind: KindReadOnly})
			in.Limits, in.LimitsFrom = tt.in, tt.from
			if got := resolveError(t, in); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
