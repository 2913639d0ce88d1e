/*
 * The spawn stage: the only code that runs in the sandboxed child between
 * clone and execve. It decides nothing. Go prepares every value in C memory
 * (struct se_req) and this code applies them in a fixed order with raw system
 * calls, then execs. The child shares the supervisor's memory (CLONE_VM) and
 * runs on its own stack while the creating thread is suspended (CLONE_VFORK),
 * so it must not call into Go, allocate, or touch errno or any other
 * thread-local state of the C library.
 */
#ifndef SE_STAGE_H
#define SE_STAGE_H

#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Steps, in the order the child runs them; reported on failure. */
enum se_step {
	SE_STEP_NONE = 0,
	SE_STEP_CLONE,     /* clone3/clone itself (reported by the parent) */
	SE_STEP_CGROUP,    /* joining a v1 cgroup (or the v2 one without clone3) */
	SE_STEP_OP,        /* one of the prepared namespace/mount operations */
	SE_STEP_RLIMIT,    /* prlimit */
	SE_STEP_PDEATHSIG, /* PR_SET_PDEATHSIG, or the parent already gone */
	SE_STEP_FDS,       /* close_range / keeping fds */
	SE_STEP_CAPS,      /* securebits, ambient and bounding sets, capset */
	SE_STEP_NNP,       /* PR_SET_NO_NEW_PRIVS */
	SE_STEP_LANDLOCK,  /* landlock_restrict_self */
	SE_STEP_SECCOMP,   /* seccomp(SECCOMP_SET_MODE_FILTER) */
	SE_STEP_SIGNALS,   /* restoring signal dispositions and mask */
	SE_STEP_EXEC,      /* execve of every candidate failed */
	SE_STEP_UNSHARE,   /* unshare(unshare_flags) after the cgroup joins */
	SE_STEP_INIT,      /* the namespace's init: starting the program */
};

struct se_init;

/* Kinds of prepared operations (se_op.kind). */
/*
 * Every host path an operation takes (a, and b where it names one) is
 * opened once, without following a symbolic link anywhere on its way
 * (openat2 RESOLVE_NO_SYMLINKS: the paths Go decided are canonical), checked
 * against the device and inode the decision saw (struct se_ident), and used
 * through that descriptor: a mount, bind, attribute change, chdir or rule
 * never follows a path a program can change between the decision and the
 * call. A path that is no longer the file decided fails the step with
 * ESTALE; nothing is mounted from it.
 */
enum se_op_kind {
	SE_OP_MOUNT = 1,   /* mount(a, b, c, flags, d); a bind (MS_BIND, no MS_REMOUNT) clones a's tree onto b */
	SE_OP_WRITE,       /* open(a, O_WRONLY) then write(b) (uid_map, setgroups) */
	SE_OP_CHDIR,       /* chdir(a) */
	SE_OP_SETATTR,     /* mount_setattr(a, AT_RECURSIVE if fd, {attr_set: flags}) */
	SE_OP_OPEN_TREE,   /* slot[fd] = open_tree(a, OPEN_TREE_CLONE|AT_RECURSIVE|O_CLOEXEC) */
	SE_OP_MOVE_MOUNT,  /* move_mount(slot[fd], "", a, MOVE_MOUNT_F_EMPTY_PATH) */
	SE_OP_LO_UP,       /* bring the loopback interface of the child's network namespace up */
	SE_OP_LISTEN_SEND, /* listen on addr:port (TCP) with backlog and send the socket over the unix socket fd */
	SE_OP_MKDIR,       /* mkdir(a, flags) */
	SE_OP_CREATE,      /* create the empty regular file a (mode flags), to mount a file on */
	SE_OP_SYMLINK,     /* symlink(a, b): b is a link to a */
	SE_OP_LANDLOCK_RULE, /* add a rule granting flags beneath the directory a to the ruleset; a missing a is skipped */
	SE_OP_OPEN_SEND,   /* open the directory a (O_PATH, not following a link) and send it over the unix socket fd */
};

#define SE_MAX_SLOTS 64
/* The most fds an init receives at its go: the v2 cgroup's
 * directory and cgroup.procs, and the v1 hierarchies' tasks files. */
#define SE_MAX_PASSED 10

/* What a path of an operation must be (se_op.ida, idb). */
enum se_ident_kind {
	SE_ID_NONE = 0,    /* made by the stage itself (its tmpfs), or /proc/self: not checked */
	SE_ID_FILE,        /* the file dev, ino: the decision saw it */
	SE_ID_PLACEHOLDER, /* a placeholder the run makes: the runner fills in dev, ino once it has */
	SE_ID_ANY,         /* opened without following a link, but not compared (a fresh mount's root) */
};

struct se_ident {
	int kind;
	int pad;
	uint64_t dev, ino;
};

struct se_op {
	int kind;
	int fd;
	unsigned long flags;
	const char *a, *b, *c, *d;
	struct se_ident ida, idb;
	/* SE_OP_MOUNT of an overlay: its lower directory is b, the target
	 * itself, given as its descriptor (lowerdir=/proc/self/fd/N). */
	int lower_is_target;
	/* SE_OP_LISTEN_SEND: the IPv4 address and port, in network order,
	 * and the listen backlog. */
	unsigned char addr[4], port[2];
	int backlog;
};

/* An exit code the child ends with when a step fails: the first rule whose
 * step and err (a positive errno) match decides; 0 in either matches any.
 * Go makes the table (spawn.exitRules) and maps the same failure to the
 * same code itself. */
struct se_exit_rule {
	int step, err, code;
};

struct se_rlimit {
	int resource;
	int pad; /* explicit: a recipe's records are copied byte for byte */
	uint64_t cur, max;
};

struct se_req {
	/* Program. paths are the execvp candidates, in order. */
	char *const *paths;
	int npaths;
	char *const *argv;
	char *const *envp;
	/* On ENOEXEC, run "/bin/sh path args..." as execvp does; sh_argv has
	 * room for that: sh_argv[1] is filled in by the child. */
	char **sh_argv;
	int sh_fallback;

	/* Placement. */
	int cgroup_fd;          /* v2 directory for CLONE_INTO_CGROUP, or -1 */
	int procs_fd;           /* with an init: that cgroup's cgroup.procs, to join without clone3, or -1 */
	const int *join_fds;    /* cgroup.procs fds to write "0" to */
	int njoin;
	unsigned long ns_flags; /* CLONE_NEW* flags for the child, or 0 */
	/* unshare(2) flags applied right after the cgroup joins (a cgroup
	 * namespace must be made once the child is in its cgroup), or 0. */
	unsigned long unshare_flags;
	/* Set: the child is the first process of a new PID namespace (see
	 * struct se_init) and starts the program as its own child. The clone
	 * makes only the user and PID namespaces; the init makes the others
	 * of ns_flags itself (unshare), so that their cost (a network
	 * namespace's is hundreds of microseconds) is not the caller's wait.
	 *
	 * The init is held, and cloned early: before the caller has made what
	 * its mounts need (placeholders, the temp dir) or what only the
	 * program needs (its cgroups, the rules of the Landlock ruleset whose
	 * fd the init already holds). It makes its namespaces, then waits for
	 * se_spawn_ops_go before its operations, and for se_spawn_finish's go
	 * before it starts the program; with that go it receives the caller's
	 * cgroup_fd, procs_fd and join_fds, in that order and only those set,
	 * which its fd table, copied at the clone, lacks, and uses its copies
	 * (se_init's passed) in their place. */
	struct se_init *init;
	/* Set by se_spawn_start: the init's socket pair (it reads go_r;
	 * go_w is the caller's, closed in the init), and the ready pipe's read
	 * end. */
	int go_r, go_w, ready_r;
	/* Set: a trial, not a run. The child exits 0 once the cgroup joins,
	 * the unshare and the operations have succeeded (no program). */
	int trial;

	const struct se_op *ops;
	int nops;
	int slots[SE_MAX_SLOTS]; /* fds made by SE_OP_OPEN_TREE, in the child */

	const struct se_rlimit *rlimits;
	int nrlimits;

	int pdeathsig;    /* the child's parent-death signal (an init's too), or 0 */
	pid_t parent_pid; /* set by se_spawn */

	/* Exit codes for failed steps (struct se_exit_rule). */
	const struct se_exit_rule *exit_rules;
	int nexit_rules;
	/* Set: where clone3 answers ENOSYS, the child (clone_fallback) or an
	 * init's program (prog_clone_fallback) is made with the legacy clone;
	 * unset, the ENOSYS is the answer (a clone into a cgroup, which only
	 * clone3 can do, and no other way to join it). */
	int clone_fallback;
	int prog_clone_fallback;

	const int *keep_fds;
	int nkeep;

	/* Set: the program keeps no capability (every set and the bounding
	 * set empty, securebits set and locked). */
	int drop_caps;
	/* With an init: the terminal on the program's stdio whose foreground
	 * group is the caller's, or -1. The program then leads a group of its
	 * own and takes the terminal's foreground, and the init says its
	 * stops (se_init.say_stops): see se_place_program. */
	int fg_tty;
	/* With fg_tty: the caller's group is not orphaned (a job-control
	 * shell's job): the init keeps the program's group from being
	 * orphaned too (se_leave_group). */
	int fg_linked;
	int ruleset_fd; /* Landlock ruleset, or -1 */
	uint32_t ruleset_flags;
	/* A unix socket (its peer has SO_PASSCRED) to say the program's pid
	 * on, or -1; then audit_comm is the name the program takes just
	 * before it creates its Landlock domain. The kernel's record of the
	 * domain names its creator by pid and name as they were then: the
	 * pair tells the run's own domain from any other (see the auditlog
	 * package). */
	int audit_sock;
	char audit_comm[16];

	const void *bpf; /* struct sock_filter[] */
	unsigned short bpf_len;
	/* A unix socket to send the filter's user-notification listener over
	 * (the filter is then loaded with SECCOMP_FILTER_FLAG_NEW_LISTENER),
	 * or -1. Under an init, the program only leaves the listener in the
	 * file table it shares with the init until its exec (listener_fd) and
	 * the init, which no filter restricts, sends it: the filter may send
	 * sendmsg itself to the supervisor, so the program could not. */
	int notify_sock;
	/* Set: load the filter with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	 * where the kernel has it (5.19): a call the supervisor has received
	 * is not interrupted, and so not restarted and carried out twice, by a
	 * signal the program handles. */
	int notify_killable;
	volatile int listener_fd; /* out: the listener, in the init's table */

	/* Signals to leave ignored in the program, and its signal mask. */
	const int *ignored;
	int nignored;
	sigset_t mask;

	void *stack;
	size_t stack_size;

	/* Where the kernel writes the child's pid as it clones it
	 * (CLONE_PARENT_SETTID), or NULL: a guardian's child_pid. */
	int *parent_tid;

	/* Out: set by the child when a step fails. */
	volatile int fail_step;
	volatile int fail_index; /* which op, rlimit, fd or path */
	volatile int fail_errno;
	/* Out: set by se_spawn. */
	int pidfd;
	int used_clone3;
	int prog_clone3; /* the init's clone of the program used clone3 */
};

/* The init of a PID namespace: the child se_spawn starts is PID 1 there.
 * It applies the namespace and mount steps, starts the program as PID 2
 * (which alone goes into the run's cgroups), then only forwards the
 * signals the supervisor sends it, reaps orphans, and exits when the
 * program does (the kernel then kills whatever is left in the namespace),
 * recording the program's wait status here. It shares the supervisor's
 * memory but, once the program runs, touches only this struct and its
 * stack, both in a mapping that is never unmapped. */
struct se_init {
	void *stack;
	size_t stack_size;
	int ready_fd;              /* set by se_spawn: written once the program runs */
	/* Set by the caller before the clone: the init keeps ready_fd once the
	 * program runs and writes 'D' on it when the program has exited and
	 * nothing else is left in the namespace (se_say_done), before its own
	 * exit, whose teardown of the namespaces the caller need not wait for
	 * to know the tree is gone; the caller keeps the read end (see
	 * se_spawn_finish). */
	int say_done;
	/* Set by se_spawn_start when the program takes the terminal
	 * (fg_tty): the init keeps ready_fd once the program runs, and writes
	 * on it the signal that stopped the program, one byte, each time it
	 * stops; the caller follows the stop (term.h) and continues it. */
	int say_stops;
	/* The listener's number in the init's file table when the init could
	 * not send it (the program, running already, set the init's
	 * RLIMIT_NOFILE to 0: ETOOMANYREFS), else -1: the init then keeps it
	 * until the caller, having taken it (pidfd_getfd), writes a byte on
	 * notify_sock (se_say_ready). */
	volatile int listener_left;
	volatile int prog_pid;     /* the program's pid in the namespace */
	/* Cleared and woken by the kernel at the program's exec or exit
	 * (CLONE_CHILD_CLEARTID): the init waits on it. */
	volatile int prog_tid;
	volatile int left;         /* the init has left the caller's group (se_leave_group) */
	int prog_group;            /* it leads a group of its own (se_place_program): signals go to the group */
	volatile int prog_status;  /* its wait status, once done */
	volatile int done;
	/* The init's copies of the caller's cgroup fds (se_recv_go). */
	int passed[SE_MAX_PASSED];
	/* The init's CPU affinity, set by se_spawn_start: the mask it
	 * was cloned with (the caller's, affinity_len bytes as the kernel
	 * gave it), and whether the caller then narrowed the init's to the
	 * CPUs other than its own (nudged; see se_nudge_init), which the init
	 * undoes at its first go, before anything of the program. */
	unsigned long affinity[16];
	long affinity_len;
	volatile int nudged;
};

/* A placeholder's identity as its record keeps it: a directory with that
 * name is the placeholder the claim made only while all four match
 * (se_ph_matches); anything else there is the user's. */
struct se_ph_id {
	uint64_t dev, ino;
	int64_t ctime_sec, ctime_nsec;
};

/* A guardian outlives a supervisor killed with SIGKILL and cleans up after
 * it: see se_guard_main in stage.c. Everything it reads lives in memory the
 * guardian owns (mapped, never freed); Go decided all of it.
 *
 * se_guard_ph is a placeholder to remove: the guardian's list holds them,
 * and the runner's release and the sweep make one per record they read
 * (se_remove_placeholder). */
struct se_guard_ph {
	const char *name;   /* a placeholder directory, in its lock's parent_fd */
	const char *record; /* its record, unlinked once the directory is gone or no longer the one recorded */
	struct se_ph_id id;
};

struct se_guard_lock {
	int fd; /* a flock the run holds shared */
	int decide_fd; /* the group's decide lock, taken exclusively to remove */
	int parent_fd; /* the directory the placeholders are in, as the claim took it */
	const struct se_guard_ph *ph; /* removed if it can be taken exclusively */
	int nph;
};

/* How long a placeholder group's lock is waited for (the runner's
 * lock_wait, the guardian's removal), in milliseconds. */
#define SE_LOCK_WAIT_MS 10000

struct se_rm_level;

/* A private temp dir a guardian removes, with everything in it. */
struct se_guard_tmp {
	const char *path;   /* the directory */
	const char *record; /* unlinked once it is gone, or NULL */
	int fd;             /* the directory, open: its contents are found through it, never by a path */
};

struct se_guard {
	int pipe_fd;          /* read end; EOF without 'D' means the supervisor died */
	/* How the tree is killed, as Go (cgroups.Cleanup) chose: "1" written
	 * to kill_file (v2 cgroup.kill) when it is set, then SIGKILL for every
	 * pid the procs files list, in rounds (kill_rounds below). */
	const char *kill_file; /* cgroup.kill, or NULL */
	const char *const *procs;
	int nprocs;
	const char *const *dirs; /* the cgroup's, deepest first */
	int ndirs;
	/* The supervisor's child (the init of the program's PID namespace),
	 * written by the kernel when it is cloned (CLONE_PARENT_SETTID), or
	 * 0: nothing of the run is removed while it lives. */
	volatile int child_pid;
	const struct se_guard_lock *locks;
	int nlocks;
	const struct se_guard_tmp *tmp_dirs; /* the private temp dir */
	int ntmp_dirs;
	struct se_rm_level *rm_levels; /* se_remove_tmp's room: SE_RM_DEPTH of them */
	const int *keep_fds; /* sorted: the pipe, the locks, and what else the guardian holds */
	int nkeep;
	const char *sweep_request; /* made after a cleanup, or NULL */
	/* Timings: SIGKILL what procs list every kill_interval_ms, kill_rounds
	 * times at most, until they list nothing; wait child_wait_ms at most
	 * for the child to be gone; se_guard_wait_ready waits ready_wait_ms. */
	int kill_rounds;
	int kill_interval_ms;
	int child_wait_ms;
	int ready_wait_ms;
	/* Set: the legacy clone where clone3 answers ENOSYS. */
	int clone_fallback;
	/* Set by the guardian once it holds only keep_fds. */
	volatile int ready;
};

/* Removing a private temp dir, whatever the program left in it. */
#define SE_RM_DEPTH 256 /* directories deep, at most; deeper ones stay */

struct se_rm_level {
	int fd, passes, removed, chmodded;
	long long resume;
	char name[256];
};

/* se_ph_matches says whether st (lstat's) is the placeholder id names. */
int se_ph_matches(const struct se_ph_id *id, const struct stat *st);

/* se_remove_placeholder removes ph from the directory open at dir if it is
 * still the placeholder recorded, and drops its record once that directory
 * is gone or is not the one recorded. The runner's release, the sweep and
 * the guardian all remove with it. */
void se_remove_placeholder(int dir, const struct se_guard_ph *ph);

/* se_remove_tmp removes everything in the directory open at fd (path), then
 * the directory itself while path still names it, then record (when not
 * NULL) once it is gone. Nothing is reached by a path but path itself,
 * checked against fd: each entry is unlinked relative to its directory's
 * descriptor, subdirectories are opened with O_NOFOLLOW|O_DIRECTORY (a link
 * is removed, never followed) and only on fd's device (a mount is left
 * alone), and a directory it cannot write in is made 0700 (a program's, as
 * Go's module cache leaves them 0555). levels is room for SE_RM_DEPTH
 * directories. Returns 0 or -errno; what it could not remove stays. */
long se_remove_tmp(const char *path, int fd, const char *record, struct se_rm_level *levels);

/* se_guard_alloc maps memory that is never unmapped, for a guardian. */
void *se_guard_alloc(size_t size);

/* se_guardian clones the guardian, a child of the caller that no wait4
 * without __WALL or __WCLONE waits for, and returns its pid or -errno. */
long se_guardian(struct se_guard *g, void *stack, size_t stack_size);

/* se_signal_listed sends sig to every pid a cgroup.procs file lists but 0
 * (see stage.c); returns how many it signalled. */
int se_signal_listed(const char *procs, int sig);

/* se_kill_tree ends the tree in g's cgroups (see stage.c); once: one round. */
int se_kill_tree(const struct se_guard *g, int once);

/* se_exit_code_of is the exit code the rules give a failure of step with
 * err (a positive errno): the first rule that matches, else 1. */
int se_exit_code_of(const struct se_exit_rule *rules, int n, int step, int err);

/* se_guard_wait_ready waits up to g->ready_wait_ms until the guardian holds
 * only its keep_fds; it reports whether it does. */
int se_guard_wait_ready(struct se_guard *g);

/* se_spawn starts a child without an init. It returns its pid, or -errno
 * when the clone itself failed. When it returns a pid, the child has either
 * execed the program or exited after setting fail_step (or, a trial,
 * exited 0). */
long se_spawn(struct se_req *req);

/* se_spawn_start and se_spawn_finish are se_spawn in two halves, for an
 * init (which is held: see se_req.init): the first clones the child and returns its pid or
 * -errno; the second, called once after it whatever it returned, lets the
 * init start the program (go set) or makes it exit before it does (go
 * unset: it fails with SE_STEP_INIT), then waits as se_spawn does. */
long se_spawn_start(struct se_req *req);
void se_spawn_finish(struct se_req *req, long pid, int go);
/* se_spawn_ops_go lets the init make its mounts:
 * what they need is in place. It reports whether the init got the word (it
 * may have exited after a failed step: se_spawn_finish then says so). */
int se_spawn_ops_go(struct se_req *req);

/* se_init_status reports the program's wait status as the init recorded
 * it: 1 and *status set, or 0 when it recorded none. */
int se_init_status(struct se_init *g, int *status);

/* /proc/self/status as the first constructor read it (whole), before
 * anything of the helper's changed the process, or NULL (not read, or too
 * large for its buffer): for the recipe key's constructor, which runs next
 * and hashes some of its lines. */
const char *se_initial_status(size_t *len);

/* The state of the process before the Go runtime started (see stage.c). */
void se_initial_state(sigset_t *mask, int *ignored, int max, int *nignored,
		      uint64_t *nofile_cur, uint64_t *nofile_max);

/* se_set_initial_nofile makes cur and max the RLIMIT_NOFILE the process
 * started with: the resident decider takes on so the one of the run it
 * decides for, which the decision and the recipe key read here. */
void se_set_initial_nofile(uint64_t cur, uint64_t max);

#endif
