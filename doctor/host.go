package doctor

import "sandbox-executable/hostfacts"

// Host are the facts about the machine and this process.
type Host struct {
	// Kernel is the kernel release (uname -r).
	Kernel string `json:"kernel"`
	// Arch is the machine (uname -m); GoArch the binary's architecture.
	Arch   string `json:"arch"`
	GoArch string `json:"goarch"`
	// UID and EUID are this process's real and effective user ids.
	UID  int `json:"uid"`
	EUID int `json:"euid"`
	// Container says whether this looks like a container, and why.
	Container Container `json:"container"`
	// WSL says whether this is Windows Subsystem for Linux.
	WSL WSL `json:"wsl"`
	// Systemd is true when systemd is the running init (/run/systemd/system
	// exists).
	Systemd bool `json:"systemd"`
	// RootFS is the filesystem type of / in this mount namespace.
	RootFS string `json:"root_fs,omitempty"`
	// LSMs are the active Linux security modules
	// (/sys/kernel/security/lsm), nil when that file cannot be read.
	LSMs []string `json:"lsms,omitempty"`
	// BootLSM is the lsm= value of the kernel command line, empty when
	// there is none.
	BootLSM string `json:"boot_lsm,omitempty"`
	// LandlockABI, SeccompMode and CgroupMode repeat, for scripts, the key
	// figures of the items: the Landlock ABI (0: none), this process's
	// seccomp mode (0 none, 1 strict, 2 filter, -1 no seccomp in the
	// kernel) and the cgroup layout.
	LandlockABI int    `json:"landlock_abi"`
	SeccompMode int    `json:"seccomp_mode"`
	CgroupMode  string `json:"cgroup_mode"`
}

// Container lists the signs that this process runs in a container
// (hostfacts.Container).
type Container = hostfacts.Container

// WSL describes Windows Subsystem for Linux (hostfacts.WSL).
type WSL = hostfacts.WSL
