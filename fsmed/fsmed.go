// Package fsmed lets a program make, remove and rename entries at the top
// level of its writable roots in Landlock-only mode, where Landlock alone
// cannot allow that: a root with a protected name beneath it (.git, .vtcode,
// a file git runs) is split, its entries granted one by one, so that the
// protected names stay unwritable and cannot be made; the root itself then
// gains and loses no entry. The seccomp filter sends every call that makes,
// removes, renames or opens for writing (seccomp.FileCalls) to the
// supervisor, which
//
//   - looks at the parent directory the program named, as the program
//     would look it up, and finds where it lies: beneath no split
//     directory, or beneath an entry the program's own Landlock rules
//     grant, the kernel carries the call out in the program
//     (seccomp.Call.Continue), and its Landlock domain decides: nothing is
//     granted that way, whatever the program changes meanwhile, since the
//     kernel checks the call as it runs it;
//   - in a split directory, checks the name (never a protected one, in
//     any case) and carries the call out itself; beneath an entry made or
//     moved there during the run (which has no rule of the program's:
//     Landlock rules name the inodes that existed at the start), it
//     carries the call out too, since nothing beneath such an entry is
//     protected;
//   - beneath a protected entry, lets the kernel refuse it.
//
// A call the supervisor carries out is made on its own copy of the
// arguments, from a descriptor of the parent directory with a single name
// (no path the program could change meanwhile), by a thread that holds no
// capability and sits in a Landlock domain of its own that lets it write
// only beneath the writable roots (deputy.Thread, spawn.RestrictThread):
// no more than the policy gives the program. A file it opens is handed to
// the program with SECCOMP_IOCTL_NOTIF_ADDFD.
package fsmed

import (
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/seccomp"
)

// Config is what a Mediator enforces: made by the decision, stored with the
// recipe (supervisor.ServiceRecord).
type Config struct {
	// Dirs are the split directories.
	Dirs []Dir `json:"dirs"`
	// Roots are the directories the mediating thread may write beneath:
	// the writable roots and the private temp dir.
	Roots []string `json:"roots"`
	// ABI is the kernel's Landlock ABI, for the thread's domain.
	ABI int `json:"abi"`
	// OnDenial receives each call refused for a protected name.
	OnDenial func(Denial) `json:"-"`
}

// Dir is a split directory: its canonical path, its identity as the
// decision saw it (0 for a root the run makes at its start), and the names
// in it that are never made, removed, renamed or replaced: the denied
// entries and the directories above denied paths (landlock.Split).
type Dir struct {
	Path  string   `json:"path"`
	Dev   uint64   `json:"dev,omitempty"`
	Ino   uint64   `json:"ino,omitempty"`
	Names []string `json:"names"`
	// Git: the directory lies in a writable git directory
	// (--allow-git-commit). There, and beneath the entries made in it
	// during the run, no symbolic link, FIFO, socket or device is made
	// and nothing is renamed or linked from or to another directory:
	// what the program's own rules withhold beneath it
	// (landlock.GitWithheld).
	Git bool `json:"git,omitempty"`
}

// protects reports whether name (as the program gave it, trailing slashes
// taken away) is one of d's protected names. Names are compared without
// regard to case: on a case-folding directory (ext4's casefold) .GIT is
// .git, and nowhere is refusing to make .GIT a loss.
func (d *Dir) protects(name string) bool {
	for _, n := range d.Names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// Denial is one call refused for a protected name.
type Denial struct {
	Time    time.Time
	Pid     int
	Syscall string
	// Path is the path as the program gave it; Dir the split directory
	// it led to.
	Path, Dir string
	Errno     string
	Reason    string
}

// Mediator carries out the mediated file calls under a Config.
type Mediator struct {
	cfg Config
	// st is found at the first call (setUp); failed says it could not
	// be, and err why.
	mu     sync.Mutex
	st     *state
	failed bool
	err    error
}

// Err says why the Mediator lets the kernel decide every call (it could not
// set itself up), or nil.
func (m *Mediator) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// New returns a Mediator for cfg. Nothing is looked at before the first
// call: what the program sees is found through its own root then.
func New(cfg Config) *Mediator { return &Mediator{cfg: cfg} }

// Handles reports whether nr is one of the calls Mediate carries out or
// passes on (seccomp.FileCalls), for a server that also mediates others.
func Handles(nr int32) bool {
	_, ok := decode(&seccomp.Call{Notif: seccomp.Notif{Nr: nr}})
	return ok
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}
