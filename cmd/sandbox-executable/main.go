// Command sandbox-executable runs a program under a sandbox policy: Landlock
// for the filesystem, a seccomp filter for system calls, resource limits and
// a wall-clock watchdog, with the program's stdio passed through untouched.
// It exits with the program's status (128+N for signal N), 124 on timeout,
// 125 when it refused or failed before the program ran, 126 when the program
// could not be executed, and 127 when it was not found.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/user"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/doctor"
	"sandbox-executable/fsdeps"
	"sandbox-executable/hostfacts"
	"sandbox-executable/policy"
	"sandbox-executable/recipestore"
	"sandbox-executable/report"
	"sandbox-executable/spawn"
	"sandbox-executable/supervisor"
)

var version = "dev"

const prog = "sandbox-executable"

func main() {
	if st, svc, rec := spawn.Warm(); st == spawn.WarmServing {
		serveWarm(os.Args[1:], svc, rec)
	}
	os.Exit(run(os.Args[1:]))
}

// fail prints the one stderr line of a fatal error and returns code.
func fail(code int, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(os.Stderr, "%s: %s\n", prog, msg)
	return code
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "doctor" {
		unblockSignals()
		return doctorCmd(args[1:])
	}
	if len(args) > 0 && args[0] == "explain" {
		unblockSignals()
		return explainPathCmd(args[1:])
	}
	if len(args) > 0 && args[0] == "decider" {
		return deciderCmd(args[1:])
	}
	startedAt := time.Now()
	o, err := parseArgs(args)
	if err != nil {
		return fail(supervisor.ExitSetup, err)
	}
	if o.help {
		fmt.Fprint(os.Stdout, usage)
		return 0
	}
	if o.version {
		fmt.Fprintf(os.Stdout, "%s %s\n", prog, version)
		return 0
	}
	if o.explain || o.help || o.version {
		unblockSignals()
	}
	if o.explain {
		// Refused before openOutputs would create (and truncate) them.
		for _, name := range []string{"--report-file", "--report-fd", "--log-denials"} {
			if o.set[name] {
				return fail(supervisor.ExitSetup, fmt.Errorf("%s with --explain: --explain runs nothing, so there is nothing to record", name))
			}
		}
	}
	out, err := openOutputs(o)
	if err != nil {
		return fail(supervisor.ExitSetup, err)
	}
	defer out.close()
	inv := &invocation{o: o, out: out, startedAt: startedAt}
	return inv.run()
}

// invocation is one sandboxed run (or --explain) from its parsed command
// line, with its outputs open.
type invocation struct {
	o         *options
	out       *outputs
	startedAt time.Time
	// composed is what the flags and settings files decided (config).
	composed *composed
	// resident: the resident decider decides this run for another
	// process, which carries it out (decider.go).
	resident bool
}

// run decides the run from the policy and the host's facts, then prints
// the decision (--explain) or carries it out.
func (inv *invocation) run() int {
	o := inv.o
	if len(o.argv) == 0 && !o.explain {
		return inv.refuse(supervisor.ExitSetup, errors.New("no PROGRAM given (usage: sandbox-executable --sandbox-policy JSON [--] PROGRAM [ARGS...]; see --help)"), nil)
	}
	for _, fd := range o.keepFDs {
		if err := checkKeepFD(fd, inv.out.reportFD); err != nil {
			return inv.refuse(supervisor.ExitSetup, err, nil)
		}
	}
	cfg, facts, pr, err := inv.decide()
	if err != nil {
		return inv.refuse(supervisor.ExitSetup, err, nil)
	}
	if o.explain {
		return inv.explain(pr)
	}
	if len(pr.Candidates) == 0 {
		return inv.refuse(supervisor.ExitNotFound, fmt.Errorf("%s: command not found", quoteArg(o.argv[0])), pr)
	}
	return inv.execute(cfg, facts, pr)
}

// decide resolves the policy, probes the host and prepares the run: the
// Go half of a cold start, all of it before anything is made for the run.
func (inv *invocation) decide() (supervisor.Config, *hostfacts.Facts, *supervisor.Prepared, error) {
	o := inv.o
	fsdeps.Begin()
	// What no plan changes is probed while the policy is resolved: with
	// it the namespace trial (a clone into a run's namespaces) where one
	// is made before the run. A run's own child tries its namespaces (see
	// execute), unless they cannot be assumed here; --explain tries them
	// first, as it prints the decision without running.
	probe := hostfacts.Start(hostfacts.Options{AssumeNamespaces: !o.explain})
	cfg, err := inv.config()
	if err != nil {
		return cfg, nil, nil, err
	}
	t0 := time.Now()
	// --explain writes nothing: the state directory and its key are
	// looked up, not made, and the filter cache is only read.
	facts := probe.Finish(hostfacts.Options{ReadOnly: o.explain, Overlay: len(cfg.Plan.Filesystem.ScratchCaches) > 0, TempDir: cfg.TempDir})
	inv.out.log.Debug("probed the host", "took", time.Since(t0))
	t0 = time.Now()
	pr, err := supervisor.Prepare(cfg, facts)
	// A path that was two things while the run was decided (a directory,
	// then a link: another run's program renaming it) is decided again,
	// and refused when it keeps changing: no part of a decision may rest
	// on a file the rest did not see.
	for try := 1; err == nil && len(fsdeps.Unstable()) > 0; try++ {
		if try == 3 {
			return cfg, facts, nil, fmt.Errorf("the filesystem kept changing while the run was decided (%s): refusing rather than running on a decision that saw two things at one path; run the command again",
				strings.Join(fsdeps.Unstable(), ", "))
		}
		inv.out.log.Debug("a path gave two answers while deciding: deciding again", "paths", fsdeps.Unstable())
		fsdeps.Begin()
		pr, err = supervisor.Prepare(cfg, facts)
	}
	if err != nil {
		return cfg, facts, nil, err
	}
	inv.out.log.Debug("prepared", "took", time.Since(t0))
	return cfg, facts, pr, nil
}

// refuse ends a run that never started: one stderr line, and the report
// says why.
func (inv *invocation) refuse(code int, err error, pr *supervisor.Prepared) int {
	inv.out.log.Info("refused", "error", err.Error())
	// A run carried out says the settings' notes as it starts; a refused
	// one says them before its line.
	if notes := inv.notesLine(); notes != "" {
		fmt.Fprintln(os.Stderr, notes)
	}
	var explain *report.Explain
	if pr != nil {
		explain = report.NewExplain(pr)
	}
	inv.out.writeReport(report.Input{ToolVersion: version, StartedAt: inv.startedAt, Program: inv.o.argv, Explain: explain,
		Result: supervisor.Result{Ending: supervisor.Refused, ExitCode: code, Err: err, Wall: time.Since(inv.startedAt)}})
	return fail(code, err)
}

// config resolves the policy and gathers what the supervisor is told: the
// command line's choices, parsed here, and this process's own.
func (inv *invocation) config() (supervisor.Config, error) {
	o, out := inv.o, inv.out
	t0 := time.Now()
	plan, comp, err := resolvePlan(o)
	if err != nil {
		return supervisor.Config{}, err
	}
	inv.composed = comp
	out.log.Debug("resolved", "took", time.Since(t0), "since_start", time.Since(inv.startedAt))
	cwd, err := fsdeps.Getwd()
	if err != nil {
		return supervisor.Config{}, fmt.Errorf("working directory: %w", err)
	}
	quota, err := parseCPUQuota(o)
	if err != nil {
		return supervisor.Config{}, err
	}
	cfg := supervisor.Config{
		Plan:         plan,
		Cwd:          cwd,
		Words:        say,
		CgroupParent: o.cgroupParent,
		// This process is the supervisor and nothing else: it may move
		// into a leaf of its own delegated cgroup. The resident decider
		// may not: its cgroup is in the key of the runs it decides for.
		MoveSelf:      !inv.resident,
		CPUQuota:      quota,
		Warn:          func(msg string) { fmt.Fprintf(os.Stderr, "%s: degraded (--allow-degraded): %s\n", prog, msg) },
		Argv:          o.argv,
		KeepFDs:       o.keepFDs,
		AllowDegraded: o.allowDegraded,
		LogDenials:    o.set["--log-denials"],
		OnDenial:      out.denial,
		Log:           out.log,
		Report:        out.report != nil,
		Standalone:    comp != nil && comp.standalone,
	}
	if len(cfg.Argv) == 0 {
		cfg.Argv = []string{""}
	}
	if sock := deciderSocket(); sock != "" {
		cfg.Protect = append(cfg.Protect, sock)
	}
	if cfg.FSMode, err = parseFSMode(o.fsMode); err != nil {
		return supervisor.Config{}, err
	}
	cfg.TempDir, cfg.RunID, err = tempDirAndRunID()
	return cfg, err
}

// explain prints the decision as JSON on stdout.
func (inv *invocation) explain(pr *supervisor.Prepared) int {
	if len(inv.o.argv) == 0 {
		pr.Argv, pr.Candidates = nil, nil
	}
	refused := pr.Foresee()
	e := report.NewExplain(pr)
	if refused != nil {
		e.Refused = refused.Error()
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return fail(supervisor.ExitSetup, err)
	}
	return 0
}

// execute carries out the run: the host is readied for it (Ready), the
// runner carries it out (spawn.RunRecipe, which does not return once the
// program runs: it exits with the run's code) while this process serves
// what the runner asks of Go, and the recipe is stored for the warm path.
// A run whose child failed before its program started, at a step a
// namespace refusal fails (its clone, its id maps, its mounts), is decided
// again once where the namespaces were assumed and trying them says
// otherwise, as a run that had tried first would have been.
func (inv *invocation) execute(cfg supervisor.Config, facts *hostfacts.Facts, pr *supervisor.Prepared) int {
	key, keyed := spawn.RecipeKeyFor(inv.o.argv)
	keyed = keyed && os.Getenv(spawn.WarmOff) != "off"
	if st, _, _ := spawn.Warm(); st == spawn.WarmFellBack {
		inv.out.log.Debug("the stored recipe started nothing: decided again")
	}
	for retried := false; ; retried = true {
		ret, recipe, err := inv.runOnce(pr, key, keyed)
		var refused *supervisor.RefusedError
		if err != nil && !errors.As(err, &refused) {
			return inv.failed(supervisor.ExitSetup, err, pr)
		}
		if err == nil && ret.Reason == spawn.ReturnFailed && ret.FailStep == spawn.StepExec {
			return inv.failed(ret.ExitCode, pr.ExecError(ret.Error(recipe, pr.Argv[0])), pr)
		}
		// Nothing ran: a refusal while readying the host, or the run's
		// objects are gone again.
		if redo, changed := facts.Retry(); changed && !retried {
			inv.out.log.Debug("namespaces refused to the run's child: deciding again", "step", ret.FailStep.String(), "errno", ret.FailErrno)
			if pr, err = supervisor.Prepare(cfg, redo); err != nil {
				return inv.refuse(supervisor.ExitSetup, err, nil)
			}
			facts = redo
			continue
		}
		if refused != nil {
			return inv.refuse(supervisor.ExitSetup, err, pr)
		}
		if keyed {
			_ = recipestore.Remove(key)
		}
		if ret.Reason == spawn.ReturnFailed {
			return inv.failed(supervisor.ExitSetup, ret.Error(recipe, pr.Argv[0]), pr)
		}
		what := ret.FailWhat
		if ret.FailStep != spawn.StepNone && recipe != nil {
			what = ret.Error(recipe, pr.Argv[0]).Error() // the child's step, in the recipe's words
		} else if ret.FailErrno != 0 {
			what += ": " + ret.FailErrno.Error()
		}
		return inv.failed(supervisor.ExitSetup, errors.New("the run could not be set up: "+what), pr)
	}
}

// runOnce readies the host for pr, stores its recipe for the warm path,
// and has the runner carry it out while this process serves it. It
// returns only when no program ran: the runner exits with the run's code.
func (inv *invocation) runOnce(pr *supervisor.Prepared, key [32]byte, keyed bool) (spawn.Return, *spawn.Recipe, error) {
	// From here on a signal ends the run through the runner, never the
	// helper half-way through readying the host.
	spawn.SignalsCaught()
	if err := pr.Ready(); err != nil {
		return spawn.Return{}, nil, err
	}
	defer pr.Release()
	recipe, encoded, entry, err := inv.entry(pr)
	if err != nil {
		return spawn.Return{}, nil, err
	}
	record, explain := entry.Service, entry.Explain
	svc, err := spawn.NewService()
	if err != nil {
		return spawn.Return{}, nil, err
	}
	waitStored := func() bool { return false }
	if keyed {
		if why := pr.NotStored(); why != "" {
			warmSay("not stored: " + why)
			_ = recipestore.Remove(key)
		} else {
			waitStored = inv.storeRecipe(svc, key, encoded, entry)
		}
	}
	go func() {
		res := supervisor.Serve(svc, record, supervisor.ServeOptions{OnDenial: inv.out.denial, Log: inv.out.log, HostProxy: pr.HostProxy(), TmpFD: pr.TmpFD()})
		inv.ended(explain, res)
		svc.Done()
	}()
	// Stale state of runs whose helper and guardian were both killed is
	// swept while the program runs, off its start-up path.
	go pr.Sweep()()
	ret, err := spawn.RunRecipe(encoded, pr.Argv, svc)
	// No program ran: the caller may remove the entry, or decide again.
	waitStored()
	return ret, recipe, err
}

// entry is what a decided run is carried out and stored from: its recipe,
// encoded, and the service record, with the decision's public form when
// a report asks for it (its only reader; the arguments that ask for one
// are part of the recipe's key). A run Go decided and one the resident
// decider decided for another process make it here alike.
func (inv *invocation) entry(pr *supervisor.Prepared) (*spawn.Recipe, []byte, storedService, error) {
	recipe, err := pr.Recipe(inv.says(pr))
	if err != nil {
		return nil, nil, storedService{}, err
	}
	recipe.EndInGo = recipe.EndInGo || inv.out.logging
	e := storedService{Service: pr.Service()}
	if inv.out.report != nil {
		e.Explain = report.NewExplain(pr)
	}
	return recipe, recipe.Encode(), e, nil
}

// storedService is the service record stored with a recipe, and the
// decision's public form for the report of a run served from it (only for
// an invocation that asks for a report: it is most of the record's JSON).
type storedService struct {
	Service *supervisor.ServiceRecord `json:"service"`
	Explain *report.Explain           `json:"explain,omitempty"`
}

// serveWarm serves a run the warm path started from a stored recipe and
// handed to Go (spawn.Warm): from the service record stored with it,
// deciding nothing. The runner's own thread ends the process.
func serveWarm(args []string, svc *spawn.Service, rec []byte) {
	var stored storedService
	err := json.Unmarshal(rec, &stored)
	if err == nil && stored.Service == nil {
		err = errors.New("no service record")
	}
	o, perr := parseArgs(args)
	var out *outputs
	if perr == nil {
		out, perr = openOutputs(o)
	}
	if perr != nil {
		out = &outputs{log: slog.New(slog.DiscardHandler), reportFD: -1}
		o = &options{}
	}
	if err != nil {
		fail(supervisor.ExitSetup, fmt.Errorf("stored decision: %w", err))
		stored.Service = &supervisor.ServiceRecord{}
		svc.Fail()
	}
	if stored.Explain != nil {
		// The filter is the recipe's: no cache was asked this time.
		stored.Explain.Enforcement.Seccomp.Cache, stored.Explain.Enforcement.Seccomp.CacheRejected = "recipe", ""
	}
	inv := &invocation{o: o, out: out}
	inv.startedAt, _ = svc.ProgramStarted()
	inv.out.log.Debug("served from the stored decision")
	res := supervisor.Serve(svc, stored.Service, supervisor.ServeOptions{OnDenial: out.denial, Log: out.log})
	inv.ended(stored.Explain, res)
	out.close()
	svc.Done()
	select {}
}

// ended logs and reports how a run ended, and says its error.
func (inv *invocation) ended(explain *report.Explain, res supervisor.Result) {
	inv.out.writeReport(report.Input{ToolVersion: version, StartedAt: inv.startedAt, Program: inv.o.argv, Explain: explain, Result: res,
		DenialLog: inv.o.logDenials, ObservedSeccomp: explain != nil && explain.Enforcement.Seccomp.Observed})
	if res.Err != nil {
		fail(res.ExitCode, res.Err)
	}
}

// failed ends a run whose program did not start: one stderr line, and the
// report says why.
func (inv *invocation) failed(code int, err error, pr *supervisor.Prepared) int {
	inv.out.log.Info("failed", "error", err.Error())
	var explain *report.Explain
	if pr != nil {
		explain = report.NewExplain(pr)
	}
	inv.out.writeReport(report.Input{ToolVersion: version, StartedAt: inv.startedAt, Program: inv.o.argv, Explain: explain,
		Result: supervisor.Result{Ending: supervisor.SetupFailed, ExitCode: code, Err: err, Wall: time.Since(inv.startedAt)}})
	return fail(code, err)
}

// storeRecipe stores recipe under key for the warm path, with what the
// decision read and its service record; a decision that read what cannot
// be checked again is not stored (and an older entry goes). The entry is
// encoded and written while the runner starts the program (in a fresh
// process that took longer than the runner's start-up), and the helper's
// exit waits for it (svc.Hold; the resident decider, which runs nothing,
// has no svc); the returned func waits for it too, and says whether it was
// stored. The record is only read while the run is served.
func (inv *invocation) storeRecipe(svc *spawn.Service, key [32]byte, recipe []byte, entry storedService) (wait func() bool) {
	if t := fsdeps.Tainted(); len(t) > 0 {
		warmSay("not stored: the decision read what cannot be checked again: " + strings.Join(t, "; "))
		_ = recipestore.Remove(key)
		return func() bool { return false }
	}
	// What the decision read, taken now: the service reads more later.
	deps := fsdeps.Deps()
	enc, err := fsdeps.Encode(deps)
	release := func() {}
	if err == nil && svc != nil {
		release, err = svc.Hold()
	}
	if err != nil {
		warmSay("not stored: " + err.Error())
		return func() bool { return false }
	}
	done := make(chan bool, 1)
	go func() {
		defer release()
		rec, err := json.Marshal(entry)
		if err == nil {
			err = recipestore.Store(key, spawn.StoredRecipe(enc, recipe, rec))
		}
		if err != nil {
			warmSay("not stored: " + err.Error())
			done <- false
			return
		}
		warmSay(fmt.Sprintf("stored: %d dependencies, a recipe of %d bytes", len(deps), len(recipe)))
		done <- true
	}()
	return func() bool { return <-done }
}

// warmSay writes one line to stderr when SANDBOX_EXECUTABLE_WARM=debug
// asked what the warm path does, as its C part does (spawn/warm.c).
func warmSay(what string) {
	if os.Getenv(spawn.WarmOff) == "debug" {
		fmt.Fprintf(os.Stderr, "%s: warm path: %s\n", prog, what)
	}
}

// tempDirAndRunID are where a private temp dir would go (the helper's own
// temp dir, canonical where it exists: Landlock opens a rule's path without
// following any symlink; one that does not exist fails only a run that
// makes a private temp dir, when it does) and a fresh random name for this
// run.
func tempDirAndRunID() (string, string, error) {
	dir := os.TempDir()
	if real, err := fsdeps.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("run id: %w", err)
	}
	return dir, hex.EncodeToString(b[:]), nil
}

// parseFSMode parses --fs-mode (empty: the default, auto).
func parseFSMode(v string) (string, error) {
	switch v {
	case "", "auto":
		return supervisor.FSAuto, nil
	case "exact":
		return supervisor.FSExact, nil
	case "landlock":
		return supervisor.FSLandlock, nil
	}
	return "", fmt.Errorf("--fs-mode: %q is not one of auto, exact, landlock", v)
}

// checkFD checks that fd, named by option, is an open descriptor above 2.
func checkFD(option string, fd int) error {
	if fd <= 2 {
		return fmt.Errorf("%s %d: must be above 2 (0, 1 and 2 are the program's)", option, fd)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return fmt.Errorf("%s %d: not an open file descriptor", option, fd)
	}
	return nil
}

// checkKeepFD checks that a --keep-fd descriptor is one the caller handed
// down (open, and not close-on-exec: every descriptor this process opens
// itself is, the Go runtime's included) and not the report's, so that the
// program gets nothing of the helper's own.
func checkKeepFD(fd, reportFD int) error {
	if err := checkFD("--keep-fd", fd); err != nil {
		return err
	}
	if fd == reportFD {
		return fmt.Errorf("--keep-fd %d: that is --report-fd: the program could write the report", fd)
	}
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC != 0 {
		return fmt.Errorf("--keep-fd %d: not a descriptor the caller passed down (it is close-on-exec, so the helper's own)", fd)
	}
	return nil
}

// doctorCmd prints what this host can enforce: a screen for people, or JSON
// with --json. It exits 0 when every part of the strict model is available.
func doctorCmd(args []string) int {
	asJSON := false
	for _, a := range args {
		switch a {
		case "--json":
			asJSON = true
		case "--help", "-h":
			fmt.Fprint(os.Stdout, "Usage: sandbox-executable doctor [--json]\n\nSays what this host can enforce of the strict model, what it cannot, and how\nto fix each gap. Exit status 0 when everything is available, 1 otherwise.\n")
			return 0
		default:
			return fail(supervisor.ExitSetup, fmt.Errorf("doctor: unknown option %s", quoteArg(a)))
		}
	}
	// The same probe a run decides from, with doctor's part.
	r := doctor.Render(hostfacts.Probe(doctor.ProbeOptions()), doctor.Options{Words: say})
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fail(supervisor.ExitSetup, err)
		}
	} else {
		fmt.Fprint(os.Stdout, r.Text())
	}
	if !r.OK {
		return 1
	}
	return 0
}

// parseCPUQuota reads --cpu-quota CORES: a positive number of CPUs
// ("0.5", "2"), at most the machine's.
func parseCPUQuota(o *options) (float64, error) {
	if !o.set["--cpu-quota"] {
		return 0, nil
	}
	q, err := strconv.ParseFloat(o.cpuQuota, 64)
	if err != nil || q <= 0 || math.IsInf(q, 0) || math.IsNaN(q) {
		return 0, fmt.Errorf("--cpu-quota: %s is not a positive number of CPUs", quoteArg(o.cpuQuota))
	}
	if n := float64(runtime.NumCPU()); q > n {
		return 0, fmt.Errorf("--cpu-quota: %s CPUs is more than this machine's %d", quoteArg(o.cpuQuota), runtime.NumCPU())
	}
	return q, nil
}

// sameProfile compares two seccomp profiles field by field.
func sameProfile(a, b policy.SeccompProfile) bool {
	return slices.Equal(a.BlockedSyscalls, b.BlockedSyscalls) && a.AllowNamespaces == b.AllowNamespaces &&
		a.AllowNetworkSockets == b.AllowNetworkSockets && a.LogOnly == b.LogOnly
}

// maxArgFile bounds a JSON argument read from a file.
const maxArgFile = 1 << 20

// argValue is the JSON of a policy argument: the value itself, or, when it
// starts with "@", the contents of the file it names (a JSON value cannot
// start with "@").
func argValue(name, v string) ([]byte, error) {
	path, ok := strings.CutPrefix(v, "@")
	if !ok {
		return []byte(v), nil
	}
	data, err := fsdeps.ReadFileAtMost(path, maxArgFile)
	var pe *fs.PathError
	if err != nil && errors.As(err, &pe) && pe.Op == "open" {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, path, err)
	}
	if len(data) > maxArgFile {
		return nil, fmt.Errorf("%s: %s: larger than %d bytes", name, path, maxArgFile)
	}
	return data, nil
}

// terminalDevices lists the terminals on fds 0-2, so the program may reopen
// the terminal it was given (through /dev/tty or /proc/self/fd).
func terminalDevices() []string {
	var out []string
	for fd := 0; fd < 3; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			continue
		}
		// The caller's descriptors 0-2 are in the recipe's key.
		p, err := fsdeps.ReadlinkProcSelf(fmt.Sprintf("/proc/self/fd/%d", fd), "the terminal on stdio (descriptors 0-2)")
		if err == nil && strings.HasPrefix(p, "/dev/") {
			out = append(out, p)
		}
	}
	return out
}

func passwdHome() (string, error) {
	// /etc/passwd first: the system's own users are there, and reading it
	// costs a fraction of getpwuid's trip through NSS (this runs on every
	// start, see policy's otherHome).
	if h, ok := etcPasswdHome("/etc/passwd", os.Getuid()); ok {
		return h, nil
	}
	// Through NSS: nothing a recorded dependency can check.
	fsdeps.Taint("cmd: the home directory from the password database through NSS (user.Current): uid " + strconv.Itoa(os.Getuid()) + " has no line in /etc/passwd")
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	return u.HomeDir, nil
}

// etcPasswdHome returns the home field of uid's line in a passwd file.
func etcPasswdHome(path string, uid int) (string, bool) {
	b, err := fsdeps.ReadFile(path)
	if err != nil {
		return "", false
	}
	want := strconv.Itoa(uid)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 7 && f[2] == want && f[5] != "" {
			return f[5], true
		}
	}
	return "", false
}
