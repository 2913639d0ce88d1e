package rlimit

import (
	"testing"

	"sandbox-executable/policy"
)

func names(ls []Limit) map[string]Limit {
	m := map[string]Limit{}
	for _, l := range ls {
		m[l.Name] = l
	}
	return m
}

func TestFor(t *testing.T) {
	l := policy.Limits{MemoryBytes: 512 << 20, Pids: 64, FileSizeBytes: 1 << 30, CPUSeconds: 60, TimeoutSeconds: 120}
	got := names(For(l, Options{NofileCur: 1024, NofileMax: 4096}))
	if c := got["RLIMIT_CORE"]; c.Cur != 0 || c.Max != 0 {
		t.Errorf("core %+v", c)
	}
	if c := got["RLIMIT_CPU"]; c.Cur != 60 || c.Max != 61 {
		t.Errorf("cpu %+v", c)
	}
	if c := got["RLIMIT_FSIZE"]; c.Cur != 1<<30 || c.Max != 1<<30 {
		t.Errorf("fsize %+v", c)
	}
	if c := got["RLIMIT_NOFILE"]; c.Cur != 1024 || c.Max != 4096 {
		t.Errorf("nofile %+v", c)
	}
	if _, ok := got["RLIMIT_DATA"]; ok {
		t.Errorf("tree limits set without the fallback")
	}
	got = names(For(l, Options{TreeFallback: true}))
	if _, ok := got["RLIMIT_AS"]; ok || got["RLIMIT_DATA"].Cur != 512<<20 || got["RLIMIT_NPROC"].Cur != 64 {
		t.Errorf("fallback %+v", got)
	}
	if _, ok := got["RLIMIT_NOFILE"]; ok {
		t.Errorf("nofile without a known start value")
	}
	// uid 0 is never held to RLIMIT_NPROC: no fallback that does nothing.
	if _, ok := names(For(l, Options{TreeFallback: true, Root: true}))["RLIMIT_NPROC"]; ok {
		t.Errorf("RLIMIT_NPROC named as root's pids fallback")
	}
	got = names(For(policy.Limits{}, Options{NofileCur: Infinity, NofileMax: Infinity}))
	if c := got["RLIMIT_NOFILE"]; c.Cur != maxSaneNofile || c.Max != Infinity {
		t.Errorf("unlimited nofile %+v", c)
	}
	if _, ok := got["RLIMIT_CPU"]; ok {
		t.Errorf("cpu limit without cpu_time_secs")
	}
}
