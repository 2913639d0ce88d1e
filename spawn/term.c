/*
 * The caller's terminal, put back as the run found it: see term.h.
 */
#define _GNU_SOURCE
#include "term.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ctty returns the first of fds 0-2 that is the caller's controlling
 * terminal (TIOCGPGRP answers on no other) and its foreground group. */
static int ctty(pid_t *fg)
{
	for (int fd = 0; fd < 3; fd++)
		if (ioctl(fd, TIOCGPGRP, fg) == 0)
			return fd;
	return -1;
}

int se_term_shared_signal(int sig)
{
	pid_t fg;
	return (sig == SIGINT || sig == SIGQUIT || sig == SIGWINCH) && ctty(&fg) >= 0 && fg == getpgrp();
}

void se_term_save(struct se_term *t)
{
	memset(t, 0, sizeof *t);
	for (int fd = 0; fd < 3; fd++) {
		struct termios m;
		t->flags[fd] = tcgetattr(fd, &m) == 0 ? fcntl(fd, F_GETFL) : -1;
	}
	pid_t fg;
	t->fd = ctty(&fg);
	if (t->fd < 0)
		return;
	if (fg == getpgrp()) {
		t->pgrp = (int32_t)fg;
		pid_t parent = getppid();
		t->linked = parent > 0 && getsid(parent) == getsid(0) && getpgid(parent) != fg;
	}
	t->moded = tcgetattr(t->fd, &t->mode) == 0;
}

void se_term_started(struct se_term *t)
{
	pid_t fg;
	t->prog_pgrp = 0;
	if (t->pgrp && ioctl(t->fd, TIOCGPGRP, &fg) == 0 && fg != t->pgrp)
		t->prog_pgrp = (int32_t)fg;
}

int se_term_continue(const struct se_term *t)
{
	pid_t fg, pgrp = t->prog_pgrp;
	if (pgrp <= 0)
		return 0;
	int saved = errno;
	if (ioctl(t->fd, TIOCGPGRP, &fg) == 0 && fg == getpgrp())
		ioctl(t->fd, TIOCSPGRP, &pgrp);
	kill(-pgrp, SIGCONT);
	errno = saved;
	return 1;
}

/* stopped reports whether the process pid is stopped now: a stop the init
 * said may have been continued since (by fg, or from outside). */
static int stopped(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *end = strrchr(buf, ')');
	return end && end[1] == ' ' && (end[2] == 'T' || end[2] == 't');
}

int se_term_follow_stop(struct se_term *t, int sig)
{
	int saved = errno;
	/* The program leads its group: its pid is the group's. */
	if (t->prog_pgrp <= 0 || !stopped(t->prog_pgrp))
		return 0;
	/* This process's group holding the terminal means the caller's shell
	 * gave it to the job since the stop (fg): nothing to follow, the job
	 * goes on. */
	pid_t fg;
	if (ioctl(t->fd, TIOCGPGRP, &fg) != 0 || fg != getpgrp()) {
		if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
			sig = SIGSTOP;
		/* To this thread, unblocked, at the signal's default action:
		 * the stop (or its discard) happens before the call returns. */
		struct sigaction dfl, old;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigaction(sig, &dfl, &old);
		sigset_t one, mask;
		sigemptyset(&one);
		sigaddset(&one, sig);
		pthread_sigmask(SIG_UNBLOCK, &one, &mask);
		syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		sigaction(sig, &old, NULL);
	}
	errno = saved;
	return se_term_continue(t);
}

static int same_mode(const struct termios *a, const struct termios *b)
{
	return a->c_iflag == b->c_iflag && a->c_oflag == b->c_oflag && a->c_cflag == b->c_cflag &&
	       a->c_lflag == b->c_lflag && a->c_line == b->c_line && memcmp(a->c_cc, b->c_cc, sizeof a->c_cc) == 0 &&
	       cfgetispeed(a) == cfgetispeed(b) && cfgetospeed(a) == cfgetospeed(b);
}

void se_term_restore(const struct se_term *t)
{
	int saved = errno;
	for (int fd = 0; fd < 3; fd++) {
		int now = t->flags[fd] >= 0 ? fcntl(fd, F_GETFL) : -1;
		if (now >= 0 && now != t->flags[fd])
			fcntl(fd, F_SETFL, t->flags[fd]);
	}
	if (t->fd < 0) {
		errno = saved;
		return;
	}
	/* A background process's TIOCSPGRP and TCSETS stop it with SIGTTOU:
	 * ignored here, the foreground check below is what keeps a run in
	 * the background from touching a terminal another job has. */
	struct sigaction ign, old;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGTTOU, &ign, &old);
	pid_t fg;
	if (ioctl(t->fd, TIOCGPGRP, &fg) == 0) {
		pid_t own = getpgrp();
		if (t->pgrp == own && fg != own && kill(-fg, 0) < 0 && errno == ESRCH &&
		    ioctl(t->fd, TIOCSPGRP, &own) == 0)
			fg = own;
		struct termios now;
		if (fg == own && t->moded && tcgetattr(t->fd, &now) == 0 && !same_mode(&now, &t->mode))
			tcsetattr(t->fd, TCSANOW, &t->mode);
		if (fg == own)
			tcflow(t->fd, TCOON);
	}
	sigaction(SIGTTOU, &old, NULL);
	errno = saved;
}
