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

#define SE_RCP_MAGIC "SE-RCP-1"
/* Bumped whenever the layout or meaning of a field changes. */
#define SE_RCP_VERSION 5

/* A string (n bytes, NUL after them) or an array of n records, at off. */
struct se_rref {
	uint32_t off, n;
};

/* One operation of the child (struct se_op), strings by reference. */
struct se_rop {
	int32_t kind, slot;
	uint64_t flags;
	struct se_rref a, b, c, d;
	struct se_ident ida, idb;
	int32_t lower_is_target, pad3;
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
	struct se_ident parent_id;   /* what it was when decided */
	struct se_rref dir;          /* its registry directory */
	struct se_rref placeholders; /* struct se_rref[]: the paths the view covers, made when missing */
};

/* A state file whose mtime says when a sweep last began. */
struct se_rstamp {
	struct se_rref path;
	int64_t every_s;
};

/* A Landlock path rule (landlock.Rule): on path or, with entries, on each
 * entry of the directory path the runner lists, but symbolic links and the
 * names in except (struct se_rref[]). */
struct se_rll {
	struct se_rref path, except;
	uint64_t access;
	int32_t required, entries;
};

/* A figure the runner reads in one of the run's cgroup directories: the
 * number after "key " on a line of file, or the whole file's number when
 * key is "", times scale. cg is the directory's index in cgroups, -1 for
 * none. */
struct se_rcounter {
	int32_t cg, pad;
	struct se_rref file, key;
	uint64_t scale;
};

struct se_recipe {
	char magic[8];
	uint32_t version, size;

	/* Host side, in the order the runner makes them. */
	struct se_rref roots;      /* struct se_rref[]: writable roots to make (mkdir, then a directory) */
	struct se_rref shared_tmp; /* the shared private-temp mount point, or "" */
	/* A private temp dir of the run's own (no mount namespace), made by Go
	 * and open at tmp_fd in this process (such a recipe is never stored):
	 * the guardian removes it, with what is in it, should the helper die. */
	struct se_rref tmp_dir, tmp_record;
	int32_t tmp_fd, pad4;
	struct se_rref registry;   /* the placeholder registry directory, or "" */
	struct se_rref claims;     /* struct se_rclaim[] */
	struct se_rref cgroups;    /* struct se_rcg[]: the v2 directory first */
	struct se_rref cgroup_made; /* struct se_rref[]: parents made for the run, deepest first, removed after it */
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

	/* Supervision: the runner ends the run itself (see runner.c). */
	int64_t timeout_ms; /* the wall-clock limit; 0: none */
	int64_t grace_ms;   /* after the timeout's SIGTERM, before the tree is killed */
	/* The CPU budget of the whole tree (0: none), read in cpu_usage; the
	 * next look comes when what is left could be spent by cpu_spread
	 * CPUs at full speed, between 20 ms and 1 s. */
	int64_t cpu_budget_ns;
	int32_t cpu_spread;
	int32_t oom_watch; /* a memory limit: 1 watched through the v1 memory directory, 2 the v2 memory.events */
	struct se_rcounter cpu_usage, oom_kills, pids_hits;
	/* The program's end is reported by Go (a report, a log of it): the
	 * service is called at the end, before any cleanup. */
	int32_t end_in_go;
	/* The service is called as soon as the program runs: a seccomp
	 * listener that records every denial, or the proxy. */
	int32_t go_from_start;
	/* The child's first operation that listens hands its socket over
	 * (SE_OP_LISTEN_SEND): the allowlist proxy's listener. */
	int32_t proxy;
	/* Its SE_OP_OPEN_SEND then hands the scratch caches' layers over,
	 * given to Go at the end (--persist-cache). */
	int32_t layers;
	/* The run's file denials are read from the kernel's audit log: the
	 * runner opens its multicast socket before the program exists, and
	 * the program marks the Landlock domain it creates as the run's
	 * (stage.h's audit_sock); Go reads the socket from the start. */
	int32_t audit;
	struct se_rref keep_fds;  /* int32_t[]: descriptors the program keeps */
	/* struct se_rref[SE_END_N]: the line said on stderr when the run ends
	 * that way (indexed by enum se_ending), "" for none. */
	struct se_rref say;
};

#define SE_MAX_CLAIMS 64

/* How a run ended (se_service.ending). */
enum se_ending {
	SE_END_EXITED = 1,
	SE_END_SIGNALED,
	SE_END_TIMEOUT,   /* the wall-clock limit: the tree was ended, exit 124 */
	SE_END_CPU,       /* the tree's CPU budget, or RLIMIT_CPU where it stands for it (SIGXCPU): exit 152 */
	SE_END_OOM,       /* an OOM kill in the group: the tree was ended, exit 137 */
	SE_END_PIDS,      /* the program failed and the pids limit refused a fork */
	SE_END_SERVICE,   /* Go could not serve the run (its proxy, its listener): exit 125 */
	SE_END_FSIZE,     /* the program died of SIGXFSZ: a file reached RLIMIT_FSIZE */
	SE_END_N
};

/* Why se_run returned. */
enum se_return {
	/* Nothing started: the runner undid what it made (see fail_*). */
	SE_RET_FALLBACK = 1,
	/* The child failed before its exec (fail_step, fail_errno; exit_code
	 * is what the exit rules say): nothing ran, everything is undone. Go
	 * says why and exits with exit_code. */
	SE_RET_FAILED,
	/* The program runs, and the runner goes on with the run in a thread
	 * of its own: Go serves it (se_service). Only a run started before
	 * the Go runtime (the warm path) returns so. */
	SE_RET_SERVE,
};

/*
 * The service: what the runner asks of Go while a program runs. The runner
 * writes one byte on ev_w per event, Go answers on ack_w where one is
 * asked for:
 *   'L'  listener_fd is the seccomp listener: answer its notifications.
 *   'P'  proxy_fd is the proxy's listener: serve it.
 *   'A'  audit_fd is the audit log's socket (-1 with audit_err, the
 *        errno, when the kernel refused it): read the run's records, its
 *        domain the one made by audit_pid named audit_comm (audit_pid 0:
 *        the program did not say it).
 *   'E'  the program and its tree are gone (ending, status, exit_code,
 *        the times): Go reads what it reports (the cgroups are still
 *        there), then answers 'D'; the runner cleans up and exits.
 * Go may also write 'K' at any time: it cannot serve the run; the runner
 * ends the tree (SE_END_SERVICE). On sig_w Go passes on, one byte each, the
 * forwarded signals its runtime took (runner.c's se_forwarded). hold_r,
 * when not -1, is work Go finishes while the program runs (storing the
 * recipe of a run it just decided): the runner reads it to its end before
 * the helper exits.
 */
struct se_service {
	int32_t ev_r, ev_w, ack_r, ack_w, sig_r, sig_w, hold_r;
	int32_t listener_fd, proxy_fd, layers_fd;
	int32_t audit_fd, audit_err, audit_pid;
	char audit_comm[16];
	int32_t ending, status, exit_code, started;
	int64_t started_ns, program_ns, ended_ns;
	char cgroup_name[128];
};

/* What se_run returns with. */
struct se_handover {
	int32_t reason; /* enum se_return */
	/* SE_RET_FALLBACK because se_run's holds said the decision no longer
	 * holds. */
	int32_t stale;
	/* SE_RET_FALLBACK, SE_RET_FAILED: where it stopped. */
	int32_t fail_step, fail_errno, fail_index, exit_code;
	char fail_what[128];
	/* SE_RET_SERVE: the run's service. */
	struct se_service *svc;
	int64_t started_ns;
};

/* se_recipe_check validates a recipe of len bytes: magic, version, size
 * and every reference within bounds. 1 when it is sound. */
int se_recipe_check(const void *recipe, size_t len);

/* se_holds, given to se_run, says whether the stored decision the recipe
 * came from still holds (1) or not (0). */
typedef int se_holds_fn(void *arg);

/* se_run carries out the recipe for the program argv (NULL-terminated),
 * and ends the run itself: it does not return once the program runs but
 * exits with the run's code (the program's status, 128+N for signal N, or
 * the code of how the runner ended it), as it does (128+N) when a
 * terminating signal came before the program started. svc, when not NULL,
 * is the service of a Go runtime that is running (the run was decided now):
 * events go to it as they come. Without one (a stored recipe, before the Go
 * runtime starts) the runner makes one the first time the run needs Go,
 * moves the run to a thread of its own, and returns SE_RET_SERVE. It
 * returns SE_RET_FALLBACK or SE_RET_FAILED when no program ran.
 *
 * holds, when not NULL, is asked whether the decision still holds once
 * the init is cloned (it makes its namespaces meanwhile, and nothing
 * else until the runner's first go, which comes after the answer); on 0
 * the init is ended and the run falls back with h->stale set. */
/* se_exec_paths lists the paths the child tries for the program name, in
 * order, as execvp(3) searches: name alone when it has a slash; otherwise
 * for each of the n PATH entries dirs (cleaned, "." for an empty one)
 * dir/name, name alone for ".", /name for "/". NULL-terminated, each entry
 * and the list malloc'd; NULL when out of memory. The one implementation:
 * Go's report names the same paths through it (spawn.ExecPaths). */
char **se_exec_paths(const char *const *dirs, size_t n, const char *name);

/* What a judge of files knows of one: the errno of its stat (0: none),
 * else its owner and mode. */
struct se_file_facts {
	int32_t err;
	uint32_t uid, mode;
};

enum se_tmp_verdict {
	SE_TMP_FIT = 0,
	SE_TMP_PARENT_UNREAD, /* the parent's stat failed */
	SE_TMP_PARENT_UNFIT,  /* the parent is not root's or uid's, or others can rename in it */
	SE_TMP_UNREAD,        /* the mount point's lstat failed */
	SE_TMP_UNFIT,         /* not a directory of uid's with mode 0700 */
};

/* se_shared_tmp_judge judges the shared temp mount point (a directory that
 * stays, empty on the host, for the runs that mount a tmpfs of their own on
 * it) from the facts of its parent (stat) and its own (lstat): a directory
 * of uid's, mode 0700, in a parent no one else can rename it in (root's or
 * uid's, sticky if others can write it); a missing one is fit when missing
 * is set (the run makes it). The decision (hostfacts.CheckSharedTmp) and
 * the runner, at the run, judge with it. */
int se_shared_tmp_judge(const struct se_file_facts *parent, const struct se_file_facts *self, uint32_t uid, int missing);

/* The placeholder registry (mountns/registry.go says its protocol): a
 * directory per parent a placeholder is made in, se_group_dir: registry
 * "/g-" and the first 16 bytes of SHA-256(parent) in hex; in it "dir" (a
 * link to the parent), "lock", "decide", and a record per placeholder. */
char *se_group_dir(const char *registry, const char *parent);

/* se_sweep_placeholders removes the placeholders no run claims: in each
 * group of registry this code made (its name is its parent's) whose lock
 * it takes exclusively without waiting, those still matching their
 * records (se_remove_recorded). A group in use is left to its last run.
 * It may run beside se_run on another thread: it takes no group's lock
 * while se_run clones an init. */
void se_sweep_placeholders(const char *registry);

/* se_record_path is where group (a placeholder group's registry
 * directory) records the placeholder path: group/n-<its last name>;
 * malloc'd, NULL when out of memory. */
char *se_record_path(const char *group, const char *path);

/* se_hold_decisions takes group's "decide" lock shared (waiting boundedly,
 * as a claim does) and returns its descriptor, which the caller closes
 * when done reading; -1 when there is no such file (a group never decided
 * in) or the wait ran out. A run makes a placeholder and records it, and
 * se_remove_recorded removes one, under that lock held exclusively: while
 * a reader holds it, no placeholder is made or removed, and none is seen
 * without its record. */
int se_hold_decisions(const char *group);

/* se_cgroup_stale reports whether name is a run's group (the runner's
 * make_name) whose supervisor is gone: no process has its pid, or a zombie
 * does, or one that started at another time (the pid was reused). A name of
 * another form, and a group of another pid namespace's supervisor, are not
 * stale; nor is one whose supervisor's /proc entry cannot be read. */
int se_cgroup_stale(const char *name);

/* se_landlock_restrict_thread confines the calling thread alone (no
 * TSYNC) with a Landlock domain that handles rights and grants them beneath
 * each of the n directories dirs (O_PATH descriptors): the Go service's
 * mediating thread, which may change files beneath the writable roots and
 * nowhere else. The thread needs no_new_privs or CAP_SYS_ADMIN. 0, or
 * -errno. */
int se_landlock_restrict_thread(uint64_t rights, const int *dirs, int n);

void se_run(const struct se_recipe *r, char *const *argv, se_holds_fn *holds, void *holds_arg,
	    struct se_service *svc, struct se_handover *h);

/* se_record_parse reads a placeholder's record (runner.c). */
int se_record_parse(const char *text, uint64_t *dev, uint64_t *ino, int64_t *sec, int64_t *nsec);

/* se_remove_recorded removes, under the group's exclusive lock, every
 * recorded placeholder of parent that still matches its record. */
void se_remove_recorded(const char *group, const char *parent);

/* se_service_new makes a service (its pipes) for se_run, or returns NULL. */
struct se_service *se_service_new(void);

#endif
