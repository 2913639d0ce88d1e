package spawn

/*
#include "term.h"
*/
import "C"

import "syscall"

// Terminal is the caller's terminal as a run found it, to put back when the
// run ends (term.h): the program may change its settings, the file status
// flags of the descriptions it shares with the caller, its output flow and
// its foreground group while it runs.
type Terminal struct {
	t C.struct_se_term
}

// SaveTerminal records the caller's terminal before the program starts.
func SaveTerminal() *Terminal {
	t := &Terminal{}
	C.se_term_save(&t.t)
	return t
}

// Foreground returns the caller's controlling terminal among fds 0-2,
// whether this process's group was its foreground group (the program then
// takes the terminal: Request.TakeForeground), and whether that group is
// not orphaned (Request.Linked).
func (t *Terminal) Foreground() (fd int, linked, ok bool) {
	if t == nil {
		return -1, false, false
	}
	return int(t.t.fd), t.t.linked != 0, t.t.pgrp != 0
}

// Started records, once the program runs, the group it gave the terminal
// to.
func (t *Terminal) Started() {
	if t != nil {
		C.se_term_started(&t.t)
	}
}

// FollowStop follows a stop of the program by sig (Process.Notes): this
// process stops with the same signal, as the program's job would, and the
// kernel discards that where this process's group is orphaned (VT Code's
// PTY session leader); once continued (or at once), it continues the
// program (Continue). It reports whether it did, false when the program was
// no longer stopped.
func (t *Terminal) FollowStop(sig syscall.Signal) bool {
	return t != nil && C.se_term_follow_stop(&t.t, C.int(sig)) != 0
}

// Continue continues a program that took the terminal, at once, giving its
// group the terminal where the caller's shell gave it to this process's
// (fg after a stop); false, doing nothing, for a program that took none.
func (t *Terminal) Continue() bool {
	return t != nil && C.se_term_continue(&t.t) != 0
}

// Restore puts the terminal back, once the program and its tree are gone:
// the foreground to this process's group where the program's group took it
// and is gone, the file status flags, and the settings and output flow
// while this process's group has the terminal. A nil Terminal restores
// nothing.
func (t *Terminal) Restore() {
	if t != nil {
		C.se_term_restore(&t.t)
	}
}

// TerminalSentIt reports whether sig, caught by this process, came from the
// caller's terminal to its whole foreground group, this process's and the
// program's: passing it on would deliver it twice (Ctrl-C, Ctrl-\, a
// resize).
func TerminalSentIt(sig syscall.Signal) bool {
	return C.se_term_shared_signal(C.int(sig)) != 0
}
