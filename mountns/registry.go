package mountns

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
)

// The placeholder registry. Placeholders are shared: two sandboxes over the
// same workspace both need "<root>/.codex" covered, and the second finds the
// first one's placeholder. The danger is removal: a directory that is a
// mountpoint in another mount namespace can be removed on the host, and the
// kernel then drops that namespace's mount over it, so a placeholder removed
// while another run's program is running uncovers the name for that program.
// The protocol, which the runner alone carries out (spawn/runner.c: the
// claims, the records, the removals and the stale sweep), and which Go
// only reads, for a decision (peekRegistered):
//
//   - Placeholders are grouped by the directory they are in. Each group has a
//     registry directory (g-<hash of the directory>) holding a lock file, a
//     symbolic link "dir" whose text is the directory (for the stale sweep),
//     and one record per placeholder, "n-<name>", a symbolic link whose text is
//     "<dev>:<ino>:<ctime sec>:<ctime nsec>" of the empty directory a run made
//     (a symbolic link is made in one call, so a record is never half
//     written).
//   - A run takes a shared flock on every group a placeholder of its view
//     could be in (the spawn stage's runner, from the groups ClaimPlan
//     lists), and holds it until its program and everything it started are
//     gone (should the helper be killed, its guardian holds the same open
//     lock until the tree is gone). A placeholder is removed only by a holder of the
//     exclusive lock, which exists only when no other run holds a claim: no
//     placeholder any running program's view covers can disappear.
//   - Deciding under the claim, a run treats an existing directory that
//     matches its record (device, inode, ctime) as a placeholder, and makes
//     the missing ones, recording each. Runs decide one at a time per group
//     (an exclusive flock on the group's "decide" file, held from the
//     decision until the records are made): a directory another run has
//     made but not yet recorded is never taken for the user's.
//   - The last user (the exclusive lock taken without waiting: the run, its
//     guardian, or the stale sweep) removes every recorded placeholder that
//     still matches its record, and drops the records, holding the decide
//     lock too (a decision reads a record and its directory under it,
//     shared). A directory that no longer matches (someone wrote into it,
//     chmodded it, or replaced it) is the user's now and stays; rmdir
//     refuses a non-empty one anyway. Records are dropped under the
//     exclusive lock, so a directory the user makes later under the same
//     name (even one that reuses the inode number: the ctime differs) is
//     never taken for a placeholder.
//   - A crash that left placeholders (supervisor and guardian both killed)
//     is cleaned by the next run in that directory, which claims them as
//     recorded, or by the stale sweep (SweepStale).
//
// Lock files and group directories are never removed, so a lock taken is
// always the one in place. A process that holds one of these locks holds
// it in every copy of its fd table: the sweep, which Go runs beside a run,
// never holds one while the runner clones the run's init (spawn/runner.c:
// sweep_locks).

// registryDir is the registry's place in the state directory.
const registryDir = "placeholders"

// groupDir is the registry directory of the placeholders in parent.
func groupDir(reg, parent string) string { return spawn.PlaceholderGroupDir(reg, parent) }

// peekRegistered returns a test for recorded placeholders that takes no
// claim, for the decision (Build): the runner checks again under its
// claims. What it reads is the decision's: the record (a recorded
// readlink) and the directory's identity with its ctime (a recorded lstat
// that compares the ctime). It is asked of a directory seen to exist, and
// answers for the moment it reads:
//
//   - It reads under the group's decide lock, shared: a run makes a
//     placeholder and then records it, and a last run removes one, under
//     that lock held exclusively. So a directory made a moment ago is not
//     taken for the user's, and the record and the directory are read as
//     one state: no placeholder is made between the two reads, and none is
//     seen mid-removal (an rmdir changes the ctime before the name goes).
//   - A name that is gone by then counts as a placeholder (a missing name
//     is covered by one): its last run removed it, and with it the record.
//
// Taking either for the user's directory would have the run bind a
// directory that is about to go, and fail at start-up.
func peekRegistered() func(string) bool {
	reg := ""
	return func(path string) bool {
		if reg == "" {
			var err error
			if reg, err = runstate.Dir(registryDir); err != nil {
				return false
			}
		}
		group := groupDir(reg, filepath.Dir(path))
		release := spawn.HoldPlaceholderDecisions(group)
		defer release()
		text, err := fsdeps.Readlink(spawn.PlaceholderRecordPath(group, path))
		if err != nil {
			return gone(path)
		}
		d, ok := spawn.ParsePlaceholderRecord(text)
		if !ok {
			return gone(path)
		}
		fi, err := fsdeps.LstatCtime(path)
		if err != nil {
			return errors.Is(err, unix.ENOENT)
		}
		return fi.IsDir() && fi.Dev() == d.Dev && fi.Ino() == d.Ino &&
			fi.Ctime.Sec == d.Ctime.Sec && fi.Ctime.Nsec == d.Ctime.Nsec
	}
}

// gone reports whether path no longer exists. It asks what maskTarget
// asked (a recorded lstat, without the ctime): the user's own directory
// stays one dependency, which a write into it (git's, into .git) leaves as
// it was.
func gone(path string) bool {
	_, err := fsdeps.Lstat(path)
	return errors.Is(err, unix.ENOENT)
}

// SweepStale removes the placeholders that no run claims: left by runs
// whose supervisor and guardian both died in a directory no run has used
// since (spawn.SweepPlaceholders).
func SweepStale() {
	if reg, err := runstate.Dir(registryDir); err == nil {
		spawn.SweepPlaceholders(reg)
	}
}
