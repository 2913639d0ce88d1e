/*
 * Signals the supervisor forwards, caught without a Go signal thread:
 * os/signal.Notify parks a goroutine in the runtime's signal queue, which
 * takes an OS thread of its own on every run. Here the handler writes the
 * signal's number to a non-blocking pipe that Go reads through its poller
 * (no thread blocked), and the actions found before are put back after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sigcatch.h"

/* The kernel's struct sigaction: saved and restored exactly as the Go
 * runtime set it (its own restorer included). */
struct se_ksigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	unsigned long mask;
};

static volatile int se_catch_fd = -1;
static struct se_ksigaction se_caught_old[65];
static unsigned char se_caught[65];

static void se_catch_handler(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	/* A full pipe drops the signal: 64 KiB of them are pending already. */
	syscall(SYS_write, se_catch_fd, &b, 1);
	errno = saved;
}

int se_catch_signals(int fd, const int *sigs, int n)
{
	struct sigaction sa;

	se_catch_fd = fd;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = se_catch_handler;
	/* SA_ONSTACK: Go's threads run handlers on their signal stacks. */
	sa.sa_flags = SA_RESTART | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	for (int i = 0; i < n; i++) {
		int s = sigs[i];
		if (s < 1 || s > 64)
			return -EINVAL;
		if (!se_caught[s]) {
			if (syscall(SYS_rt_sigaction, s, 0, &se_caught_old[s], 8) < 0)
				return -errno;
		}
		if (sigaction(s, &sa, 0) < 0)
			return -errno;
		se_caught[s] = 1;
	}
	return 0;
}

void se_release_signals(void)
{
	for (int s = 1; s <= 64; s++) {
		if (se_caught[s]) {
			syscall(SYS_rt_sigaction, s, &se_caught_old[s], 0, 8);
			se_caught[s] = 0;
		}
	}
	se_catch_fd = -1;
}
