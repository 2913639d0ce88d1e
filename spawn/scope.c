/*
 * The supervisor's own Landlock domain. The supervisor carries out the
 * program's mediated socket calls itself (package sockmed), and the kernel
 * checks Landlock's scoping of abstract unix sockets (ABI 6) against the
 * domain of the caller: outside every domain, a connect or send the
 * supervisor makes for the program would reach any host daemon's abstract
 * socket. So the helper takes a domain that scopes abstract unix sockets
 * and handles nothing else, before it starts its init: the program's domain
 * then nests in it, and a mediated call is checked by the kernel as the
 * program's own would be. The sandbox's sockets (made beneath this domain)
 * are reached; a host daemon's, another run's, or one made outside and
 * passed in are refused with EPERM.
 *
 * Every thread that makes mediated calls must hold the very same domain:
 * landlock_restrict_self gives the calling thread a new domain each time,
 * and domains made by two threads (libpsx restricts each thread so) scope
 * each other out. Only a process that restricts itself while it has one
 * thread gives all its later threads, its init and so its program one
 * domain: this constructor runs before the Go runtime and the warm path's
 * runner (warm.c) start anything, so every shape a run takes (the runner
 * before Go, spawn.RunRecipe, supervisor.Run, and Go adopting a warm run)
 * finds it in place.
 *
 * The domain handles no filesystem or network right: Landlock leaves
 * mounts, renames and every file the supervisor opens alone (a domain
 * without filesystem rights is no filesystem domain to it). What it does
 * change for the supervisor: abstract sockets outside the domain cannot be
 * connected to (it makes no such connection of its own), and ptrace-style
 * access (/proc/PID/fd, pidfd_getfd, process_vm_readv) reaches only
 * processes in the domain or beneath it, the sandbox's.
 *
 * It is taken only by a process whose arguments have a "--" with a program
 * after it, as every invocation that runs a program from a harness has
 * (VT Code's always do): doctor, --help and the Go test binaries that link
 * this package are left as they are. A run without one mediates abstract
 * sockets the way a kernel without scoping needs (sockmed's held check).
 * Without CAP_SYS_ADMIN the kernel wants no_new_privs first: it is set then,
 * on a process that never execs anything but the program, which gets it
 * anyway.
 */
#define _GNU_SOURCE
#include "scope.h"
#include "recipekey.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SE_LANDLOCK_CREATE_RULESET_VERSION 1U

static int se_scoped;

/* se_has_program reports whether argv has a "--" followed by an element. */
static int se_has_program(void)
{
	int argc = se_recipe_argc();
	char **argv = se_recipe_argv();
	if (!argv)
		return 0;
	for (int i = 1; i < argc && argv[i]; i++)
		if (strcmp(argv[i], "--") == 0)
			return i + 1 < argc && argv[i + 1];
	return 0;
}

/* se_scope_self takes the domain; 1 when it did. */
static int se_scope_self(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, SE_LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < SE_SCOPE_MIN_ABI)
		return 0;
	/* struct landlock_ruleset_attr up to scoped: handled_access_fs,
	 * handled_access_net, scoped. */
	uint64_t attr[3] = {0, 0, SE_SCOPE_ABSTRACT_UNIX};
	int fd = (int)syscall(SYS_landlock_create_ruleset, attr, sizeof attr, 0);
	if (fd < 0)
		return 0;
	long ret = syscall(SYS_landlock_restrict_self, fd, 0);
	if (ret != 0 && errno == EPERM && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0 &&
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
		ret = syscall(SYS_landlock_restrict_self, fd, 0);
	close(fd);
	return ret == 0;
}

/* After the recipe key (102), which reads the process's credentials and
 * no_new_privs as the caller made them, and before the warm path (110),
 * whose runner starts the init. */
__attribute__((constructor(105))) static void se_scope_supervisor(void)
{
	int saved = errno;
	if (se_has_program())
		se_scoped = se_scope_self();
	errno = saved;
}

int se_supervisor_scoped(void)
{
	return se_scoped;
}
