/*
 * A recipe: one run, every decision made by Go (supervisor.Prepare), laid
 * out flat so that the runner (runner.c) can carry it out without the Go
 * runtime: from Go in the same process (a run decided now), or from a
 * constructor before the runtime starts (the same invocation decided by an
 * earlier run, stored authenticated in the state directory: recipestore.c).
 *
 * The runner decides nothing. It makes what the recipe lists (writable
 * roots, the shared temp mount point, the placeholders under their claims,
 * the cgroup directories and their limit writes, the guardian, the Landlock
 * ruleset), starts the program through se_spawn, and waits for it. Anything
 * it cannot do exactly as listed before the program starts ends in a clean
 * undo and a fallback to Go, which decides and runs as it always did. Once
 * the program runs, the runner only forwards signals and waits: any other
 * event (a seccomp notification the supervisor must answer, the timeout,
 * the CPU budget's first check, an OOM kill, a tree that does not end with
 * its init) hands the run over to Go (struct se_handover), which goes on
 * with its supervisor.
 *
 * Layout: struct se_recipe at offset 0, then everything it references, by
 * offset from the recipe's start (struct se_rref). Strings are followed by
 * a NUL that n does not count. Every reference is bounds-checked when the
 * recipe is loaded (se_recipe_check).
 */
#ifndef SE_RECIPE_H
#define SE_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include "stage.h"
#include "term.h"

#define SE_RCP_MAGIC "SE-RCP-1"
/* Bumped whenever the layout or meaning of a field changes. */
#define SE_RCP_VERSION 2

/* A string (n bytes, NUL after them) or an array of n records, at off. */
struct se_rref {
	uint32_t off, n;
};

/* One operation of the child (struct se_op), strings by reference. */
struct se_rop {
	int32_t kind, slot;
	uint64_t flags;
	struct se_rref a, b, c, d;
	unsigned char addr[4], port[2], pad[2];
	int32_t backlog, pad2;
};

/* What a limit write does when its file does not exist (cgroups'
 * ifMissing). */
enum se_missing {
	SE_MUST_EXIST = 0,
	SE_MAY_MISS = 1,
	SE_SWAP_ACCOUNT = 2, /* skipped unless the host has swap in use (then the run falls back) */
};

struct se_rwrite {
	struct se_rref file, value; /* a name in the group's directory, its text */
	int32_t missing, pad;
};

/* One directory of the run's cgroup: <parent>/<name>, name made per run. */
struct se_rcg {
	struct se_rref parent;
	/* Controllers the parent's cgroup.subtree_control must list (space
	 * separated; "" for none): Go enabled them on an earlier run, and the
	 * runner only checks. */
	struct se_rref require;
	struct se_rref writes; /* struct se_rwrite[] */
	int32_t v2;            /* the v2 directory: opened for CLONE_INTO_CGROUP, and its cgroup.kill */
	int32_t join;          /* v1: its "tasks" opened for the child to write "0" to */
};

/* A placeholder group of the registry (mountns/registry.go). */
struct se_rclaim {
	struct se_rref parent;       /* the directory the placeholders are in */
	struct se_rref dir;          /* its registry directory */
	struct se_rref placeholders; /* struct se_rref[]: the paths the view covers, made when missing */
};

/* A state file whose mtime says when a sweep last began. */
struct se_rstamp {
	struct se_rref path;
	int64_t every_s;
};

/* A Landlock path rule (landlock.Rule). listed is the path's type in its
 * directory's listing (SE_LISTED_DIR, SE_LISTED_FILE), 0 when not listed. */
struct se_rll {
	struct se_rref path;
	uint64_t access;
	int32_t required, listed;
};

#define SE_LISTED_DIR 1
#define SE_LISTED_FILE 2

struct se_recipe {
	char magic[8];
	uint32_t version, size;

	/* Host side, in the order the runner makes them. */
	struct se_rref roots;      /* struct se_rref[]: writable roots to make (mkdir, then a directory) */
	struct se_rref shared_tmp; /* the shared private-temp mount point, or "" */
	struct se_rref registry;   /* the placeholder registry directory, or "" */
	struct se_rref claims;     /* struct se_rclaim[] */
	struct se_rref cgroups;    /* struct se_rcg[]: the v2 directory first */
	/* The stale sweep (supervisor/stale.go) is Go's: a run with one due
	 * falls back. Due when sweep_request (a guardian's request for one)
	 * exists, or a stamp is missing or older than its age. */
	struct se_rref sweep_request;
	struct se_rref sweep_stamps; /* struct se_rstamp[] */
	int32_t guard_kill_rounds, guard_kill_interval_ms, guard_child_wait_ms, guard_ready_wait_ms;

	/* Landlock (landlock.Spec.Build). */
	int32_t ll_abi;
	uint32_t ll_restrict_flags;
	uint64_t ll_handled_fs, ll_handled_net, ll_scoped;
	uint64_t ll_file_rights; /* the rights a rule on a non-directory may keep */
	uint64_t ll_net_connect; /* the access of a port rule */
	struct se_rref ll_paths; /* struct se_rll[] */
	struct se_rref ll_ports; /* uint16_t[] */

	/* The child (struct se_req). */
	struct se_rref env;       /* struct se_rref[] */
	struct se_rref path_dirs; /* struct se_rref[]: cleaned PATH entries ("." for an empty one) */
	int32_t sh_fallback;
	int32_t init, drop_caps, pdeathsig;
	uint64_t ns_flags, unshare_flags;
	int32_t clone_fallback, prog_clone_fallback;
	int32_t notify;          /* the filter has a listener the supervisor answers */
	int32_t notify_killable;
	struct se_rref ops;        /* struct se_rop[] */
	struct se_rref rlimits;    /* struct se_rlimit[] */
	struct se_rref exit_rules; /* struct se_exit_rule[] */
	struct se_rref bpf;        /* struct sock_filter[], as bytes */

	/* Supervision. */
	int64_t timeout_ms;   /* the wall-clock limit; 0: none */
	int64_t cpu_check_ms; /* the CPU budget's first check; 0: no budget */
	int32_t oom_watch;    /* a memory limit: an OOM kill hands over */
	/* The run's end is Go's (a report or a log of it): once the child is
	 * reaped, the run is handed over (SE_HO_ENDED) before any cleanup. */
	int32_t end_in_go;
	struct se_rref forwarded; /* int32_t[]: the signals passed on */
};

/* Why the runner handed a run over to Go (se_handover.reason). */
enum se_handover_reason {
	/* Nothing started: the runner undid what it made. Go runs it. */
	SE_HO_FALLBACK = 1,
	SE_HO_NOTIFY,  /* a seccomp notification is waiting */
	SE_HO_TIMEOUT, /* the wall-clock limit passed */
	SE_HO_CPU,     /* the CPU budget is due for a look */
	SE_HO_OOM,     /* the kernel OOM-killed a process of the group */
	/* The child was reaped: Go ends what is left of the tree and cleans
	 * up (a tree that outlived its init, or a run whose end Go reports:
	 * se_recipe.end_in_go). */
	SE_HO_ENDED,
};

#define SE_MAX_CLAIMS 64

/* What Go needs to go on with a run the runner started. */
struct se_handover {
	int32_t reason;
	/* SE_HO_FALLBACK because se_run's holds said the decision no longer
	 * holds. */
	int32_t stale;
	/* SE_HO_FALLBACK: where it stopped, for the debug log. */
	int32_t fail_step, fail_errno;
	char fail_what[128];

	/* The cgroup directories' name (the runner's own). */
	char cgroup_name[128];
	/* The child: the init (or the program), its pidfd, its init state. */
	int32_t pid, pidfd;
	struct se_init *init;
	int32_t exited; /* SE_HO_ENDED: the child was reaped; status is its */
	int32_t status;
	int32_t listener_fd; /* the seccomp listener, or -1 */
	/* The signals, still caught into this pipe (sigcatch.c). */
	int32_t sig_r, sig_w;
	/* The guardian. */
	int32_t guard_pid, guard_w;
	struct se_guard *guard;
	/* The placeholder claims: one lock fd per se_rclaim, in order, and
	 * for each placeholder the runner made or found recorded, its record. */
	int32_t nclaims;
	int32_t claim_fds[SE_MAX_CLAIMS];
	struct se_guard_lock *locks;
	/* The caller's terminal as the run found it (se_term_restore), and
	 * the ready pipe's read end on which the init says the program's
	 * stops (se_init.say_stops), or -1. */
	struct se_term term;
	int32_t notes_fd;
	/* When the runner started, and the program (CLOCK_MONOTONIC ns). */
	int64_t started_ns, program_ns;
};

/* se_recipe_check validates a recipe of len bytes: magic, version, size
 * and every reference within bounds. 1 when it is sound. */
int se_recipe_check(const void *recipe, size_t len);

/* se_holds, given to se_run, says whether the stored decision the recipe
 * came from still holds (1) or not (0). */
typedef int se_holds_fn(void *arg);

/* se_run carries out the recipe for the program argv (NULL-terminated).
 * It does not return when the run ends with the program's end: it exits
 * with the program's status (128+N for signal N), as the supervisor would,
 * and so it does (128+N) when a terminating signal came before the program
 * started. It returns with *h filled when it hands the run over, or falls
 * back (SE_HO_FALLBACK: nothing ran, nothing is left).
 *
 * holds, when not NULL, is asked whether the decision still holds once
 * the init is cloned (it makes its namespaces meanwhile, and nothing
 * else until the runner's first go, which comes after the answer); on 0
 * the init is ended and the run falls back with h->stale set. */
void se_run(const struct se_recipe *r, char *const *argv, se_holds_fn *holds, void *holds_arg,
	    struct se_handover *h);

#endif
