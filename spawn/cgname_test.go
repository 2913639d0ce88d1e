package spawn

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/procfs"
)

// TestCgroupStale: the runner's reading of its own group names. Names of
// its forms whose supervisor is gone are stale; names of a live
// supervisor, of another pid namespace's, and of any other form are not.
func TestCgroupStale(t *testing.T) {
	st, err := procfs.ReadStat(os.Getpid())
	if err != nil || st.StartTime == 0 {
		t.Fatalf("no start time for this process: %v", err)
	}
	var nsStat unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &nsStat); err != nil {
		t.Fatal(err)
	}
	self, start, ns := strconv.Itoa(os.Getpid()), strconv.FormatUint(st.StartTime, 10), strconv.FormatUint(nsStat.Ino, 10)
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(cmd.Process.Pid)
	if _, err := os.Stat("/proc/" + dead); err == nil {
		t.Skipf("pid %s was reused already", dead)
	}
	const p = "sandbox-executable-"
	for name, want := range map[string]bool{
		p + self + "-" + start + "-" + ns + "-00000000abcd": false,
		p + self + "-" + start + "-00000000abcd":            false,
		p + self + "-00000000abcd":                          false,
		p + self + "-1" + start + "-" + ns + "-abcd":        true, // a reused pid
		p + dead + "-" + start + "-" + ns + "-abcd":         true,
		p + dead + "-" + start + "-abcd":                    true,
		p + dead + "-abcd":                                  true,
		p + dead + "-" + start + "-1-abcd":                  false, // another pid namespace's
		p + "supervisor":                                    false,
		p + dead:                                            false,
		p + dead + "-zz":                                    false,
		p + dead + "-1-2-3-4":                               false,
		p + dead + "-1-x-3":                                 false,
		p + dead + "-1-0-3":                                 false,
		p + dead + "-0-ab":                                  false,
		p + dead + "-":                                      false,
		p + "-1-ab":                                         false,
		p + "+" + dead + "-ab":                              false,
		p + "0-ab":                                          false,
		p + dead + "-11112222333344445-ab":                  true,
		p + dead + "-1-00112233445566778":                   false, // 17 hex digits
		"other-" + dead + "-ab":                             false,
		"sandbox-executable":                                false,
	} {
		if got := CgroupStale(name); got != want {
			t.Errorf("CgroupStale(%q) = %v, want %v", name, got, want)
		}
	}
}
