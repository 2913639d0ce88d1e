/*
 * The supervisor's own Landlock domain (scope.c): abstract unix sockets
 * scoped, nothing else handled, taken by the whole process before the Go
 * runtime or the runner starts a thread or a child.
 */
#ifndef SE_SCOPE_H
#define SE_SCOPE_H

/* The Landlock facts scope.c needs before Go runs (spawn's tests check
 * them against package landlock's table): the ABI that added scoping, and
 * LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET. */
#define SE_SCOPE_MIN_ABI 6
#define SE_SCOPE_ABSTRACT_UNIX 1ULL

/* se_supervisor_scoped reports whether this process took the domain: 1
 * when it did, 0 when it did not (no "--" with a program after it, a
 * kernel below SE_SCOPE_MIN_ABI, or the kernel refused). */
int se_supervisor_scoped(void);

#endif
