package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the programs the real tests run inside groups:
// with CGROUPS_TEST_HELPER set it first writes "0" to the inherited v1
// cgroup.procs fds (3 .. 3+CGROUPS_TEST_NJOIN-1), as the real sandbox child
// does before exec, then does what the helper name says.
const (
	envHelper = "CGROUPS_TEST_HELPER"
	envNJoin  = "CGROUPS_TEST_NJOIN"
)

func TestMain(m *testing.M) {
	if h := os.Getenv(envHelper); h != "" {
		os.Exit(helperMain(h))
	}
	code := m.Run()
	if code == 0 && os.Geteuid() == 0 {
		if left := leftovers(); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "cgroups: the tests left cgroups behind:", left)
			code = 1
		}
	}
	os.Exit(code)
}

// leftovers lists groups named after this test process in the default
// parents.
func leftovers() []string {
	h, err := Detect()
	if err != nil {
		return nil
	}
	pid, _, _ := selfID()
	var parents []string
	if h.V2 != nil {
		if p, err := PlaceV2(h.V2, "", os.Geteuid()); err == nil {
			parents = append(parents, p.Parent)
		}
	}
	for i := range h.V1 {
		if p, err := h.V1[i].Dir(h.V1[i].Own); err == nil {
			parents = append(parents, p)
		}
	}
	var left []string
	for _, p := range parents {
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if n, ok := parseName(e.Name()); ok && n.pid == pid {
				left = append(left, p+"/"+e.Name())
			}
		}
	}
	return left
}

func helperMain(name string) int {
	n, _ := strconv.Atoi(os.Getenv(envNJoin))
	for fd := 3; fd < 3+n; fd++ {
		// A join fd is a v1 tasks file, for the spawn stage's single
		// thread; this helper is a Go process with several threads
		// already, so it joins through the cgroup.procs beside it.
		tasks, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err == nil {
			err = os.WriteFile(filepath.Join(filepath.Dir(tasks), "cgroup.procs"), []byte("0"), 0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper: join fd", fd, err)
			return 3
		}
		syscall.Close(fd)
	}
	args := os.Args[1:]
	switch name {
	case "exec": // exec args
		err := syscall.Exec(args[0], args, os.Environ())
		fmt.Fprintln(os.Stderr, "helper: exec:", err)
		return 3
	case "hog": // allocate and touch 300 MB
		return hog()
	case "oomparent": // argv carries the tag: run an oomchild, say when and how it ended, then sleep
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 3
		}
		c := exec.Command(exe)
		c.Env = append(os.Environ(), envHelper+"=oomchild", envNJoin+"=0")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		err = c.Run()
		fmt.Printf("child ended %d %v\n", time.Now().UnixNano(), err)
		time.Sleep(1000 * time.Second)
		return 0
	case "oomchild": // the OOM killer's first choice (oom_score_adj 1000), then hog
		if err := os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 3
		}
		return hog()
	case "nestedhog": // wait (10 s at most) to be moved into a cgroup named oom-nested, then hog
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			b, _ := os.ReadFile("/proc/self/cgroup")
			if strings.Contains(string(b), "/oom-nested\n") {
				break
			}
			if time.Now().After(end) {
				fmt.Fprintf(os.Stderr, "helper: not moved into oom-nested:\n%s", b)
				return 3
			}
		}
		return hog()
	case "spin": // burn the given CPU time (not wall time: the host may be busy)
		d, _ := time.ParseDuration(args[0])
		x := 0
		for cpuTime() < d {
			for i := 0; i < 100000; i++ {
				x += i
			}
		}
		fmt.Println("spun", x)
		return 0
	// The tag goes only to the sleeper: "a"+tag to this one, "m"+tag to
	// the middle one.
	case "orphan": // start a setsid'd tagged sleeper through a short-lived middle process, then sleep
		if err := startSelf("middle", true, "m"+args[0][1:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 3
		}
		time.Sleep(1000 * time.Second)
		return 0
	case "middle": // start the tagged sleeper and exit at once, orphaning it
		if err := startSelf("sleep", true, args[0][1:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 3
		}
		return 0
	case "sleep": // argv carries the tag
		time.Sleep(1000 * time.Second)
		return 0
	case "delegated":
		return delegatedHelper(args)
	}
	fmt.Fprintln(os.Stderr, "helper: unknown", name)
	return 3
}

// hog allocates and touches 300 MB.
func hog() int {
	fmt.Println("allocating")
	b := make([]byte, 300<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	fmt.Println("survived", len(b))
	return 0
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startSelf(helper string, setsid bool, args ...string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), envHelper+"="+helper, envNJoin+"=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	return cmd.Start()
}

// delegatedHelper runs as an unprivileged user inside a cgroup delegated to
// it (args[0] is that cgroup's directory) and reports what New did, one
// line per check, on stdout.
func delegatedHelper(args []string) int {
	h, err := Detect()
	if err != nil {
		fmt.Println("detect:", err)
		return 1
	}
	deleg := args[0]
	fail := func(f string, a ...any) int { fmt.Printf("FAIL "+f+"\n", a...); return 1 }

	// Without limits (hybrid: nothing needs a controller) the group is a
	// plain child of the delegated cgroup.
	lim := Limits{}
	if h.Mode == Unified {
		lim = Limits{MemoryBytes: 64 << 20, Pids: 16}
	}
	if h.Mode == Unified {
		// Without MoveSelf the caller's process stays where it is: the
		// delegated cgroup cannot enable controllers while it holds it.
		before, _ := os.ReadFile("/proc/self/cgroup")
		_, err := New(h, lim, Options{})
		after, _ := os.ReadFile("/proc/self/cgroup")
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Advice != AdviseAlone || string(before) != string(after) {
			return fail("New without MoveSelf: %v, moved from %q to %q", err, before, after)
		}
		fmt.Println("ok not moved without MoveSelf")
	}
	g, err := New(h, lim, Options{MoveSelf: true})
	if err != nil {
		return fail("New(%+v): %v", lim, err)
	}
	defer g.Remove()
	if !strings.HasPrefix(g.Path(), deleg+"/"+NamePrefix) {
		return fail("group %s is not inside %s", g.Path(), deleg)
	}
	fmt.Println("ok group", g.Path())
	if h.Mode == Unified {
		// The supervisor moved itself into a leaf so deleg could enable
		// the controllers for its groups.
		own, _ := os.ReadFile("/proc/self/cgroup")
		if !strings.HasSuffix(strings.TrimSpace(string(own)), "/"+SupervisorLeaf) {
			return fail("not moved into the leaf: %s", own)
		}
		if b, _ := os.ReadFile(g.Path() + "/pids.max"); strings.TrimSpace(string(b)) != "16" {
			return fail("pids.max = %q", b)
		}
		fmt.Println("ok moved to leaf and limited")
		// A second group reuses the leaf (a later Detect sees the leaf as
		// its own cgroup).
		h2, _ := Detect()
		g2, err := New(h2, lim, Options{MoveSelf: true})
		if err != nil {
			return fail("second New: %v", err)
		}
		if !strings.HasPrefix(g2.Path(), deleg+"/"+NamePrefix) {
			return fail("second group %s is not inside %s", g2.Path(), deleg)
		}
		if err := g2.Remove(); err != nil {
			return fail("second Remove: %v", err)
		}
		fmt.Println("ok second group")
	}
	if h.Mode == Hybrid {
		// The v1 pids hierarchy is not delegated: an honest error.
		_, err := New(h, Limits{Pids: 16}, Options{})
		var ue *UnavailableError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "Delegate=yes") && !strings.Contains(err.Error(), "run as root") {
			return fail("v1 limit as non-root: %v", err)
		}
		fmt.Println("ok unavailable:", err)
	}
	if err := g.Remove(); err != nil {
		return fail("Remove: %v", err)
	}
	fmt.Println("ok removed")
	return 0
}
