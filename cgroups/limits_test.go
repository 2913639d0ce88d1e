package cgroups

import (
	"reflect"
	"testing"
)

func TestLimitWrites(t *testing.T) {
	lim := Limits{MemoryBytes: 256 << 20, Pids: 64, CPUQuotaCores: 1.5}
	all := []string{"memory", "pids", "cpu"}
	for _, tc := range []struct {
		name  string
		got   []limitWrite
		wants []limitWrite
	}{
		{"v2, all three", v2Writes(lim, all), []limitWrite{
			{"memory.max", "268435456", mustExist},
			{"memory.swap.max", "0", swapAccount},
			{"memory.oom.group", "1", mayMiss},
			{"pids.max", "64", mustExist},
			{"cpu.max", "150000 100000", mustExist},
		}},
		{"v1, all three", v1Writes(lim, all), []limitWrite{
			{"memory.limit_in_bytes", "268435456", mustExist},
			{"memory.memsw.limit_in_bytes", "268435456", swapAccount},
			{"pids.max", "64", mustExist},
			{"cpu.cfs_period_us", "100000", mustExist},
			{"cpu.cfs_quota_us", "150000", mustExist},
		}},
		{"v2, pids only", v2Writes(lim, []string{"pids"}), []limitWrite{{"pids.max", "64", mustExist}}},
		{"v1, a tiny CPU share is the kernel's 1 ms", v1Writes(Limits{CPUQuotaCores: 0.001}, []string{"cpu"}), []limitWrite{
			{"cpu.cfs_period_us", "100000", mustExist},
			{"cpu.cfs_quota_us", "1000", mustExist},
		}},
		{"v2, no controllers", v2Writes(lim, nil), nil},
		{"v1, freezer and cpuacct set nothing", v1Writes(lim, []string{"freezer", "cpuacct"}), nil},
	} {
		if !reflect.DeepEqual(tc.got, tc.wants) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, tc.got, tc.wants)
		}
	}
}
