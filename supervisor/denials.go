package supervisor

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"sandbox-executable/fsmed"
	"sandbox-executable/seccomp"
	"sandbox-executable/sockmed"
)

// Kinds of denials.
const (
	DenialSeccomp  = "seccomp"
	DenialNetwork  = "network"
	DenialLandlock = "landlock"
	// DenialUnixSocket is a socket call the supervisor refused to carry
	// out (a unix socket outside the writable roots).
	DenialUnixSocket = "unix_socket"
	// DenialProtectedName is a call that would have made, removed,
	// renamed or replaced a protected name (.git, ...) of a writable root
	// in Landlock-only mode, refused by the supervisor.
	DenialProtectedName = "protected_name"
	// DenialFile is a file access the run's Landlock domain refused, as
	// the kernel's audit log recorded it.
	DenialFile = "file"
)

// Denial is one operation the sandbox refused, as the supervisor saw it.
type Denial struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// seccomp: the call and who made it, and the errno it got.
	Pid     int    `json:"pid,omitempty"`
	Exe     string `json:"exe,omitempty"`
	Syscall string `json:"syscall,omitempty"`
	Number  *int   `json:"number,omitempty"`
	Arch    string `json:"arch,omitempty"`
	Errno   string `json:"errno,omitempty"`
	// network: the request the proxy refused and why.
	Method string `json:"method,omitempty"`
	Host   string `json:"host,omitempty"`
	Port   int    `json:"port,omitempty"`
	Client string `json:"client,omitempty"`
	Reason string `json:"reason,omitempty"`
	// unix_socket: the address as the program gave it ("@name" for an
	// abstract one), and where a path led in the program's view.
	Address  string `json:"address,omitempty"`
	Resolved string `json:"resolved,omitempty"`
	// protected_name: the path as the program gave it; file: as the
	// kernel names it in the program's view (for a name made or removed,
	// its directory's).
	Path string `json:"path,omitempty"`
	// file: the rights it lacked ("write_file", "make_reg"), the rule
	// that refused it ("outside the writable roots", "a denied path,
	// unreadable: /home/u/.ssh"), the policy entry it comes from, and
	// what would allow it ("--rw /etc allows it").
	Operation string `json:"operation,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Source    string `json:"source,omitempty"`
	Allow     string `json:"allow,omitempty"`
}

// DenialCounts are the denials of a run, by kind.
type DenialCounts struct {
	Seccomp    int64 `json:"seccomp"`
	Network    int64 `json:"network"`
	UnixSocket int64 `json:"unix_socket"`
	// Files counts the file denials the kernel recorded for the run.
	Files int64 `json:"files"`
}

// denials serializes the callbacks and counts.
type denials struct {
	mu      sync.Mutex
	out     func(Denial)
	seccomp atomic.Int64
	network atomic.Int64
	sockets atomic.Int64
	files   atomic.Int64
}

func (d *denials) record(x Denial) {
	switch x.Kind {
	case DenialSeccomp:
		d.seccomp.Add(1)
	case DenialNetwork:
		d.network.Add(1)
	case DenialUnixSocket:
		d.sockets.Add(1)
	case DenialFile:
		d.files.Add(1)
	}
	if d.out == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.out(x)
}

func (d *denials) fromSeccomp(s seccomp.Denial) {
	n := s.Number
	d.record(Denial{Time: s.Time, Kind: DenialSeccomp, Pid: s.Pid, Exe: s.Exe, Syscall: s.Syscall, Number: &n, Arch: s.Arch, Errno: s.Errno})
}

func (d *denials) fromSockets(s sockmed.Denial) {
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(s.Pid) + "/exe")
	d.record(Denial{Time: s.Time, Kind: DenialUnixSocket, Pid: s.Pid, Exe: exe, Syscall: s.Syscall, Errno: s.Errno,
		Address: s.Address, Resolved: s.Resolved, Reason: s.Reason})
}

func (d *denials) fromFiles(f fsmed.Denial) {
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(f.Pid) + "/exe")
	d.record(Denial{Time: f.Time, Kind: DenialProtectedName, Pid: f.Pid, Exe: exe, Syscall: f.Syscall, Errno: f.Errno,
		Path: f.Path, Resolved: f.Dir, Reason: f.Reason})
}

func (d *denials) counts() DenialCounts {
	return DenialCounts{Seccomp: d.seccomp.Load(), Network: d.network.Load(), UnixSocket: d.sockets.Load(), Files: d.files.Load()}
}
