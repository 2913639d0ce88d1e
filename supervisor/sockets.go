package supervisor

import (
	"os"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbox-executable/landlock"
	"sandbox-executable/policy"
	"sandbox-executable/seccomp"
	"sandbox-executable/sockmed"
)

// How daemons' unix sockets are kept out of reach (socketChoice.how).
const (
	// socketsByLandlock: Landlock (ABI 9) handles resolve_unix, granted
	// only beneath the writable roots; the kernel checks every connect and
	// send in the program itself.
	socketsByLandlock = "landlock"
	// socketsMediated: the filter sends the socket calls to the
	// supervisor, which carries them out (package sockmed).
	socketsMediated = "mediated"
	// socketsDenied: no socket(AF_UNIX) at all.
	socketsDenied = "denied"
)

// socketChoice is how a run keeps daemons' unix sockets out of reach.
type socketChoice struct {
	how      string
	abstract sockmed.AbstractMode
	// landlock: resolve_unix is handled too (ABI 9), under mediation a
	// second layer should a call reach the kernel from the program itself.
	landlock bool
}

// chooseSockets decides it: mediation where the program has an init (the
// seccomp listener then reaches the supervisor without the program's own
// sendmsg) and the kernel has what mediation needs, with Landlock's
// resolve_unix (ABI 9) underneath where the kernel has it; else Landlock
// alone (ABI 9); else no unix sockets but socketpair's. Mediation comes
// first: Landlock grants a socket by where its name is, so a hard link to a
// daemon's socket made inside a writable root would be reached, and its
// refusals are not recorded.
func chooseSockets(abi int, isolated, netns bool) socketChoice {
	resolve := landlock.Supports(abi, landlock.FeatUnixSocket)
	switch {
	case isolated && mediationWorks():
		c := socketChoice{how: socketsMediated, abstract: sockmed.AbstractOwned, landlock: resolve}
		if netns {
			c.abstract = sockmed.AbstractDirect
		}
		return c
	case resolve:
		return socketChoice{how: socketsByLandlock, landlock: true}
	}
	return socketChoice{how: socketsDenied}
}

var (
	mediationOnce sync.Once
	mediationOK   bool
)

// mediationWorks reports whether this kernel (and whatever filter the
// helper itself runs under) lets the supervisor take a process's socket
// (pidfd_open, pidfd_getfd, 5.6), read its memory and resolve paths in its
// root (openat2 RESOLVE_IN_ROOT, 5.6).
func mediationWorks() bool {
	mediationOnce.Do(func() {
		// Yama's ptrace_scope 2 keeps pidfd_getfd and process_vm_readv
		// to CAP_SYS_PTRACE, 3 from everyone: every call would then be
		// refused (the supervisor is the program's ancestor, which scope
		// 1 allows).
		if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
			if v := strings.TrimSpace(string(b)); v == "3" || (v == "2" && os.Geteuid() != 0) {
				return
			}
		}
		pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
		if err != nil {
			return
		}
		defer unix.Close(pidfd)
		fd, err := unix.PidfdGetfd(pidfd, pidfd, 0)
		if err != nil {
			return
		}
		unix.Close(fd)
		fd, err = unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return
		}
		unix.Close(fd)
		src, dst := [1]byte{1}, [1]byte{}
		_, err = unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: &dst[0], Len: 1}}, []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 1}}, 0)
		mediationOK = err == nil && dst[0] == 1
	})
	return mediationOK
}

// mediationRules are the filter's rules that send the socket calls to the
// supervisor, given the Plan's rules: a call the Plan already denies
// without condition stays denied (no rule); a call the Plan only logs
// (log_only) is mediated instead, and its log rule is returned in dropped.
// sendto goes to the supervisor only with an address (argument 4): without
// one it sends to the socket's peer, which a mediated connect chose.
func mediationRules(plan []policy.SyscallRule) (rules []policy.SyscallRule, dropped []int) {
	for _, name := range sockmed.Syscalls {
		denied := false
		for i, r := range plan {
			if r.Syscall != name {
				continue
			}
			if r.Action == policy.ActionLog && len(r.Args) == 0 {
				dropped = append(dropped, i)
				continue
			}
			denied = true
		}
		if denied {
			continue
		}
		rule := policy.SyscallRule{Syscall: name, Action: seccomp.ActionMediate,
			Why: "carried out by the supervisor: a pathname unix socket is reached only inside the writable roots"}
		if name == "sendto" {
			rule.Args = []policy.ArgCondition{{Index: 4, Op: "ne", Value: 0}}
		}
		rules = append(rules, rule)
	}
	return rules, dropped
}

// withoutRules returns rules without the ones at the indices drop.
func withoutRules(rules []policy.SyscallRule, drop []int) []policy.SyscallRule {
	out := make([]policy.SyscallRule, 0, len(rules))
	for i, r := range rules {
		if !slices.Contains(drop, i) {
			out = append(out, r)
		}
	}
	return out
}

// mediatorConfig is the mediation policy of a run: sockets may be reached
// beneath the writable roots and the private temp dir (tmp, "" for none),
// except beneath the denied paths; TCP connect keeps Landlock's port rule.
func (s *session) mediatorConfig(tmp string) sockmed.Config {
	p := s.pr.Plan
	// As a child subreaper the supervisor's descendants are exactly the
	// sandbox's processes.
	self := os.Getpid()
	c := sockmed.Config{Abstract: s.pr.sockets.abstract, Members: func() []int { return descendants(self) }, OnDenial: s.denials.fromSockets,
		CheckMode: os.Geteuid() == 0, UID: os.Getuid(), GIDs: []int{os.Getgid()}}
	for _, r := range p.Filesystem.WritableRoots {
		c.Roots = append(c.Roots, r.Path)
	}
	if tmp != "" {
		c.Roots = append(c.Roots, tmp)
	}
	for _, d := range p.Filesystem.WriteDenied {
		c.Denied = append(c.Denied, d.Path)
	}
	for _, d := range p.Filesystem.ReadDenied {
		c.Denied = append(c.Denied, d.Path)
	}
	if gs, err := os.Getgroups(); err == nil {
		c.GIDs = append(c.GIDs, gs...)
	}
	if s.spec.HandledNet&unix.LANDLOCK_ACCESS_NET_CONNECT_TCP != 0 {
		c.TCPRestricted, c.TCPPorts = true, s.spec.Ports
	}
	c.UDPDenied = s.spec.HandledNet&unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP != 0
	return c
}
