/*
 * The caller's terminal: the program's job control, and the terminal put
 * back as the run found it. A program whose standard descriptors include
 * the caller's controlling terminal shares it as a plain exec would
 * (stage.c, se_place_program): what changes the terminal for others (its
 * line discipline, exclusive mode, input injection) the seccomp filter
 * refuses, and what is the program's to change while it runs is undone
 * when the run ends: the terminal's settings (stty -echo, raw mode), the
 * file status flags of the open file descriptions it shares with the
 * caller's shell (O_NONBLOCK), suspended output (tcflow), and the
 * foreground process group, which the program takes when the caller's
 * group had it. A program in a group of its own stops apart from this
 * process: the runner follows its stops, as sudo follows its command's,
 * so that the caller's shell sees the job stop, takes its terminal back,
 * and continues it with fg or bg.
 */
#ifndef SE_TERM_H
#define SE_TERM_H

#include <stdint.h>
#include <termios.h>

struct se_term {
	/* The caller's controlling terminal among fds 0-2, or -1. */
	int32_t fd;
	/* This process's group, when it was that terminal's foreground
	 * group; else 0. */
	int32_t pgrp;
	/* mode holds the terminal's settings. */
	int32_t moded;
	/* The file status flags of fds 0-2 that are terminals, or -1. */
	int32_t flags[3];
	/* With pgrp: this process's group is not orphaned, as a job-control
	 * shell's job is not (its parent is in another group of the same
	 * session); VT Code's PTY session leader's is orphaned. */
	int32_t linked;
	/* The program's group, where it took the foreground (se_term_started);
	 * else 0. */
	int32_t prog_pgrp;
	struct termios mode;
};

/* se_term_save records the terminal as it is, before the program runs. */
void se_term_save(struct se_term *t);

/* se_term_started records, once the program runs, the group it gave the
 * terminal to (its own, where it took the foreground). */
void se_term_started(struct se_term *t);

/* se_term_follow_stop follows a stop of the program (the init saw it
 * stopped by sig): this process stops with the same signal, as the
 * program's job would, which the kernel discards where this process's
 * group is orphaned (VT Code's PTY session leader) and otherwise makes
 * the caller's shell see the job stopped and take its terminal back. Once
 * continued (fg, bg) or at once (discarded), it continues the program
 * (se_term_continue); where the caller's shell has given the job the
 * terminal since the stop (fg), it only continues it. It returns 0 when
 * there was nothing to follow: the program is no longer stopped. */
int se_term_follow_stop(struct se_term *t, int sig);

/* se_term_continue continues the program that took the terminal, at
 * once (its group, directly: a stop said before this is then seen to be
 * over), first giving its group the terminal when this process's group
 * has it (the caller's shell gave it back to the job: fg). It returns 0,
 * doing nothing, when the program took no terminal. */
int se_term_continue(const struct se_term *t);

/* se_term_restore, once the program and its tree are gone, gives the
 * foreground back to this process's group when it had it and the group
 * that took it is gone, restores the file status flags, and, while this
 * process's group is the foreground group, the settings and the output
 * flow. A background run leaves the settings to the job that has the
 * terminal, as the kernel would make it (SIGTTOU). */
void se_term_restore(const struct se_term *t);

/* se_term_shared_signal reports whether sig, caught by this process, is
 * one the caller's controlling terminal sends its whole foreground group
 * (Ctrl-C, Ctrl-\, a resize) while that group is this process's: the
 * program, which then shares the group, had it already, and passing it on
 * would deliver it twice. */
int se_term_shared_signal(int sig);

#endif
