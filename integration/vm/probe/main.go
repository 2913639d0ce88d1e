// Command probe prints, on one line of key=value pairs, what the kernel it runs
// on offers the sandbox: release, Landlock ABI, cgroup mode and controllers,
// and whether AppArmor mediates user namespaces as Ubuntu's kernel does.
// run-tests.sh runs it once inside the VM guest before the tests; it is also
// harmless on the host.
package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

const (
	sysLandlockCreateRuleset = 444 // same number on every architecture
	landlockCreateRulesetVer = 1   // LANDLOCK_CREATE_RULESET_VERSION
	cgroup2SuperMagic        = 0x63677270
	tmpfsMagic               = 0x01021994
)

func main() {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		fmt.Fprintln(os.Stderr, "probe: uname:", err)
		os.Exit(1)
	}
	release := cString(u.Release[:])

	abi := "none"
	if v, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, landlockCreateRulesetVer); errno == 0 {
		abi = fmt.Sprint(v)
	}

	mode := "unknown"
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err == nil {
		switch st.Type {
		case cgroup2SuperMagic:
			mode = "unified"
		case tmpfsMagic: // v1 hierarchies under a tmpfs, maybe plus unified/
			mode = "legacy"
			if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
				mode = "hybrid"
			}
		}
	}
	controllers := ""
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		controllers = strings.TrimSpace(string(b))
	}
	self := ""
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				self = p
			}
		}
	}
	// Ubuntu's restriction of unprivileged user namespaces (a kernel patch
	// of Ubuntu's), with AppArmor enabled.
	aaUserns := "no"
	if _, err := os.Stat("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil {
		if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil && strings.TrimSpace(string(b)) == "Y" {
			aaUserns = "yes"
		}
	}
	fmt.Printf("kernel=%s landlock_abi=%s cgroup=%s controllers=%q cgroup_self=%s root=%s apparmor_userns=%s\n",
		release, abi, mode, controllers, self, os.Getenv("SE_VM_ROOT"), aaUserns)
}

func cString(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
