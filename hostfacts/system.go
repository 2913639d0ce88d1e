package hostfacts

import (
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Everything in this file is doctor's (Diagnosis.System, Status,
// CapLastCap): no run decides from it, so its reads are not recorded
// (fsdeps; the guard test's allowlist says so).

// System are the facts about the machine and this process that only
// doctor shows: the kernel, the signs of a container or of WSL, systemd,
// the root filesystem, the security modules.
type System struct {
	// Kernel is the kernel release (uname -r).
	Kernel string
	// Arch is the machine (uname -m); GoArch the binary's architecture.
	Arch, GoArch string
	// Container says whether this looks like a container, and why.
	Container Container
	// WSL says whether this is Windows Subsystem for Linux.
	WSL WSL
	// Systemd is true when systemd is the running init (/run/systemd/system
	// exists).
	Systemd bool
	// RootFS is the filesystem type of / in this mount namespace.
	RootFS string
	// LSMs are the active Linux security modules
	// (/sys/kernel/security/lsm), nil when that file cannot be read.
	LSMs []string
	// BootLSM is the lsm= value of the kernel command line, empty when
	// there is none.
	BootLSM string
}

// Container lists the signs that this process runs in a container. They
// are hints, not proof: an image built by Docker keeps /.dockerenv when it
// is booted as a VM.
type Container struct {
	// Likely is true when any marker was found.
	Likely bool `json:"likely"`
	// Markers are the signs found (files, pid 1's container= variable,
	// cgroup paths, an overlay root).
	Markers []string `json:"markers,omitempty"`
	// Unreadable are the places that could not be looked at.
	Unreadable []string `json:"unreadable,omitempty"`
}

// WSL describes Windows Subsystem for Linux.
type WSL struct {
	// Detected is true under WSL.
	Detected bool `json:"detected"`
	// Version is 1 or 2 when it can be told from /proc/version, else 0.
	Version int `json:"version,omitempty"`
	// Distro is WSL_DISTRO_NAME.
	Distro string `json:"distro,omitempty"`
	// Signs are what told it: the kernel's release or version string
	// (Microsoft's kernels name themselves "microsoft"), WSL's interop
	// (its binfmt_misc entry, which runs Windows programs), the
	// distribution's name in the environment.
	Signs []string `json:"signs,omitempty"`
}

// env is where the probes read: root prefixes every absolute path, so tests
// can feed a fake /proc, /sys and /run built in a temporary directory.
type env struct {
	root   string
	getenv func(string) string
}

func liveEnv() env { return env{getenv: os.Getenv} }

func (e env) path(p string) string { return e.root + p }

func (e env) read(p string) (string, error) {
	b, err := os.ReadFile(e.path(p))
	return string(b), err
}

func (e env) exists(p string) bool {
	_, err := os.Stat(e.path(p))
	return err == nil
}

// readInt reads a one-number file (a sysctl); ok is false when it is
// absent or not a number.
func (e env) readInt(p string) (int, bool) {
	s, err := e.read(p)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	return v, err == nil
}

// system gathers the facts that come from files.
func (e env) system() System {
	var h System
	if s, err := e.read("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(s)
	}
	h.Container = e.container()
	h.WSL = e.wsl(h.Kernel)
	if fi, err := os.Stat(e.path("/run/systemd/system")); err == nil && fi.IsDir() {
		h.Systemd = true
	}
	if mi, err := e.read("/proc/self/mountinfo"); err == nil {
		h.RootFS = rootFSType(mi)
		if h.RootFS == "overlay" {
			h.Container.Markers = append(h.Container.Markers, "overlay root filesystem")
			h.Container.Likely = true
		}
	}
	if s, err := e.read("/sys/kernel/security/lsm"); err == nil {
		h.LSMs = strings.Split(strings.TrimSpace(s), ",")
	}
	if s, err := e.read("/proc/cmdline"); err == nil {
		h.BootLSM = cmdlineParam(s, "lsm")
	}
	return h
}

// fillSystemLive adds what comes from system calls rather than files.
func fillSystemLive(h *System) {
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		if h.Kernel == "" {
			h.Kernel = unix.ByteSliceToString(u.Release[:])
		}
		h.Arch = unix.ByteSliceToString(u.Machine[:])
	}
	h.GoArch = runtime.GOARCH
}

// wsl looks for the signs of WSL: the kernel's release (osrelease) and
// version, WSL's interop entry in binfmt_misc, WSL_DISTRO_NAME.
func (e env) wsl(release string) WSL {
	v, _ := e.read("/proc/version")
	w := parseWSL(release+" "+v, e.getenv("WSL_DISTRO_NAME"))
	if strings.Contains(strings.ToLower(release), "microsoft") {
		w.Signs = append(w.Signs, "kernel release "+release)
	} else if w.Detected && v != "" && strings.Contains(strings.ToLower(v), "microsoft") {
		w.Signs = append(w.Signs, "/proc/version")
	}
	for _, f := range []string{"/proc/sys/fs/binfmt_misc/WSLInterop", "/proc/sys/fs/binfmt_misc/WSLInterop-late"} {
		if _, err := os.Stat(e.path(f)); err == nil {
			w.Detected = true
			w.Signs = append(w.Signs, "WSL interop ("+f+")")
			break
		}
	}
	if w.Distro != "" {
		w.Signs = append(w.Signs, "WSL_DISTRO_NAME="+w.Distro)
	}
	return w
}

// parseWSL reads /proc/version: WSL 1 reports "...-Microsoft", WSL 2
// "...-microsoft-standard-WSL2".
func parseWSL(version, distro string) WSL {
	lower := strings.ToLower(version)
	w := WSL{Distro: distro}
	switch {
	case strings.Contains(lower, "wsl2") || strings.Contains(lower, "microsoft-standard"):
		w.Detected, w.Version = true, 2
	case strings.Contains(version, "Microsoft"):
		w.Detected, w.Version = true, 1
	case strings.Contains(lower, "microsoft") || strings.Contains(lower, "wsl"):
		w.Detected = true
	}
	if distro != "" {
		w.Detected = true
	}
	return w
}

// containerCgroupHints are cgroup path parts that container runtimes use.
var containerCgroupHints = []string{"docker", "kubepods", "libpod", "containerd", "lxc", "crio", "buildkit", "garden", "actions_job"}

// container looks for container markers.
func (e env) container() Container {
	var c Container
	for _, m := range []struct{ path, what string }{
		{"/.dockerenv", "/.dockerenv (Docker)"},
		{"/run/.containerenv", "/run/.containerenv (Podman)"},
		{"/run/systemd/container", "/run/systemd/container"},
	} {
		if e.exists(m.path) {
			c.Markers = append(c.Markers, m.what)
		}
	}
	if s, err := e.read("/proc/1/environ"); err == nil {
		for kv := range strings.SplitSeq(s, "\x00") {
			if v, ok := strings.CutPrefix(kv, "container="); ok {
				c.Markers = append(c.Markers, "pid 1 environment container="+v)
			}
		}
	} else {
		c.Unreadable = append(c.Unreadable, "/proc/1/environ")
	}
	for _, p := range []string{"/proc/1/cgroup", "/proc/self/cgroup"} {
		s, err := e.read(p)
		if err != nil {
			if p == "/proc/1/cgroup" {
				c.Unreadable = append(c.Unreadable, p)
			}
			continue
		}
		if hint := cgroupHint(s); hint != "" {
			c.Markers = append(c.Markers, p+" path "+hint)
			break
		}
	}
	c.Likely = len(c.Markers) > 0
	return c
}

// cgroupHint returns the first cgroup path of a /proc/<pid>/cgroup text that
// names a container runtime, or "".
func cgroupHint(text string) string {
	for line := range strings.Lines(text) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		for part := range strings.SplitSeq(f[2], "/") {
			for _, h := range containerCgroupHints {
				if strings.HasPrefix(part, h) || strings.HasPrefix(part, "cri-"+h) {
					return f[2]
				}
			}
		}
	}
	return ""
}

// rootFSType returns the filesystem type of the last mount on "/" in a
// mountinfo text.
func rootFSType(mountinfo string) string {
	fstype := ""
	for line := range strings.Lines(mountinfo) {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 && f[4] == "/" {
			if t := strings.Fields(post); len(t) > 0 {
				fstype = t[0]
			}
		}
	}
	return fstype
}

// cmdlineParam returns the value of name= on a kernel command line (the
// last one wins, as in the kernel), or "".
func cmdlineParam(cmdline, name string) string {
	v := ""
	for _, f := range strings.Fields(cmdline) {
		if f == "--" {
			break // the rest is init's
		}
		if s, ok := strings.CutPrefix(f, name+"="); ok {
			v = s
		}
	}
	return v
}

// ProcStatus are the fields of /proc/self/status doctor shows.
type ProcStatus struct {
	// CapEff is the effective capability set; HaveCapEff false when the
	// field was absent or unreadable.
	CapEff     uint64
	HaveCapEff bool
	// NoNewPrivs is 0 or 1, -1 when unknown.
	NoNewPrivs int
	// Seccomp is the seccomp mode (0 none, 1 strict, 2 filter), -1 when the
	// field is absent (a kernel without CONFIG_SECCOMP).
	Seccomp int
	// SeccompFilters is the number of filters attached, -1 when unknown.
	SeccompFilters int
}

// HasCap reports whether capability bit n is in the effective set.
func (s ProcStatus) HasCap(n uint) bool { return s.HaveCapEff && s.CapEff&(1<<n) != 0 }

// ParseStatus parses a /proc/<pid>/status text.
func ParseStatus(text string) ProcStatus {
	s := ProcStatus{NoNewPrivs: -1, Seccomp: -1, SeccompFilters: -1}
	for line := range strings.Lines(text) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "CapEff":
			if v, err := strconv.ParseUint(val, 16, 64); err == nil {
				s.CapEff, s.HaveCapEff = v, true
			}
		case "NoNewPrivs":
			s.NoNewPrivs = atoiOr(val, -1)
		case "Seccomp":
			s.Seccomp = atoiOr(val, -1)
		case "Seccomp_filters":
			s.SeccompFilters = atoiOr(val, -1)
		}
	}
	return s
}

func atoiOr(s string, def int) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return v
}

func (e env) status() ProcStatus {
	s, err := e.read("/proc/self/status")
	if err != nil {
		return ProcStatus{NoNewPrivs: -1, Seccomp: -1, SeccompFilters: -1}
	}
	return ParseStatus(s)
}

// capLastCap is the highest capability the kernel knows, -1 when unknown.
func (e env) capLastCap() int {
	v, ok := e.readInt("/proc/sys/kernel/cap_last_cap")
	if !ok {
		return -1
	}
	return v
}
