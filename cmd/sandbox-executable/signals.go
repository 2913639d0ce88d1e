package main

/*
// se_is_helper marks this binary as the helper: its first constructors
// block the signals a run forwards (spawn/runner.c's se_block_signals),
// which a test binary linking package spawn must not.
int se_is_helper = 1;
*/
import "C"

import (
	"runtime"

	"golang.org/x/sys/unix"

	"sandbox-executable/spawn"
)

// unblockSignals gives a command that runs nothing (doctor, --explain)
// the forwarded signals' default actions back: the helper's binary catches
// them for the runner (spawn's relay), and blocks them in its first thread.
func unblockSignals() {
	spawn.StopRelaying()
	runtime.LockOSThread()
	var set unix.Sigset_t
	for _, s := range spawn.Forwarded() {
		set.Val[(int(s)-1)/64] |= 1 << ((uint(s) - 1) % 64)
	}
	_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
}
