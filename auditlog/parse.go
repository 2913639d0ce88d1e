// Package auditlog reads a run's Landlock denials from the kernel's audit
// log: the records the kernel sends to the audit netlink socket's
// multicast group (AUDIT_NLGRP_READLOG, which CAP_AUDIT_READ may join), of
// which it keeps only those of the run's own Landlock domain (Run).
//
// The records are text the kernel writes, with some fields a sandboxed
// program chooses (a path it names, its command name). The kernel writes
// every such field either quoted, when it holds only printable characters
// other than space and the double quote, or as upper-case hex: no value
// holds a space, so a record is a sequence of name=value tokens that a
// program cannot add to. Parse takes exactly that form and refuses
// anything else.
package auditlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Record types (include/uapi/linux/audit.h).
const (
	TypeSyscall        = 1300 // AUDIT_SYSCALL
	TypeEOE            = 1320 // AUDIT_EOE: the end of a multi-record event
	TypeLandlockAccess = 1423 // AUDIT_LANDLOCK_ACCESS
	TypeLandlockDomain = 1424 // AUDIT_LANDLOCK_DOMAIN
)

// maxRecord bounds a record's text: the kernel's own limit
// (MAX_AUDIT_MESSAGE_LENGTH) with room for its header.
const maxRecord = 9000

// Stamp is an event's identity, "audit(SECONDS.MILLIS:SERIAL)": every
// record of one event has the same.
type Stamp struct {
	Sec    uint64
	Milli  uint16
	Serial uint32
}

// Access is an AUDIT_LANDLOCK_ACCESS record: one request a domain denied.
type Access struct {
	Stamp
	// Domain is the ID of the domain that denied it.
	Domain uint64
	// Blockers are the missing rights ("fs.write_file", "fs.make_reg",
	// "net.connect_tcp", "scope.signal", ...).
	Blockers []string
	// Path is the object's path (for a right on a directory's entries,
	// make_* or remove_*, the directory's), or Name its last name when
	// the kernel gives only that; Dev and Ino name the inode.
	Path, Name, Dev string
	Ino             uint64
	HasIno          bool
	// IoctlCmd is the command of a denied ioctl_dev.
	IoctlCmd string
}

// Domain is an AUDIT_LANDLOCK_DOMAIN record. Allocated (the first time a
// domain shows in the log) names its creator as it was when it created
// the domain: Pid, UID, Exe, Comm. Otherwise the domain is gone and
// Denials is how many requests it denied, logged or not.
type Domain struct {
	Stamp
	ID        uint64
	Allocated bool
	Pid       int
	UID       uint32
	Exe, Comm string
	Denials   uint64
}

// Syscall is the part of an AUDIT_SYSCALL record a denial line shows:
// the call that was denied and who made it.
type Syscall struct {
	Stamp
	Number  int
	Success bool
	Exit    int64
	Pid     int
	Comm    string
	Exe     string
}

// EOE is the end of an event (AUDIT_EOE).
type EOE struct{ Stamp }

// ErrIgnored is Parse's answer for a record of a type it does not read.
var ErrIgnored = errors.New("auditlog: a record of another type")

// Parse reads one record, its type from the netlink header and its text
// as the kernel sent it; it returns an Access, Domain, Syscall or EOE, or
// an error for text that is not of the kernel's form.
func Parse(typ uint16, data []byte) (any, error) {
	switch typ {
	case TypeSyscall, TypeEOE, TypeLandlockAccess, TypeLandlockDomain:
	default:
		return nil, ErrIgnored
	}
	if len(data) > maxRecord {
		return nil, fmt.Errorf("auditlog: a record of %d bytes", len(data))
	}
	// The kernel's text may end in a NUL; nothing else may.
	data = bytes.TrimSuffix(data, []byte{0})
	st, rest, err := parseStamp(data)
	if err != nil {
		return nil, err
	}
	if typ == TypeEOE {
		if len(rest) != 0 {
			return nil, errors.New("auditlog: an end of event with text")
		}
		return EOE{st}, nil
	}
	// A syscall record goes on, after the process's executable, with
	// what the host's configuration writes (an LSM's label, which may
	// hold a space, an audit rule's key): read up to the executable.
	stop := ""
	if typ == TypeSyscall {
		stop = "exe"
	}
	f, err := fields(rest, stop)
	if err != nil {
		return nil, err
	}
	switch typ {
	case TypeLandlockAccess:
		return parseAccess(st, f)
	case TypeLandlockDomain:
		return parseDomain(st, f)
	default:
		return parseSyscall(st, f)
	}
}

// parseStamp reads "audit(SECONDS.MMM:SERIAL): ".
func parseStamp(b []byte) (Stamp, []byte, error) {
	var st Stamp
	s := string(b)
	rest, ok := strings.CutPrefix(s, "audit(")
	end := strings.Index(rest, "): ")
	if !ok || end < 0 {
		// An event with no fields at all ends in "): " alone or ")".
		if ok && strings.HasSuffix(rest, "):") {
			end = len(rest) - 2
		} else {
			return st, nil, errors.New("auditlog: no audit(...) stamp")
		}
	}
	stamp := rest[:end]
	body := ""
	if end+3 <= len(rest) {
		body = rest[end+3:]
	}
	dot, colon := strings.IndexByte(stamp, '.'), strings.IndexByte(stamp, ':')
	if dot < 0 || colon < dot || colon-dot != 4 {
		return st, nil, fmt.Errorf("auditlog: stamp %q", stamp)
	}
	sec, err1 := parseUint(stamp[:dot], 64)
	// The milliseconds are three digits, zeros included (%03lu).
	ms, err2 := strconv.ParseUint(stamp[dot+1:colon], 10, 16)
	if err2 == nil && strings.ContainsAny(stamp[dot+1:colon], "+-") {
		err2 = errors.New("a sign")
	}
	serial, err3 := parseUint(stamp[colon+1:], 32)
	if err := errors.Join(err1, err2, err3); err != nil || ms > 999 {
		return st, nil, fmt.Errorf("auditlog: stamp %q", stamp)
	}
	st = Stamp{Sec: sec, Milli: uint16(ms), Serial: uint32(serial)}
	return st, []byte(body), nil
}

// parseUint reads a decimal number: digits only, no sign, no leading zero
// but for 0 itself.
func parseUint(s string, bits int) (uint64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("auditlog: number %q", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("auditlog: number %q", s)
		}
	}
	return strconv.ParseUint(s, 10, bits)
}

// parseHexID reads a lower-case hex number without prefix (a domain ID).
func parseHexID(s string) (uint64, error) {
	if s == "" || len(s) > 16 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("auditlog: domain %q", s)
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return 0, fmt.Errorf("auditlog: domain %q", s)
		}
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("auditlog: domain %q", s)
	}
	return v, nil
}

// field is one name=value of a record, value as written.
type field struct{ name, value string }

// record is a record's fields, in order, each name once.
type record []field

func (r record) get(name string) (string, bool) {
	for _, f := range r {
		if f.name == name {
			return f.value, true
		}
	}
	return "", false
}

// fields splits a record's text into its name=value tokens, separated by
// single spaces: a name of lower-case letters, digits, '_' and '-', a
// value of printable characters but the space, and no name twice; after
// the field named stop (when not ""), the rest is not read. A record
// without stop is refused.
func fields(b []byte, stop string) (record, error) {
	var r record
	s := string(b)
	if s == "" {
		return r, nil
	}
	for tok := range strings.SplitSeq(s, " ") {
		name, value, ok := strings.Cut(tok, "=")
		if !ok || !validName(name) || value == "" {
			return nil, fmt.Errorf("auditlog: token %q", truncate(tok))
		}
		for i := 0; i < len(value); i++ {
			if value[i] < 0x21 || value[i] > 0x7e {
				return nil, fmt.Errorf("auditlog: %s: a value with a control character", name)
			}
		}
		if _, dup := r.get(name); dup {
			return nil, fmt.Errorf("auditlog: %s twice", name)
		}
		r = append(r, field{name, value})
		if name == stop {
			return r, nil
		}
	}
	if stop != "" {
		return nil, fmt.Errorf("auditlog: no %s", stop)
	}
	return r, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// untrusted decodes a value the kernel wrote with
// audit_log_untrustedstring: quoted (no quote inside: a string with one
// is hex), or upper-case hex of an even length.
func untrusted(name, v string) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		in := v[1 : len(v)-1]
		if strings.IndexByte(in, '"') >= 0 {
			return "", fmt.Errorf("auditlog: %s: a quote inside quotes", name)
		}
		return in, nil
	}
	if len(v)%2 != 0 {
		return "", fmt.Errorf("auditlog: %s: neither quoted nor hex", name)
	}
	for i := 0; i < len(v); i++ {
		if !(v[i] >= '0' && v[i] <= '9' || v[i] >= 'A' && v[i] <= 'F') {
			return "", fmt.Errorf("auditlog: %s: neither quoted nor hex", name)
		}
	}
	b, err := hex.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("auditlog: %s: %w", name, err)
	}
	return string(b), nil
}

// accessFields are the fields an access record may have after domain and
// blockers: the object's, for each kind of object Landlock names
// (security/lsm_audit.c's audit_log_lsm_data). The untrusted ones are
// decoded; the others are checked for their form.
var accessFields = map[string]func(*Access, string) error{
	"path": func(a *Access, v string) (err error) { a.Path, err = untrusted("path", v); return },
	"name": func(a *Access, v string) (err error) { a.Name, err = untrusted("name", v); return },
	"dev":  func(a *Access, v string) (err error) { a.Dev, err = untrusted("dev", v); return },
	"ino": func(a *Access, v string) (err error) {
		a.Ino, err = parseUint(v, 64)
		a.HasIno = err == nil
		return
	},
	"ioctlcmd": func(a *Access, v string) error {
		if !strings.HasPrefix(v, "0x") || len(v) > 6 {
			return fmt.Errorf("auditlog: ioctlcmd %q", v)
		}
		if _, err := strconv.ParseUint(v[2:], 16, 16); err != nil {
			return fmt.Errorf("auditlog: ioctlcmd %q", v)
		}
		a.IoctlCmd = v
		return nil
	},
	// A signal's target (scope.signal) and a socket's addresses: kept
	// out of a denial line, but of their form.
	"opid":  func(_ *Access, v string) error { _, err := parseUint(v, 32); return err },
	"ocomm": func(_ *Access, v string) error { _, err := untrusted("ocomm", v); return err },
	"laddr": plain, "lport": plain, "faddr": plain, "fport": plain,
	"saddr": plain, "src": plain, "daddr": plain, "dest": plain, "netif": plain,
}

// plain accepts a value the kernel formats itself (an address, a port, an
// interface name): any token fields accepted.
func plain(*Access, string) error { return nil }

func parseAccess(st Stamp, r record) (Access, error) {
	a := Access{Stamp: st}
	if len(r) < 2 || r[0].name != "domain" || r[1].name != "blockers" {
		return a, errors.New("auditlog: an access record that does not start with domain and blockers")
	}
	var err error
	if a.Domain, err = parseHexID(r[0].value); err != nil {
		return a, err
	}
	for _, b := range strings.Split(r[1].value, ",") {
		if !validBlocker(b) {
			return a, fmt.Errorf("auditlog: blocker %q", truncate(b))
		}
		a.Blockers = append(a.Blockers, b)
	}
	for _, f := range r[2:] {
		set, ok := accessFields[f.name]
		if !ok {
			return a, fmt.Errorf("auditlog: an access record with %s", f.name)
		}
		if err := set(&a, f.value); err != nil {
			return a, err
		}
	}
	return a, nil
}

// validBlocker: "fs.write_file", "net.connect_tcp", "scope.signal", and
// the kernel's "unknown".
func validBlocker(b string) bool {
	if b == "unknown" {
		return true
	}
	kind, right, ok := strings.Cut(b, ".")
	if !ok || right == "" || len(b) > 40 {
		return false
	}
	switch kind {
	case "fs", "net", "scope":
	default:
		return false
	}
	for i := 0; i < len(right); i++ {
		if !(right[i] >= 'a' && right[i] <= 'z' || right[i] == '_') {
			return false
		}
	}
	return true
}

func parseDomain(st Stamp, r record) (Domain, error) {
	d := Domain{Stamp: st}
	if len(r) < 2 || r[0].name != "domain" || r[1].name != "status" {
		return d, errors.New("auditlog: a domain record that does not start with domain and status")
	}
	var err error
	if d.ID, err = parseHexID(r[0].value); err != nil {
		return d, err
	}
	names := make([]string, len(r))
	for i, f := range r {
		names[i] = f.name
	}
	switch r[1].value {
	case "allocated":
		if strings.Join(names, " ") != "domain status mode pid uid exe comm" {
			return d, fmt.Errorf("auditlog: an allocated domain with fields %s", truncate(strings.Join(names, ",")))
		}
		d.Allocated = true
		pid, err1 := parseUint(r[3].value, 31)
		uid, err2 := parseUint(r[4].value, 32)
		exe, err3 := untrusted("exe", r[5].value)
		comm, err4 := untrusted("comm", r[6].value)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return d, err
		}
		d.Pid, d.UID, d.Exe, d.Comm = int(pid), uint32(uid), exe, comm
		return d, nil
	case "deallocated":
		if strings.Join(names, " ") != "domain status denials" {
			return d, fmt.Errorf("auditlog: a deallocated domain with fields %s", truncate(strings.Join(names, ",")))
		}
		d.Denials, err = parseUint(r[2].value, 64)
		return d, err
	}
	return d, fmt.Errorf("auditlog: domain status %q", truncate(r[1].value))
}

func parseSyscall(st Stamp, r record) (Syscall, error) {
	s := Syscall{Stamp: st}
	var errs []error
	need := func(name string) string {
		v, ok := r.get(name)
		if !ok {
			errs = append(errs, fmt.Errorf("auditlog: a syscall record without %s", name))
		}
		return v
	}
	nr, err := parseUint(need("syscall"), 31)
	errs = append(errs, err)
	s.Number = int(nr)
	switch need("success") {
	case "yes":
		s.Success = true
	case "no":
	default:
		errs = append(errs, errors.New("auditlog: success neither yes nor no"))
	}
	exit := need("exit")
	s.Exit, err = strconv.ParseInt(exit, 10, 64)
	if err != nil || strings.HasPrefix(exit, "+") {
		errs = append(errs, fmt.Errorf("auditlog: exit %q", truncate(exit)))
	}
	pid, err := parseUint(need("pid"), 31)
	errs = append(errs, err)
	s.Pid = int(pid)
	s.Comm, err = untrusted("comm", need("comm"))
	errs = append(errs, err)
	// An exe of "(null)": a process with no executable (a kernel thread).
	if exe := need("exe"); exe != "(null)" {
		s.Exe, err = untrusted("exe", exe)
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}
