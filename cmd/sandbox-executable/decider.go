package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/decider"
	"sandbox-executable/fsdeps"
	"sandbox-executable/spawn"
	"sandbox-executable/supervisor"
)

// deciderEnv names the resident decider's socket in a run's environment.
const deciderEnv = spawn.DeciderEnv

// stuckLimit is how long one decision may take before the resident decider
// gives up and ends (exit 125, its socket removed).
const stuckLimit = 30 * time.Second

// deciderCmd is "sandbox-executable decider SOCKET": the resident decider.
// It listens on SOCKET until SIGTERM, SIGINT or SIGHUP, and decides and
// stores, one at a time, the runs that ask it (those whose environment has
// SANDBOX_EXECUTABLE_DECIDER=SOCKET, on a miss), so that their first run
// is carried out from a recipe without starting Go.
func deciderCmd(args []string) int {
	unblockSignals()
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return fail(supervisor.ExitSetup, errors.New("usage: sandbox-executable decider SOCKET"))
	}
	if !filepath.IsAbs(args[0]) {
		return fail(supervisor.ExitSetup, fmt.Errorf("decider: SOCKET %s: not an absolute path (runs name it in %s as it is)", quoteArg(args[0]), deciderEnv))
	}
	l, err := listenDecider(args[0])
	if err != nil {
		return fail(supervisor.ExitSetup, fmt.Errorf("decider: %w", err))
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// A decision takes on a run's terminal; a decider in the background
	// that wrote there (SANDBOX_EXECUTABLE_WARM=debug, with tostop set)
	// must get EIO, not stop and leave every run waiting for it.
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
	go func() {
		<-stop
		l.Close() // removes the socket file
	}()
	own, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fail(supervisor.ExitSetup, fmt.Errorf("decider: %w", err))
	}
	self := spawn.StatusDigest(own)
	peer := func(status []byte) bool { return spawn.StatusDigest(status) == self }
	decide := func(r *decider.Request) bool {
		// A decision stuck (on a filesystem that hangs, say) would
		// make every run that asks wait for nothing: the decider ends
		// instead, and the runs decide themselves.
		stuck := time.AfterFunc(stuckLimit, func() {
			os.Remove(args[0])
			os.Exit(supervisor.ExitSetup)
		})
		defer stuck.Stop()
		return decideFor(r)
	}
	if err := decider.Serve(l, decider.Handler{Peer: peer, Decide: decide}); err != nil {
		return fail(supervisor.ExitSetup, fmt.Errorf("decider: %w", err))
	}
	return 0
}

// listenDecider listens on path, mode 0600. A socket already there that
// nobody answers on (a decider killed with SIGKILL) is replaced; one that
// answers is another decider's.
func listenDecider(path string) (*net.UnixListener, error) {
	addr := &net.UnixAddr{Name: path, Net: "unix"}
	old := unix.Umask(0o177)
	l, err := net.ListenUnix("unix", addr)
	if errors.Is(err, unix.EADDRINUSE) {
		var st unix.Stat_t
		if c, derr := net.DialUnix("unix", nil, addr); derr == nil {
			c.Close()
			err = fmt.Errorf("%s: another decider listens there", path)
		} else if unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK && unix.Unlink(path) == nil {
			l, err = net.ListenUnix("unix", addr)
		}
	}
	unix.Umask(old)
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(true)
	return l, nil
}

// decideFor decides the run r asks for as that run would decide it (the
// cold path of execute, up to the store), and stores the entry under the
// key it computes in the run's state: whether it stored one. The process
// takes on the run's working directory, environment, standard descriptors
// and RLIMIT_NOFILE for the decision, and gives them back after. Anything
// it does not decide the run decides itself: a run that asks for a report
// or a log, keeps descriptors, or would be refused.
func decideFor(r *decider.Request) bool {
	restore, err := takeOn(r)
	if err != nil {
		return false
	}
	defer restore()
	// From here this process has the run's stderr and environment: with
	// SANDBOX_EXECUTABLE_WARM=debug, the run says what its decider did.
	if why := decideForRun(r); why != "" {
		warmSay("the decider decided nothing: " + why)
		return false
	}
	return true
}

// decideForRun is decideFor once the process has taken on r's state: ""
// when it stored the run's entry, else why not.
func decideForRun(r *decider.Request) string {
	// Nothing of an earlier decision is carried over: what it read is
	// read, and recorded, again.
	fsdeps.Reset()
	key, prog, ok := spawn.RecipeKeyOf(r.Args, r.Env)
	if !ok {
		return "no recipe key"
	}
	o, err := parseArgs(r.Args[1:])
	switch {
	case err != nil:
		return err.Error()
	case o.help || o.version || o.explain || len(o.argv) == 0 || !slices.Equal(o.argv, r.Args[prog:]):
		return "not a run the warm path stores"
	case len(o.keepFDs) > 0:
		return "--keep-fd: descriptors the decider does not have"
	case asksForOutputs(o):
		return "a report or a log, which the run writes itself"
	}
	out, err := openOutputs(o)
	if err != nil {
		return err.Error()
	}
	defer out.close()
	inv := &invocation{o: o, out: out, startedAt: time.Now(), resident: true}
	_, _, pr, err := inv.decide()
	if err != nil {
		return err.Error()
	}
	if len(pr.Candidates) == 0 {
		return "the program is not found"
	}
	if err := pr.Ready(); err != nil {
		return err.Error()
	}
	defer pr.Release()
	_, encoded, entry, err := inv.entry(pr)
	if err != nil {
		return err.Error()
	}
	if why := pr.NotStored(); why != "" {
		return why
	}
	if !inv.storeRecipe(nil, key, encoded, entry)() {
		return "not stored"
	}
	return ""
}

// deciderSocket is the resident decider's socket a run's environment names
// (an absolute path; the run asks no other), canonical as a denied path
// must be: the program may neither reach it nor make one there.
func deciderSocket() string {
	sock := os.Getenv(deciderEnv)
	if !filepath.IsAbs(sock) {
		return ""
	}
	sock = filepath.Clean(sock)
	if dir, err := fsdeps.EvalSymlinks(filepath.Dir(sock)); err == nil {
		return filepath.Join(dir, filepath.Base(sock))
	}
	return sock
}

// asksForOutputs reports whether o asks for anything written while the
// run runs (a report, a denials log, a log): files the run opens itself.
func asksForOutputs(o *options) bool {
	for name, spec := range optionSpecs {
		if spec.output && o.set[name] {
			return true
		}
	}
	return os.Getenv(logEnv) != ""
}

// takeOn makes this process's working directory, environment, descriptors
// 0-2 and initial RLIMIT_NOFILE r's, and returns what gives them back. An
// environment with a duplicate name, or an entry without "=", is refused:
// the Go runtime would not hand it on as the run's own would.
func takeOn(r *decider.Request) (restore func(), err error) {
	seen := map[string]bool{}
	for _, kv := range r.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || seen[k] {
			return nil, errors.New("environment")
		}
		seen[k] = true
	}
	cwd, err := unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var std [3]int
	for i := range std {
		if std[i], err = unix.FcntlInt(uintptr(i), unix.F_DUPFD_CLOEXEC, 3); err != nil {
			for _, fd := range std[:i] {
				unix.Close(fd)
			}
			unix.Close(cwd)
			return nil, err
		}
	}
	env := os.Environ()
	_, _, nofile := spawn.InitialState()
	restore = func() {
		for i, fd := range std {
			_ = unix.Dup3(fd, i, 0)
			unix.Close(fd)
		}
		_ = unix.Fchdir(cwd)
		unix.Close(cwd)
		setEnv(env)
		spawn.SetInitialNofile(nofile)
	}
	if err := unix.Fchdir(int(r.Cwd.Fd())); err != nil {
		restore()
		return nil, err
	}
	for i, f := range r.Std {
		if err := unix.Dup3(int(f.Fd()), i, 0); err != nil {
			restore()
			return nil, err
		}
	}
	setEnv(r.Env)
	spawn.SetInitialNofile(spawn.Rlimit{Resource: unix.RLIMIT_NOFILE, Cur: r.NofileCur, Max: r.NofileMax})
	return restore, nil
}

// setEnv makes env, in its order, this process's environment.
func setEnv(env []string) {
	os.Clearenv()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		_ = os.Setenv(k, v)
	}
}
