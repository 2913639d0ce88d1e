package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/mountns"
	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
)

// What a run leaves on the host (placeholders, the private temp dir) is
// removed by the run itself, or by its guardian should the supervisor be
// killed. What is left when both died (a kill of the whole session, an OOM
// kill) or the guardian could not remove (a placeholder another run still
// claimed, a temp dir deeper than spawn.RemoveTempDir goes) is swept by a
// later run, off its start-up path,
// while its program runs: at most once per sweepEvery, or at once when a
// guardian had to clean up (it asks, with a file the sweep consumes before
// it starts, so that no request is lost). Whether something is
// still in use is told by flock locks only: a placeholder by its group's
// lock (see mountns), a temp dir by the lock its run holds on the directory
// itself. A sweep only ever looks at what a run recorded in the state
// directory, never at whatever else lies in /tmp.

// tmpPrefix begins the name of every private temp dir.
const tmpPrefix = "sandbox-executable-tmp-"

// tmpRecords is the state directory's record of the private temp dirs in
// use: one symbolic link per directory, whose text is its path, made once
// the directory is locked and removed after the directory.
const tmpRecords = "tmpdirs"

// sweepEvery is how often a sweep runs when no guardian asked for one.
const sweepEvery = time.Hour

// cgroupSweepEvery is how often the stale-cgroup sweep runs when no
// guardian asked for one: a run's cgroup is left behind only when its
// supervisor and its guardian were both killed, and reading every cgroup
// directory on each run costs more than its start-up can spare.
const cgroupSweepEvery = time.Minute

// Files in the state directory: the time of the last full sweep, and a
// guardian's request for one.
const (
	sweptStamp       = "swept"
	cgroupSweptStamp = "swept-cgroups"
	sweepWanted      = "sweep-wanted"
)

// stateFile is the path of name in the state directory, or "" without one.
func stateFile(name string) string {
	dir, err := runstate.Dir("")
	if err != nil {
		return ""
	}
	return filepath.Join(dir, name)
}

// recordTmp records the locked temp dir dir and returns the record's path.
func recordTmp(dir string) (string, error) {
	recs, err := runstate.Dir(tmpRecords)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(dir))
	rec := filepath.Join(recs, hex.EncodeToString(sum[:16]))
	err = unix.Symlink(dir, rec)
	if errors.Is(err, unix.EEXIST) {
		// The record of an earlier directory of that name, which is gone
		// (this one could be made).
		_ = unix.Unlink(rec)
		err = unix.Symlink(dir, rec)
	}
	return rec, err
}

// sweepStale sweeps the cgroups of dead runs on h (nil: none) when a
// guardian asked for it or no such sweep began in the last
// cgroupSweepEvery, and their placeholders and temp dirs when a guardian
// asked or no sweep began in the last sweepEvery, unless another one is
// running. What is due is decided and stamped at once, by the caller's
// goroutine (dueSweeps); the sweeping itself is returned to run off the
// start-up path. Stamping first matters: a run whose program ends before a
// background goroutine got to stamp would leave the sweep due, and every
// run the warm path would carry out falls back to Go while one is due.
func sweepStale(h *cgroups.Host) (sweep func()) {
	stamp, wanted := stateFile(sweptStamp), stateFile(sweepWanted)
	if stamp == "" {
		if h == nil {
			return func() {}
		}
		return func() {
			_, _ = cgroups.CleanupStale(h, cgroups.Sweeper{Stale: spawn.CgroupStale, Kill: spawn.KillCgroup})
		}
	}
	asked := unix.Access(wanted, unix.F_OK) == nil
	cgroupsDue := false
	if h != nil {
		if cs := stateFile(cgroupSweptStamp); asked || !recent(cs, cgroupSweepEvery) {
			// Stamped first: runs starting meanwhile leave it to this one.
			touch(cs)
			cgroupsDue = true
		}
	}
	fullDue := asked || !recent(stamp, sweepEvery)
	if asked {
		// Consumed at once: a request made meanwhile asks for another.
		_ = unix.Unlink(wanted)
	}
	if fullDue {
		// Stamped before the sweep too: a short program's run often exits
		// before its sweep ends, and a stamp made only at the end would
		// have every later run start the whole sweep again; what one cut
		// short leaves waits for the next (or for a guardian's request).
		touch(stamp)
	}
	return func() {
		if cgroupsDue {
			_, _ = cgroups.CleanupStale(h, cgroups.Sweeper{Stale: spawn.CgroupStale, Kill: spawn.KillCgroup})
		}
		if fullDue {
			sweepFull()
		}
	}
}

// sweepFull sweeps the placeholders and temp dirs of dead runs, unless
// another sweep is running.
func sweepFull() {
	l, err := os.OpenFile(stateFile("sweep.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer l.Close()
	if unix.Flock(int(l.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	mountns.SweepStale()
	if recs, err := runstate.Dir(tmpRecords); err == nil {
		sweepTmp(recs)
	}
}

// recent reports whether the file at path was touched less than every ago.
func recent(path string, every time.Duration) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	age := time.Since(st.ModTime())
	return age >= 0 && age < every
}

// touch makes the file at path if need be and sets its times to now.
func touch(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
		f.Close()
		now := time.Now()
		_ = os.Chtimes(path, now, now)
	}
}

// sweepTmp removes the recorded temp dirs that no run holds, and the
// records of those gone. A record names a directory only while it is this
// user's own, mode 0700, with the temp dirs' name.
func sweepTmp(recs string) {
	d, err := os.Open(recs)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		rec := filepath.Join(recs, name)
		path, err := os.Readlink(rec)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		err = unix.Lstat(path, &st)
		if errors.Is(err, unix.ENOENT) {
			_ = unix.Unlink(rec)
			continue
		}
		if err != nil || !filepath.IsAbs(path) || !strings.HasPrefix(filepath.Base(path), tmpPrefix) ||
			st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o7777 != 0o700 {
			continue // not one of ours: left alone, and so is its record
		}
		if removeIfStale(path, &st) {
			_ = unix.Unlink(rec)
		}
	}
}

// removeIfStale removes the directory at path (st its lstat) if its lock
// can be taken: its run, and that run's guardian, are gone. It holds the
// lock while it removes it, and reports whether the directory is gone.
func removeIfStale(path string, st *unix.Stat_t) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if unix.Fstat(fd, &fst) != nil || fst.Dev != st.Dev || fst.Ino != st.Ino {
		return false
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	return spawn.RemoveTempDir(path, fd, "") == nil
}

// makePrivateTmp creates the program's private temp dir dir (named by
// Prepare, in a canonical parent: Landlock opens a rule's path without
// following any symlink, and $TMPDIR may name one), takes the flock on it
// that says it is in use for the run, and records it for the stale sweep.
// The record is made once it is locked: a recorded directory that is
// unlocked is stale.
func makePrivateTmp(dir string) (lock *os.File, record string, err error) {
	// Made here, never found: an entry of that name already there (planted,
	// or a link) fails the run.
	if err = os.Mkdir(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("private temp dir: %w", err)
	}
	if lock, err = os.Open(dir); err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_SH); err == nil {
			if record, err = recordTmp(dir); err == nil {
				return lock, record, nil
			}
		}
		lock.Close()
	}
	os.Remove(dir)
	return nil, "", fmt.Errorf("private temp dir: %w", err)
}

// Sweep returns the sweep of stale state due for this host (see
// sweepStale), for the caller to run beside a run it started.
func (pr *Prepared) Sweep() func() { return sweepStale(pr.cgroupPlan.host) }

// ExecError says why the program could not be started, as the spawn stage
// reported it (the shell's words for a program not found).
func (pr *Prepared) ExecError(se *spawn.Error) error {
	if se.Step == spawn.StepExec {
		return execError(pr.Argv[0], pr.env, se)
	}
	return se
}
