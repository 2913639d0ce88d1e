// Command bench measures sandbox-executable against the bare command and
// against bubblewrap in the same run, and prints ratios. Runs are
// interleaved (bare, bwrap, ours, bare, ...) so that load on a noisy machine
// falls on all of them alike; medians are compared.
//
//	go run ./bench -bin bin/sandbox-executable [-n 200] [startup|denials|files|rss|all]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	bin   = flag.String("bin", "bin/sandbox-executable", "the sandbox-executable binary")
	n     = flag.Int("n", 200, "runs per command")
	probe = flag.String("probe", "", "the static probe (built from integration/probes/probe.c when empty)")
	extra = flag.String("args", "", "extra helper options, space separated (e.g. \"--fs-mode landlock\")")
)

func main() {
	flag.Parse()
	what := flag.Arg(0)
	if what == "" {
		what = "all"
	}
	ws, err := os.MkdirTemp("", "se-bench-ws-")
	check(err)
	defer os.RemoveAll(ws)
	if *probe == "" {
		*probe = filepath.Join(ws, "..", filepath.Base(ws)+"-probe")
		out, err := exec.Command("gcc", "-static", "-O2", "-o", *probe, "integration/probes/probe.c").CombinedOutput()
		if err != nil {
			check(fmt.Errorf("gcc: %v: %s", err, out))
		}
		defer os.Remove(*probe)
	}
	fmt.Printf("sandbox-executable benchmark, %s, %d runs each, %s\n", time.Now().Format(time.RFC3339), *n, hostLine())
	if what == "startup" || what == "all" {
		startup(ws)
	}
	if what == "denials" || what == "all" {
		denials(ws)
	}
	if what == "files" || what == "all" {
		files(ws)
	}
	if what == "rss" || what == "all" {
		rss(ws)
	}
}

// command lines for the three contenders around argv.
func bare(argv ...string) []string { return argv }

func bwrap(ws string, argv ...string) []string {
	return append([]string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", ws, ws, "--unshare-net", "--die-with-parent"}, argv...)
}

func ours(ws string, argv ...string) []string {
	return oursWith(ws, "", nil, argv...)
}

// oursWith runs the helper over ws; sensitive is the policy's
// sensitive_paths JSON ("" for null: VT Code's 25 defaults), opts extra
// helper options.
func oursWith(ws, sensitive string, opts []string, argv ...string) []string {
	if sensitive == "" {
		sensitive = "null"
	}
	pol := fmt.Sprintf(`{"type":"workspace_write","writable_roots":[{"root":%q}],"sensitive_paths":%s,"exclude_slash_tmp":true,"exclude_tmpdir_env_var":true}`, ws, sensitive)
	args := []string{*bin, "--sandbox-policy-cwd", ws, "--sandbox-policy", pol}
	if *extra != "" {
		args = append(args, strings.Fields(*extra)...)
	}
	args = append(args, opts...)
	return append(append(args, "--"), argv...)
}

// measure runs every command line n times, interleaved, and returns the
// median wall time of each.
func measure(cmds [][]string) []time.Duration {
	times := make([][]time.Duration, len(cmds))
	for i := 0; i < *n+5; i++ {
		for j, c := range cmds {
			start := time.Now()
			cmd := exec.Command(c[0], c[1:]...)
			if err := cmd.Run(); err != nil {
				check(fmt.Errorf("%s: %v", strings.Join(c, " "), err))
			}
			if i >= 5 { // warm-up
				times[j] = append(times[j], time.Since(start))
			}
		}
	}
	med := make([]time.Duration, len(cmds))
	for j := range times {
		sort.Slice(times[j], func(a, b int) bool { return times[j][a] < times[j][b] })
		med[j] = times[j][len(times[j])/2]
	}
	return med
}

func startup(ws string) {
	m := measure([][]string{bare("/bin/true"), bwrap(ws, "/bin/true"), ours(ws, "/bin/true")})
	fmt.Printf("\nstartup of /bin/true (median wall time)\n")
	fmt.Printf("  bare                %8s\n", m[0].Round(10*time.Microsecond))
	fmt.Printf("  bubblewrap          %8s   %.2fx bare\n", m[1].Round(10*time.Microsecond), ratio(m[1], m[0]))
	fmt.Printf("  sandbox-executable  %8s   %.2fx bare, %.2fx bubblewrap\n", m[2].Round(10*time.Microsecond), ratio(m[2], m[0]), ratio(m[2], m[1]))
}

// denials: the cost of the default sensitive list (25 paths) in each
// filesystem mode, against the same run with no denials.
func denials(ws string) {
	for _, mode := range []string{"exact", "landlock"} {
		opts := []string{"--fs-mode", mode}
		m := measure([][]string{oursWith(ws, "[]", opts, "/bin/true"), oursWith(ws, "", opts, "/bin/true")})
		fmt.Printf("\nstartup with VT Code's default sensitive list, %s mode (median)\n", mode)
		fmt.Printf("  no denials          %8s\n", m[0].Round(10*time.Microsecond))
		fmt.Printf("  25 denied paths     %8s   %+.2f ms\n", m[1].Round(10*time.Microsecond), float64(m[1]-m[0])/float64(time.Millisecond))
	}
}

func files(ws string) {
	saved := *n
	*n = max(saved/10, 10)
	defer func() { *n = saved }()
	for _, w := range []struct {
		name string
		argv []string
	}{
		{"50k open+close of a file", []string{*probe, "bench-open", "/etc/hostname", "50000"}},
		// /usr/include: a tree that stays in the page cache, so the figure
		// is the cost of the system calls, not of the disk.
		{"200k stat under /usr/include", []string{*probe, "bench-stat", "/usr/include", "200000"}},
	} {
		// /bin/true under each, in the same run, is the start-up to
		// take away: what is left is the work's own cost.
		m := measure([][]string{bare(w.argv...), bwrap(ws, w.argv...), ours(ws, w.argv...),
			bare("/bin/true"), bwrap(ws, "/bin/true"), ours(ws, "/bin/true")})
		fmt.Printf("\n%s (median wall time; ratio of the work alone, start-up taken away)\n", w.name)
		fmt.Printf("  bare                %8s\n", m[0].Round(10*time.Microsecond))
		fmt.Printf("  bubblewrap          %8s   %.3fx bare\n", m[1].Round(10*time.Microsecond), ratio(m[1]-m[4], m[0]-m[3]))
		fmt.Printf("  sandbox-executable  %8s   %.3fx bare\n", m[2].Round(10*time.Microsecond), ratio(m[2]-m[5], m[0]-m[3]))
	}
}

// rss reports the supervisor's resident memory while its program runs.
func rss(ws string) {
	c := ours(ws, "/bin/sleep", "2")
	cmd := exec.Command(c[0], c[1:]...)
	check(cmd.Start())
	time.Sleep(time.Second)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	check(err)
	_ = cmd.Wait()
	var rssKB, pssLine string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			rssKB = strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
		if strings.HasPrefix(l, "RssAnon:") {
			pssLine = strings.TrimSpace(strings.TrimPrefix(l, "RssAnon:"))
		}
	}
	fmt.Printf("\nsupervisor resident memory while the program runs\n  VmRSS %s (anonymous %s)\n", rssKB, pssLine)
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func hostLine() string {
	out, _ := exec.Command("uname", "-r").Output()
	return "kernel " + strings.TrimSpace(string(out)) + ", " + strconv.Itoa(numCPU()) + " CPUs"
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
