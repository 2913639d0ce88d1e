package dockerlike

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Render returns the rules of Profile that apply in a container with caps
// on amd64, as the engine renders the profile before handing it to the
// runtime (this kernel is assumed newer than any MinKernel: 4.8).
func Render(caps []string) []Rule {
	const arch = "amd64"
	has := func(f Filter) (capOK, archOK bool) {
		capOK = slices.ContainsFunc(f.Caps, func(c string) bool { return slices.Contains(caps, c) })
		archOK = slices.Contains(f.Arches, arch)
		return
	}
	var out []Rule
	for _, r := range Profile {
		capOK, archOK := has(r.Includes)
		if len(r.Includes.Caps) > 0 && !capOK || len(r.Includes.Arches) > 0 && !archOK {
			continue
		}
		if capOK, archOK := has(r.Excludes); capOK || archOK {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Load puts the profile rendered for caps on this process, all threads
// (what runc does before it execs a container's first process): every
// call no rule allows answers EPERM. As Docker's default, it does not set
// no_new_privs (the caller needs CAP_SYS_ADMIN for that). unknown lists
// the names this libseccomp cannot resolve on amd64 (they stay refused,
// as runc leaves them).
func Load(caps []string) (unknown []string, err error) {
	f, err := libseccomp.NewFilter(libseccomp.ActErrno.SetReturnCode(DefaultErrno))
	if err != nil {
		return nil, err
	}
	defer f.Release()
	for _, a := range []libseccomp.ScmpArch{libseccomp.ArchX86, libseccomp.ArchX32} {
		if err := f.AddArch(a); err != nil {
			return nil, fmt.Errorf("add arch %v: %w", a, err)
		}
	}
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, err
	}
	ops := map[string]libseccomp.ScmpCompareOp{"eq": libseccomp.CompareEqual, "lt": libseccomp.CompareLess,
		"gt": libseccomp.CompareGreater, "masked_eq": libseccomp.CompareMaskedEqual}
	for _, r := range Render(caps) {
		act := libseccomp.ActAllow
		if r.Action == "errno" {
			act = libseccomp.ActErrno.SetReturnCode(int16(r.Errno))
		}
		var conds []libseccomp.ScmpCondition
		for _, a := range r.Args {
			var c libseccomp.ScmpCondition
			if a.Op == "masked_eq" {
				c, err = libseccomp.MakeCondition(a.Index, ops[a.Op], a.Value, a.Value2)
			} else {
				c, err = libseccomp.MakeCondition(a.Index, ops[a.Op], a.Value)
			}
			if err != nil {
				return nil, err
			}
			conds = append(conds, c)
		}
		for _, name := range r.Names {
			nr, err := libseccomp.GetSyscallFromName(name)
			if err != nil {
				unknown = append(unknown, name)
				continue
			}
			if len(conds) == 0 {
				err = f.AddRule(nr, act)
			} else {
				err = f.AddRuleConditional(nr, act, conds)
			}
			if err != nil {
				return nil, fmt.Errorf("rule for %s: %w", name, err)
			}
		}
	}
	return unknown, f.Load()
}

// capNumbers are the capabilities by name, as capability.h numbers them.
var capNumbers = map[string]int{"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
	"CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_LINUX_IMMUTABLE": 9,
	"CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14,
	"CAP_IPC_OWNER": 15, "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
	"CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23, "CAP_SYS_RESOURCE": 24,
	"CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27, "CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29,
	"CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31, "CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34,
	"CAP_WAKE_ALARM": 35, "CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
	"CAP_CHECKPOINT_RESTORE": 40}

// keepCaps limits this thread's bounding, permitted, effective and
// inheritable sets to caps, as runc sets a container's (the ambient set
// stays empty).
func keepCaps(caps []string) error {
	var mask [2]uint32
	for _, c := range caps {
		n, ok := capNumbers[c]
		if !ok {
			return fmt.Errorf("unknown capability %s", c)
		}
		mask[n/32] |= 1 << (n % 32)
	}
	for n := 0; n <= 63; n++ {
		if mask[n/32]&(1<<(n%32)) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(n), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop %d from the bounding set: %w", n, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: mask[0], Permitted: mask[0]}, {Effective: mask[1], Permitted: mask[1]}}
	return unix.Capset(&hdr, &data[0])
}

// Environment of the launcher (Main).
const (
	// EnvLaunch, set to "1", makes a program that calls Main at its start
	// the launcher.
	EnvLaunch = "SE_DOCKERLIKE"
	// EnvSeccomp "1": load Profile rendered for Docker's default caps.
	EnvSeccomp = "SE_DOCKERLIKE_SECCOMP"
	// EnvCaps "1": keep only DefaultCaps.
	EnvCaps = "SE_DOCKERLIKE_CAPS"
	// EnvUID: become that uid (and gid), as `docker run --user UID:UID`.
	EnvUID = "SE_DOCKERLIKE_UID"
	// EnvCapAdd: capabilities added to the defaults, space-separated, for
	// the filter and the capability sets alike (`docker run --cap-add`).
	EnvCapAdd = "SE_DOCKERLIKE_CAP_ADD"
)

// Main is the launcher: when EnvLaunch is set, it applies what the other
// variables ask, in runc's order (the filter first, while the process
// still has CAP_SYS_ADMIN, then the capabilities, then the user), removes
// its variables and execs os.Args[1:]. It returns only when EnvLaunch is
// not set.
func Main() {
	if os.Getenv(EnvLaunch) != "1" {
		return
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "dockerlike:", err)
		os.Exit(120)
	}
	if len(os.Args) < 2 {
		fail(fmt.Errorf("no program"))
	}
	// Everything below is per thread unless the kernel or libc makes it
	// process-wide; exec happens from this thread.
	runtime.LockOSThread()
	caps := append(slices.Clone(DefaultCaps), strings.Fields(os.Getenv(EnvCapAdd))...)
	if os.Getenv(EnvSeccomp) == "1" {
		if _, err := Load(caps); err != nil {
			fail(fmt.Errorf("seccomp: %w", err))
		}
	}
	uid := -1
	if s := os.Getenv(EnvUID); s != "" {
		var err error
		if uid, err = strconv.Atoi(s); err != nil {
			fail(err)
		}
	}
	if os.Getenv(EnvCaps) == "1" {
		if err := keepCaps(caps); err != nil {
			fail(fmt.Errorf("capabilities: %w", err))
		}
	}
	if uid >= 0 {
		// Process-wide (Go runs these on every thread): the permitted
		// and effective sets go empty with a non-zero uid.
		if err := syscall.Setgroups(nil); err != nil {
			fail(err)
		}
		if err := syscall.Setresgid(uid, uid, uid); err != nil {
			fail(err)
		}
		if err := syscall.Setresuid(uid, uid, uid); err != nil {
			fail(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SE_DOCKERLIKE") {
			env = append(env, kv)
		}
	}
	path := os.Args[1]
	if !strings.Contains(path, "/") {
		if p, err := lookPath(path); err == nil {
			path = p
		}
	}
	fail(syscall.Exec(path, os.Args[1:], env))
}

func lookPath(name string) (string, error) {
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}
