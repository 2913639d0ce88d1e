// Package dockerlike reproduces around the helper what a default `docker
// run` gives the processes in a container, without Docker: the seccomp
// filter of Docker's default profile (as the engine renders it for the
// container's capabilities), Docker's 14 default capabilities, and a
// non-root user. The integration tests run the helper through Launch.
//
// Profile is this project's own encoding of what Docker's published default
// profile allows (moby's profiles/seccomp/default.json); where a copy of that
// file is present, a unit test checks the encoding against it. The file
// itself is never part of this project.
package dockerlike

// DefaultCaps are the capabilities Docker gives a container's root by
// default (moby's oci/caps defaults); a non-root user in the container
// keeps them in its bounding set only.
var DefaultCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL",
	"CAP_AUDIT_WRITE"}

// Arg is a condition on one argument of a call: Op is "eq", "lt", "gt" or
// "masked_eq" (arg & Value == Value2).
type Arg struct {
	Index  uint
	Op     string
	Value  uint64
	Value2 uint64
}

// Filter says when a Rule is part of the rendered profile: Includes all
// must hold (the container has one of Caps, runs on one of Arches, on a
// kernel of at least MinKernel); any of Excludes keeps it out.
type Filter struct {
	Caps      []string
	Arches    []string
	MinKernel string
}

// Rule is one entry of the profile: the calls it names get Action
// ("allow", or "errno" with Errno) when every Args condition holds.
type Rule struct {
	Names    []string
	Action   string
	Errno    uint
	Args     []Arg
	Includes Filter
	Excludes Filter
}

// DefaultErrno is what every call no rule allows gets: EPERM.
const DefaultErrno = 1

// Profile is Docker's default seccomp profile, rule by rule.
var Profile = []Rule{
	{Action: "allow", Names: []string{
		"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat", "capget", "capset", "chdir",
		"chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64", "clock_getres", "clock_getres_time64",
		"clock_gettime", "clock_gettime64", "clock_nanosleep", "clock_nanosleep_time64", "close", "close_range", "connect",
		"copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old",
		"epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat", "exit",
		"exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate", "fanotify_mark", "fchdir",
		"fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32", "fchownat", "fcntl", "fcntl64", "fdatasync", "fgetxattr",
		"flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs", "fstatfs64",
		"fsync", "ftruncate", "ftruncate64", "futex", "futex_requeue", "futex_time64", "futex_wait", "futex_waitv",
		"futex_wake", "futimesat", "getcpu", "getcwd", "getdents", "getdents64", "getegid", "getegid32", "geteuid",
		"geteuid32", "getgid", "getgid32", "getgroups", "getgroups32", "getitimer", "getpeername", "getpgid", "getpgrp",
		"getpid", "getppid", "getpriority", "getrandom", "getresgid", "getresgid32", "getresuid", "getresuid32",
		"getrlimit", "get_robust_list", "getrusage", "getsid", "getsockname", "getsockopt", "get_thread_area", "gettid",
		"gettimeofday", "getuid", "getuid32", "getxattr", "getxattrat", "inotify_add_watch", "inotify_init",
		"inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy", "io_getevents", "io_pgetevents",
		"io_pgetevents_time64", "ioprio_get", "ioprio_set", "io_setup", "io_submit", "ipc", "kill", "landlock_add_rule",
		"landlock_create_ruleset", "landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link", "linkat", "listen",
		"listmount", "listxattr", "listxattrat", "llistxattr", "_llseek", "lremovexattr", "lseek", "lsetxattr", "lstat",
		"lstat64", "madvise", "map_shadow_stack", "membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir",
		"mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap", "mmap2", "mprotect", "mq_getsetattr",
		"mq_notify", "mq_open", "mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64",
		"mq_unlink", "mremap", "mseal", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
		"name_to_handle_at", "nanosleep", "newfstatat", "_newselect", "open", "openat", "openat2", "pause", "pidfd_open",
		"pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "ppoll_time64",
		"prctl", "pread64", "preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6", "pselect6_time64", "pwrite64",
		"pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv", "recv", "recvfrom", "recvmmsg",
		"recvmmsg_time64", "recvmsg", "remap_file_pages", "removexattr", "removexattrat", "rename", "renameat", "renameat2",
		"restart_syscall", "riscv_hwprobe", "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask",
		"rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64",
		"rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_get_priority_max",
		"sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval", "sched_rr_get_interval_time64",
		"sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
		"semctl", "semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg",
		"sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32", "setgid", "setgid32", "setgroups",
		"setgroups32", "setitimer", "setpgid", "setpriority", "setregid", "setregid32", "setresgid", "setresgid32",
		"setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit", "set_robust_list", "setsid", "setsockopt",
		"set_thread_area", "set_tid_address", "setuid", "setuid32", "setxattr", "setxattrat", "shmat", "shmctl", "shmdt",
		"shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "sigprocmask", "sigreturn", "socketcall",
		"socketpair", "splice", "stat", "stat64", "statfs", "statfs64", "statmount", "statx", "symlink", "symlinkat",
		"sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete",
		"timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create",
		"timerfd_gettime", "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate",
		"truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "uretprobe", "utime", "utimensat",
		"utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", "waitid", "waitpid", "write", "writev",
	}},
	{Action: "allow", Names: []string{"process_vm_readv", "process_vm_writev", "ptrace"}, Includes: Filter{MinKernel: "4.8"}},
	// Every address family but AF_ALG (38) and AF_VSOCK (40).
	{Action: "allow", Names: []string{"socket"}, Args: []Arg{{Index: 0, Op: "lt", Value: 38}}},
	{Action: "allow", Names: []string{"socket"}, Args: []Arg{{Index: 0, Op: "eq", Value: 39}}},
	{Action: "allow", Names: []string{"socket"}, Args: []Arg{{Index: 0, Op: "gt", Value: 40}}},
	// PER_LINUX, UNAME26, PER_LINUX32, PER_LINUX32|UNAME26, and the query.
	{Action: "allow", Names: []string{"personality"}, Args: []Arg{{Index: 0, Op: "eq", Value: 0}}},
	{Action: "allow", Names: []string{"personality"}, Args: []Arg{{Index: 0, Op: "eq", Value: 8}}},
	{Action: "allow", Names: []string{"personality"}, Args: []Arg{{Index: 0, Op: "eq", Value: 0x20000}}},
	{Action: "allow", Names: []string{"personality"}, Args: []Arg{{Index: 0, Op: "eq", Value: 0x20008}}},
	{Action: "allow", Names: []string{"personality"}, Args: []Arg{{Index: 0, Op: "eq", Value: 0xffffffff}}},
	{Action: "allow", Names: []string{"sync_file_range2", "swapcontext"}, Includes: Filter{Arches: []string{"ppc64le"}}},
	{Action: "allow", Names: []string{"arm_fadvise64_64", "arm_sync_file_range", "sync_file_range2", "breakpoint", "cacheflush", "set_tls"},
		Includes: Filter{Arches: []string{"arm", "arm64"}}},
	{Action: "allow", Names: []string{"arch_prctl"}, Includes: Filter{Arches: []string{"amd64", "x32"}}},
	{Action: "allow", Names: []string{"modify_ldt"}, Includes: Filter{Arches: []string{"amd64", "x32", "x86"}}},
	{Action: "allow", Names: []string{"s390_pci_mmio_read", "s390_pci_mmio_write", "s390_runtime_instr"}, Includes: Filter{Arches: []string{"s390", "s390x"}}},
	{Action: "allow", Names: []string{"riscv_flush_icache"}, Includes: Filter{Arches: []string{"riscv64"}}},
	{Action: "allow", Names: []string{"open_by_handle_at"}, Includes: Filter{Caps: []string{"CAP_DAC_READ_SEARCH"}}},
	// With CAP_SYS_ADMIN: namespaces, mounts, and the rest of the
	// administrator's calls.
	{Action: "allow", Names: []string{"bpf", "clone", "clone3", "fanotify_init", "fsconfig", "fsmount", "fsopen", "fspick",
		"lookup_dcookie", "lsm_get_self_attr", "lsm_list_modules", "lsm_set_self_attr", "mount", "mount_setattr", "move_mount",
		"open_tree", "perf_event_open", "quotactl", "quotactl_fd", "setdomainname", "sethostname", "setns", "syslog", "umount",
		"umount2", "unshare"}, Includes: Filter{Caps: []string{"CAP_SYS_ADMIN"}}},
	// Without it: clone with no CLONE_NEW* flag (CLONE_NEWNS, CGROUP,
	// UTS, IPC, USER, PID, NET: 0x7E020000), and clone3, whose flags a
	// filter cannot see, answers ENOSYS so that libc falls back to clone.
	{Action: "allow", Names: []string{"clone"}, Args: []Arg{{Index: 0, Op: "masked_eq", Value: 0x7E020000}},
		Excludes: Filter{Caps: []string{"CAP_SYS_ADMIN"}, Arches: []string{"s390", "s390x"}}},
	{Action: "allow", Names: []string{"clone"}, Args: []Arg{{Index: 1, Op: "masked_eq", Value: 0x7E020000}},
		Includes: Filter{Arches: []string{"s390", "s390x"}}, Excludes: Filter{Caps: []string{"CAP_SYS_ADMIN"}}},
	{Action: "errno", Errno: 38, Names: []string{"clone3"}, Excludes: Filter{Caps: []string{"CAP_SYS_ADMIN"}}},
	{Action: "allow", Names: []string{"reboot"}, Includes: Filter{Caps: []string{"CAP_SYS_BOOT"}}},
	{Action: "allow", Names: []string{"chroot"}, Includes: Filter{Caps: []string{"CAP_SYS_CHROOT"}}},
	{Action: "allow", Names: []string{"delete_module", "init_module", "finit_module"}, Includes: Filter{Caps: []string{"CAP_SYS_MODULE"}}},
	{Action: "allow", Names: []string{"acct"}, Includes: Filter{Caps: []string{"CAP_SYS_PACCT"}}},
	{Action: "allow", Names: []string{"kcmp", "pidfd_getfd", "process_madvise", "process_vm_readv", "process_vm_writev", "ptrace"},
		Includes: Filter{Caps: []string{"CAP_SYS_PTRACE"}}},
	{Action: "allow", Names: []string{"iopl", "ioperm"}, Includes: Filter{Caps: []string{"CAP_SYS_RAWIO"}}},
	{Action: "allow", Names: []string{"settimeofday", "stime", "clock_settime", "clock_settime64"}, Includes: Filter{Caps: []string{"CAP_SYS_TIME"}}},
	{Action: "allow", Names: []string{"vhangup"}, Includes: Filter{Caps: []string{"CAP_SYS_TTY_CONFIG"}}},
	{Action: "allow", Names: []string{"get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node"}, Includes: Filter{Caps: []string{"CAP_SYS_NICE"}}},
	{Action: "allow", Names: []string{"syslog"}, Includes: Filter{Caps: []string{"CAP_SYSLOG"}}},
	{Action: "allow", Names: []string{"bpf"}, Includes: Filter{Caps: []string{"CAP_BPF"}}},
	{Action: "allow", Names: []string{"perf_event_open"}, Includes: Filter{Caps: []string{"CAP_PERFMON"}}},
}
