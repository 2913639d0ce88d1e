// Command bench measures sandbox-executable against the bare command and
// against bubblewrap in the same run and prints one table: for the start-up
// of /bin/true and for each work item, the min, median and 90th percentile
// wall time of each contender, and ratios taken pair by pair (round by
// round, every contender once per round, in an order shuffled from round
// to round), so that load on a noisy machine falls on all of them alike.
//
//	go run ./bench -bin bin/sandbox-executable -probe bin/probe [-n 100] [-work LIST] [table|startup|split|denials|rss|all]
//
// table (the default) is start-up and the work items; split runs the file
// work under a seccomp filter only, Landlock only and both, without the
// supervisor (the floor the kernel sets); all is everything.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	bin        = flag.String("bin", "bin/sandbox-executable", "the sandbox-executable binary")
	n          = flag.Int("n", 100, "start-up rounds; the work items take fewer (see -work)")
	probe      = flag.String("probe", "", "the static probe (built from integration/probes/probe.c when empty)")
	extra      = flag.String("args", "", "extra helper options, space separated (e.g. \"--fs-mode landlock\")")
	work       = flag.String("work", "open,stat,gobuild,gitstatus,npmci,npmtop,compileall", "work items, comma separated (\"\" for none)")
	scale      = flag.Float64("scale", 1, "multiplies every work item's rounds")
	noBw       = flag.Bool("no-bwrap", false, "leave bubblewrap out (where it cannot run)")
	staticTrue = flag.Bool("static-true", false, "start the static probe doing nothing instead of /bin/true (where a dynamic exec is slow: the VM guest's 9p root)")
	vsBin      = flag.String("vs", "", "another sandbox-executable binary (an earlier build) as one more contender, \"before\"")
	vsCold     = flag.Bool("vs-cold", false, "with -vs and -cold: the earlier build with the warm path off too, \"before-cold\"")
	landlockC  = flag.Bool("landlock", true, "one more contender, \"landlock\": the helper in Landlock-only mode (--fs-mode landlock), whose writable root's top level the supervisor mediates")
	cold       = flag.Bool("cold", false, "one more contender, \"cold\": the helper with the warm path off ("+warmOff+"=off), every run decided by Go")
	first      = flag.Bool("first", false, "one more contender, \"first\": the helper with the warm path on and an invocation new each run (its environment says which), every run an invocation's first: decided by Go and stored (with -vs, \"before-first\" too)")
	deciderC   = flag.Bool("decider", false, "one more contender, \"first-decider\": as \"first\", every run an invocation's first, but with a resident decider (sandbox-executable decider, started by the bench with the binary of -bin) to ask: its runs carry out the recipe it stores (with -vs, \"before-first-decider\" too, against a decider of that binary)")
	homeNew    = flag.Bool("home-new", false, "one more contender, \"home-new\": the helper with the warm path on and a HOME of its own that gains an entry before each run, as a user's does (with -vs, \"before-home-new\" too); for the start-up rows (-work \"\"): the work items' own HOME would be replaced")
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "confine" {
		confineMain(os.Args[2:]) // re-executed by split; never returns
	}
	flag.Parse()
	what := flag.Arg(0)
	if what == "" {
		what = "table"
	}
	// The items' HOME holds the workspace, as a user's does
	// (~/project), in a directory of the run's own outside /tmp: the
	// helper grants the entries of every directory above a secret that
	// does not exist yet one by one (a secret made there during the run
	// stays unreadable), and a shared /tmp's hundreds of entries would
	// be the benchmark's, not a user's. HOME is never inside the
	// workspace: each of the default secrets under it would then be a
	// placeholder the helper makes and removes on every run.
	base, err := os.MkdirTemp("/var/tmp", "se-bench-")
	check(err)
	base, err = filepath.EvalSymlinks(base)
	check(err)
	defer os.RemoveAll(base)
	defer stopDeciders()
	home = filepath.Join(base, "home")
	ws := filepath.Join(home, "project")
	check(os.MkdirAll(ws, 0o755))
	if *probe == "" {
		*probe = filepath.Join(ws, "probe")
		out, err := exec.Command("gcc", "-static", "-O2", "-o", *probe, "integration/probes/probe.c").CombinedOutput()
		if err != nil {
			check(fmt.Errorf("gcc: %v: %s", err, out))
		}
	}
	if _, err := exec.LookPath("bwrap"); err != nil && !*noBw {
		fmt.Fprintln(os.Stderr, "bench: no bwrap on PATH: bubblewrap left out")
		*noBw = true
	}
	// Work items run in directories of their own: every path absolute.
	for _, p := range []*string{bin, probe, vsBin} {
		if *p != "" && strings.Contains(*p, "/") {
			abs, err := filepath.Abs(*p)
			check(err)
			*p = abs
		}
	}
	fmt.Printf("sandbox-executable benchmark, %s, %s\n", time.Now().UTC().Format(time.RFC3339), hostLine())
	switch what {
	case "table":
		table(ws)
	case "startup":
		*work = ""
		table(ws)
	case "split":
		split(ws)
	case "denials":
		denials(ws)
	case "rss":
		rss(ws)
	case "all":
		table(ws)
		split(ws)
		denials(ws)
		rss(ws)
	default:
		check(fmt.Errorf("unknown benchmark %q (table, startup, split, denials, rss, all)", what))
	}
}

// warmOff turns the helper's warm path off (spawn.WarmOff).
const warmOff = "SANDBOX_EXECUTABLE_WARM"

// contender is one way of running a command line, with env added to the
// item's environment.
type contender struct {
	name string
	wrap func(argv []string) []string
	env  []string
	// fresh makes each run a new invocation of the helper: one more
	// variable in its environment, another value each time.
	fresh bool
	// prepare, when set, runs before each of its runs, untimed.
	prepare func()
}

// freshRuns counts the runs made new invocations (contender.fresh).
var freshRuns int

// environ is what c adds to an item's environment env, for one run.
func (c contender) environ(env []string) []string {
	env = append(slices.Clip(env), c.env...)
	if c.fresh {
		freshRuns++
		env = append(env, fmt.Sprintf("SE_BENCH_INVOCATION=%d-%d", os.Getpid(), freshRuns))
	}
	return env
}

func contenders(ws string) []contender {
	now := func(a []string) []string { return ours(ws, a...) }
	// before is the helper of -vs, run as now is.
	before := func(a []string) []string {
		o := ours(ws, a...)
		o[0] = *vsBin
		return o
	}
	cs := []contender{{name: "bare", wrap: func(a []string) []string { return a }}}
	if !*noBw {
		cs = append(cs, contender{name: "bubblewrap", wrap: func(a []string) []string { return bwrap(ws, a...) }})
	}
	cs = append(cs, contender{name: "sandbox-executable", wrap: now})
	if *landlockC {
		cs = append(cs, contender{name: "landlock", wrap: func(a []string) []string { return oursWith(ws, "", []string{"--fs-mode", "landlock"}, a...) }})
	}
	if *cold {
		cs = append(cs, contender{name: "cold", wrap: now, env: []string{warmOff + "=off"}})
	}
	if *vsBin != "" {
		cs = append(cs, contender{name: "before", wrap: before})
		if *vsCold && *cold {
			cs = append(cs, contender{name: "before-cold", wrap: before, env: []string{warmOff + "=off"}})
		}
	}
	if *first {
		cs = append(cs, contender{name: "first", wrap: now, fresh: true})
		if *vsBin != "" {
			cs = append(cs, contender{name: "before-first", wrap: before, fresh: true})
		}
	}
	if *deciderC {
		cs = append(cs, contender{name: "first-decider", wrap: now, fresh: true, env: []string{startDecider(*bin, "now")}})
		if *vsBin != "" {
			cs = append(cs, contender{name: "before-first-decider", wrap: before, fresh: true, env: []string{startDecider(*vsBin, "before")}})
		}
	}
	if *homeNew {
		// A HOME beside the items', so that its new entries change
		// nothing the other contenders' decisions read. Each run's
		// entry replaces the one before, so it does not grow.
		own := filepath.Join(filepath.Dir(home), "home-new")
		check(os.MkdirAll(own, 0o755))
		n := 0
		gain := func() {
			n++
			check(os.WriteFile(filepath.Join(own, fmt.Sprintf(".entry-%d", n)), nil, 0o644))
			check(os.RemoveAll(filepath.Join(own, fmt.Sprintf(".entry-%d", n-1))))
		}
		env := []string{"HOME=" + own}
		cs = append(cs, contender{name: "home-new", wrap: now, env: env, prepare: gain})
		if *vsBin != "" {
			cs = append(cs, contender{name: "before-home-new", wrap: before, env: env, prepare: gain})
		}
	}
	return cs
}

// deciders are the resident deciders the bench started, stopped as it ends.
var deciders []*exec.Cmd

// startDecider starts a resident decider of the helper binary bin, and
// returns the environment entry that has a run ask it.
func startDecider(bin, name string) string {
	sock := filepath.Join(filepath.Dir(home), "decider-"+name+".sock")
	cmd := exec.Command(bin, "decider", sock)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	deciders = append(deciders, cmd)
	listening := false
	for i := 0; i < 100 && !listening; i++ {
		_, err := os.Stat(sock)
		if listening = err == nil; !listening {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !listening {
		fmt.Fprintf(os.Stderr, "bench: %s started no decider (a build from before it?): its runs ask nothing\n", bin)
	}
	return "SANDBOX_EXECUTABLE_DECIDER=" + sock
}

// stopDeciders stops the deciders startDecider started.
func stopDeciders() {
	for _, c := range deciders {
		_ = c.Process.Signal(syscall.SIGTERM)
		_ = c.Wait()
	}
}

func bwrap(ws string, argv ...string) []string {
	return append([]string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", ws, ws, "--unshare-net", "--die-with-parent"}, argv...)
}

func ours(ws string, argv ...string) []string {
	return oursWith(ws, "", nil, argv...)
}

// oursWith runs the helper over ws (VT Code's workspace_write launch: the
// workspace writable, no network); sensitive is the policy's
// sensitive_paths JSON ("" for null: VT Code's 25 defaults), opts extra
// helper options.
func oursWith(ws, sensitive string, opts []string, argv ...string) []string {
	if sensitive == "" {
		sensitive = "null"
	}
	if itemRoot != "" {
		ws = itemRoot
	}
	pol := fmt.Sprintf(`{"type":"workspace_write","writable_roots":[{"root":%q}],"sensitive_paths":%s,"exclude_slash_tmp":true,"exclude_tmpdir_env_var":true}`, ws, sensitive)
	args := []string{*bin, "--sandbox-policy-cwd", ws, "--sandbox-policy", pol}
	if readOnlyLaunch {
		args = append(args[:3], readOnlyArgs...)
	}
	if *extra != "" {
		args = append(args, strings.Fields(*extra)...)
	}
	args = append(args, opts...)
	return append(append(args, "--"), argv...)
}

// readOnlyLaunch makes oursWith VT Code's read_only launch (its policy,
// seccomp profile and conservative limits, as the caller serializes them:
// ../shared/contract/fixtures/invocation-read_only-pipe.json), the launch
// the first figures were measured with; the table's start-up rows
// give both. Set by measure for an item's rounds.
var readOnlyLaunch bool

// itemRoot, when set, is the writable root of the helper's launch instead
// of the workspace (an item whose work is at its root's top level). Set by
// measure for an item's rounds.
var itemRoot string

var readOnlyArgs = []string{"--sandbox-policy", `{"type":"read_only","network_access":false,"network_allowlist":[]}`,
	"--seccomp-profile", `{"blocked_syscalls":["ptrace","mount","umount","umount2","init_module","finit_module","delete_module","kexec_load","kexec_file_load","bpf","perf_event_open","userfaultfd","process_vm_readv","process_vm_writev","reboot","swapon","swapoff","settimeofday","clock_settime","adjtimex","add_key","request_key","keyctl","ioperm","iopl","iopl","acct","quotactl","unshare","setns","personality"],"allow_namespaces":false,"allow_network_sockets":false,"log_only":false}`,
	"--resource-limits", `{"max_memory_mb":512,"max_pids":64,"max_disk_mb":1024,"cpu_time_secs":60,"timeout_secs":120}`}

// item is one row of the table: argv run under each contender.
type item struct {
	name   string
	argv   []string
	dir    string
	env    []string
	rounds int
	// readOnly runs the helper with VT Code's read_only launch instead of
	// its workspace_write one (see readOnlyLaunch).
	readOnly bool
	// root is the helper's writable root instead of the workspace (see
	// itemRoot).
	root string
	// net: the start-up (/bin/true under the same contender, in the same
	// round) is taken away, so the ratio is the work's own.
	net bool
	// alone: the ratio is given both ways, with the start-up (what a user
	// waits for) and without it (the work's own, as for net).
	alone bool
}

// sample is one round's wall times: by contender, the work and (for a net
// item) /bin/true.
type sample struct{ work, base []time.Duration }

// run runs argv once and returns its wall time.
func run(argv []string, dir string, env []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, lastLine(out))
	}
	return d, nil
}

// measure runs it under every contender, round by round, after warm-up
// rounds, in an order shuffled in each round: every contender follows each
// of the others about as often. (A rotated order made each contender
// follow the same one nearly every time, and a run leaves work the kernel
// finishes after its exit, a namespace's teardown or a freed block's
// discard, that falls on whoever runs next: in one set of runs here two
// builds of the helper, swapped between -bin and -vs, differed by
// 0.15-0.3 ms depending on their places; in another, not at all.)
// The shuffle's seed is fixed, so that a run's order can be repeated.
// A failed run ends the item.
func measure(cs []contender, it item) ([]sample, error) {
	warm := 2
	if it.rounds >= 50 {
		warm = 5
	}
	readOnlyLaunch, itemRoot = it.readOnly, it.root
	defer func() { readOnlyLaunch, itemRoot = false, "" }()
	var out []sample
	order := rand.New(rand.NewPCG(1, uint64(it.rounds)))
	for r := 0; r < warm+it.rounds; r++ {
		s := sample{work: make([]time.Duration, len(cs)), base: make([]time.Duration, len(cs))}
		for _, j := range order.Perm(len(cs)) {
			var err error
			if cs[j].prepare != nil {
				cs[j].prepare()
			}
			if it.net || it.alone {
				if s.base[j], err = run(cs[j].wrap(trueArgv()), it.dir, cs[j].environ(it.env)); err != nil {
					return nil, fmt.Errorf("%s: %w", cs[j].name, err)
				}
			}
			if cs[j].prepare != nil && (it.net || it.alone) {
				cs[j].prepare()
			}
			if s.work[j], err = run(cs[j].wrap(it.argv), it.dir, cs[j].environ(it.env)); err != nil {
				return nil, fmt.Errorf("%s: %w", cs[j].name, err)
			}
		}
		if r >= warm {
			out = append(out, s)
		}
	}
	return out, nil
}

// stats are min, median and 90th percentile.
type stats struct{ min, med, p90 float64 }

func summarize(xs []float64) stats {
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s) == 0 {
		return stats{}
	}
	return stats{s[0], s[len(s)/2], s[min(len(s)-1, (len(s)*9+9)/10-1)]}
}

// startupRows are the table's first rows, the start-ups, whose ratios
// compare overheads over bare.
const startupRows = 2

func table(ws string) {
	cs := contenders(ws)
	items := []item{{name: "start-up of " + trueName(), argv: trueArgv(), rounds: *n},
		{name: "start-up, read_only launch", argv: trueArgv(), rounds: *n, readOnly: true}}
	for _, w := range strings.Split(*work, ",") {
		if w = strings.TrimSpace(w); w == "" {
			continue
		}
		it, ok := workItem(ws, w)
		if !ok {
			continue
		}
		it.rounds = max(2, int(float64(it.rounds)**scale))
		items = append(items, it)
	}
	fmt.Printf("\nwall time, ms: min / median / p90 over the rounds; ratios pair by pair (median, p90)\n")
	fmt.Printf("start-up: the overhead over bare; work items marked * have the same round's start-up (the no-op) under the same contender taken away;\n")
	fmt.Printf("the other work items give both: the ratio with the start-up (what a user waits for), and the work alone (median)\n\n")
	fmt.Printf("%-28s %6s", "item", "rounds")
	for _, c := range cs {
		fmt.Printf("  %-22s", c.name)
	}
	fmt.Printf("  %s\n", "ratios")
	for i, it := range items {
		name := it.name
		if it.net {
			name += " *"
		}
		ss, err := measure(cs, it)
		if err != nil {
			fmt.Printf("%-28s failed: %v\n", name, err)
			continue
		}
		fmt.Printf("%-28s %6d", name, len(ss))
		for j := range cs {
			xs := make([]float64, len(ss))
			for k, s := range ss {
				xs[k] = ms(s.work[j])
			}
			st := summarize(xs)
			fmt.Printf("  %6s %6s %6s   ", num(st.min), num(st.med), num(st.p90))
		}
		// The ratios: start-up compares overheads over bare; a work item
		// compares the work (alone, for a net item) to bare's.
		var parts []string
		for j := 1; j < len(cs); j++ {
			var rs, rb, ra []float64
			for _, s := range ss {
				var a, b, c float64
				if i < startupRows {
					a, b = ms(s.work[j]-s.work[0]), ms(s.work[0])
					if !*noBw && j >= 2 {
						c = ms(s.work[1] - s.work[0])
					}
				} else if it.net {
					a, b = ms(s.work[j]-s.base[j]), ms(s.work[0]-s.base[0])
				} else {
					a, b = ms(s.work[j]), ms(s.work[0])
					if alone := ms(s.work[0] - s.base[0]); it.alone && alone > 0 {
						ra = append(ra, ms(s.work[j]-s.base[j])/alone)
					}
				}
				if i < startupRows {
					// overhead in ms, and over bubblewrap's
					rs = append(rs, a)
					if c > 0 {
						rb = append(rb, a/c)
					}
				} else if b > 0 {
					rs = append(rs, a/b)
				}
			}
			short := map[string]string{"bubblewrap": "bwrap", "sandbox-executable": "ours", "landlock": "landlock", "cold": "cold", "before": "before", "before-cold": "b-cold", "first": "first", "before-first": "b-first", "home-new": "home", "before-home-new": "b-home", "first-decider": "decider", "before-first-decider": "b-decider"}[cs[j].name]
			if i < startupRows {
				st := summarize(rs)
				parts = append(parts, fmt.Sprintf("%s +%s ms", short, num(st.med)))
				if len(rb) > 0 {
					st := summarize(rb)
					parts = append(parts, fmt.Sprintf("%s/bwrap overhead %.2fx (p90 %.2fx)", short, st.med, st.p90))
				}
			} else {
				st := summarize(rs)
				alone := ""
				if len(ra) > 0 {
					alone = fmt.Sprintf("; work alone %.3fx", summarize(ra).med)
				}
				parts = append(parts, fmt.Sprintf("%s %.3fx (p90 %.3fx%s)", short, st.med, st.p90, alone))
				if cs[j].name == "landlock" {
					parts = append(parts, fmt.Sprintf("landlock/ours %.3fx", pairRatio(ss, j, slices.IndexFunc(cs, func(c contender) bool { return c.name == "sandbox-executable" }))))
				}
			}
		}
		fmt.Printf("%s\n", strings.Join(parts, ", "))
	}
}

// pairRatio is the median, round by round, of contender j's wall time over
// contender k's.
func pairRatio(ss []sample, j, k int) float64 {
	var rs []float64
	for _, s := range ss {
		if k >= 0 && s.work[k] > 0 {
			rs = append(rs, float64(s.work[j])/float64(s.work[k]))
		}
	}
	return summarize(rs).med
}

// trueArgv is the program that does nothing, whose start-up is measured.
func trueArgv() []string {
	if *staticTrue {
		return []string{*probe, "bench-open", "/", "0"}
	}
	return []string{"/bin/true"}
}

func trueName() string {
	if *staticTrue {
		return "static no-op"
	}
	return "/bin/true"
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func num(x float64) string {
	switch {
	case x >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

// denials: the cost of the default sensitive list (25 paths) in each
// filesystem mode, against the same run with no denials.
func denials(ws string) {
	fmt.Printf("\nstart-up with VT Code's default sensitive list, against none (ms, median of %d)\n", *n)
	for _, mode := range []string{"exact", "landlock"} {
		opts := []string{"--fs-mode", mode}
		ss, err := measure([]contender{
			{name: "none", wrap: func(a []string) []string { return oursWith(ws, "[]", opts, a...) }},
			{name: "25", wrap: func(a []string) []string { return oursWith(ws, "", opts, a...) }},
		}, item{argv: trueArgv(), rounds: *n})
		if err != nil {
			fmt.Printf("  %-9s failed: %v\n", mode, err)
			continue
		}
		var a, b []float64
		for _, s := range ss {
			a, b = append(a, ms(s.work[0])), append(b, ms(s.work[1]))
		}
		sa, sb := summarize(a), summarize(b)
		fmt.Printf("  %-9s no denials %s, 25 denied paths %s (%+.2f ms)\n", mode, num(sa.med), num(sb.med), sb.med-sa.med)
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
	var rssKB, anon string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			rssKB = strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
		if strings.HasPrefix(l, "RssAnon:") {
			anon = strings.TrimSpace(strings.TrimPrefix(l, "RssAnon:"))
		}
	}
	fmt.Printf("\nsupervisor resident memory while the program runs: VmRSS %s (anonymous %s)\n", rssKB, anon)
}

func hostLine() string {
	out, _ := exec.Command("uname", "-r").Output()
	mode := "cgroup hybrid/v1"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		mode = "cgroup v2 (unified)"
	}
	load, _ := os.ReadFile("/proc/loadavg")
	return "kernel " + strings.TrimSpace(string(out)) + ", " + mode + ", " + strconv.Itoa(numCPU()) + " CPUs, load " + strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " ")
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stopDeciders()
		os.Exit(1)
	}
}
