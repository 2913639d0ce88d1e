/*
 * The runner: carries out a recipe (recipe.h) without the Go runtime. It
 * runs in the supervisor's own process, on its main thread before the Go
 * runtime starts (a recipe stored by an earlier run) or on a locked thread
 * of a Go program (a recipe just decided). It applies what Go listed, in
 * Go's order, and decides nothing: what it cannot do exactly as listed
 * before the program starts is undone, and Go runs the run instead.
 */
#define _GNU_SOURCE
#include "phases.h"
#include "recipe.h"
#include "sha256.h"
#include "term.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/netlink.h>

#ifndef RESOLVE_NO_SYMLINKS
#define RESOLVE_NO_SYMLINKS 0x04
#endif

struct se_open_how {
	uint64_t flags, mode, resolve;
};

#define SE_MAX_CG 8
#define SE_MAX_PH 256
#define SE_CHILD_STACK (64 << 10)
#define SE_INIT_STACK (32 << 10)
#define SE_GUARD_STACK (32 << 10)

/* ---- reading the recipe ---- */

static const char *rs(const struct se_recipe *r, struct se_rref s)
{
	return s.n ? (const char *)r + s.off : "";
}

#define RA(r, ref, type) ((const type *)((const char *)(r) + (ref).off))

static int ref_ok(const struct se_recipe *r, struct se_rref ref, size_t rec, int str)
{
	uint64_t end;
	if (ref.n == 0)
		return 1;
	if (ref.off < sizeof *r || ref.off > r->size)
		return 0;
	if (str) {
		end = (uint64_t)ref.off + ref.n + 1;
		return end <= r->size && ((const char *)r)[ref.off + ref.n] == 0 &&
		       memchr((const char *)r + ref.off, 0, ref.n) == NULL;
	}
	end = (uint64_t)ref.off + (uint64_t)ref.n * rec;
	return ref.off % 8 == 0 && end <= r->size;
}

static int strs_ok(const struct se_recipe *r, struct se_rref arr)
{
	if (!ref_ok(r, arr, sizeof(struct se_rref), 0))
		return 0;
	for (uint32_t i = 0; i < arr.n; i++)
		if (!ref_ok(r, RA(r, arr, struct se_rref)[i], 1, 1))
			return 0;
	return 1;
}

int se_recipe_check(const void *p, size_t len)
{
	const struct se_recipe *r = p;
	if (len < sizeof *r || ((uintptr_t)p & 7) || memcmp(r->magic, SE_RCP_MAGIC, 8) != 0 ||
	    r->version != SE_RCP_VERSION || r->size != len)
		return 0;
	if (!strs_ok(r, r->roots) || !ref_ok(r, r->shared_tmp, 1, 1) || !ref_ok(r, r->registry, 1, 1) ||
	    !ref_ok(r, r->tmp_dir, 1, 1) || !ref_ok(r, r->tmp_record, 1, 1) ||
	    !ref_ok(r, r->sweep_request, 1, 1) || !strs_ok(r, r->env) || !strs_ok(r, r->path_dirs) ||
	    !ref_ok(r, r->bpf, 1, 0) || r->bpf.n % 8 != 0 || r->bpf.n / 8 > 0xffff ||
	    !ref_ok(r, r->rlimits, sizeof(struct se_rlimit), 0) ||
	    !ref_ok(r, r->exit_rules, sizeof(struct se_exit_rule), 0) ||
	    !ref_ok(r, r->ll_ports, sizeof(uint16_t), 0) || !ref_ok(r, r->keep_fds, sizeof(int32_t), 0) ||
	    !strs_ok(r, r->cgroup_made) || !strs_ok(r, r->say) || r->say.n > SE_END_N)
		return 0;
	const struct se_rcounter *counters[] = {&r->cpu_usage, &r->oom_kills, &r->pids_hits};
	for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
		if (!ref_ok(r, counters[i]->file, 1, 1) || !ref_ok(r, counters[i]->key, 1, 1) || counters[i]->cg < -1 ||
		    counters[i]->cg >= SE_MAX_CG)
			return 0;
	if (!ref_ok(r, r->sweep_stamps, sizeof(struct se_rstamp), 0))
		return 0;
	for (uint32_t i = 0; i < r->sweep_stamps.n; i++)
		if (!ref_ok(r, RA(r, r->sweep_stamps, struct se_rstamp)[i].path, 1, 1))
			return 0;
	if (!ref_ok(r, r->claims, sizeof(struct se_rclaim), 0) || r->claims.n > SE_MAX_CLAIMS)
		return 0;
	for (uint32_t i = 0; i < r->claims.n; i++) {
		const struct se_rclaim *c = &RA(r, r->claims, struct se_rclaim)[i];
		if (!ref_ok(r, c->parent, 1, 1) || !ref_ok(r, c->dir, 1, 1) || !strs_ok(r, c->placeholders))
			return 0;
	}
	if (!ref_ok(r, r->cgroups, sizeof(struct se_rcg), 0) || r->cgroups.n > SE_MAX_CG)
		return 0;
	for (uint32_t i = 0; i < r->cgroups.n; i++) {
		const struct se_rcg *c = &RA(r, r->cgroups, struct se_rcg)[i];
		if (!ref_ok(r, c->parent, 1, 1) || !ref_ok(r, c->require, 1, 1) ||
		    !ref_ok(r, c->writes, sizeof(struct se_rwrite), 0))
			return 0;
		for (uint32_t j = 0; j < c->writes.n; j++) {
			const struct se_rwrite *w = &RA(r, c->writes, struct se_rwrite)[j];
			if (!ref_ok(r, w->file, 1, 1) || !ref_ok(r, w->value, 1, 1))
				return 0;
		}
	}
	if (!ref_ok(r, r->ll_paths, sizeof(struct se_rll), 0))
		return 0;
	for (uint32_t i = 0; i < r->ll_paths.n; i++) {
		const struct se_rll *rule = &RA(r, r->ll_paths, struct se_rll)[i];
		if (!ref_ok(r, rule->path, 1, 1) || !strs_ok(r, rule->except) || (uint32_t)rule->entries > 1)
			return 0;
	}
	if (!ref_ok(r, r->ops, sizeof(struct se_rop), 0))
		return 0;
	for (uint32_t i = 0; i < r->ops.n; i++) {
		const struct se_rop *o = &RA(r, r->ops, struct se_rop)[i];
		if (!ref_ok(r, o->a, 1, 1) || !ref_ok(r, o->b, 1, 1) || !ref_ok(r, o->c, 1, 1) ||
		    !ref_ok(r, o->d, 1, 1) || o->slot < -1 || o->slot >= SE_MAX_SLOTS || o->kind < SE_OP_MOUNT ||
		    o->kind > SE_OP_OPEN_SEND || o->ida.kind < 0 ||
		    o->ida.kind > SE_ID_ANY || o->idb.kind < 0 || o->idb.kind > SE_ID_ANY)
			return 0;
	}
	return 1;
}

/* ---- the runner's state ---- */

struct se_ph {
	char *path, *record;
	struct se_ph_id id;
	/* An O_PATH fd on the placeholder (or -1), which the guardian keeps
	 * for the run: see hold_placeholder. */
	int hold;
};

/* The child's request and what it points at: made before the clone,
 * freed once the child runs or is let go. pid is a held init's (0 when
 * there is none to let go). */
struct se_start {
	struct se_req *q;
	char **env, **paths, **sh;
	struct se_op *ops;
	void *stack;
	long pid;
};

struct se_runner {
	const struct se_recipe *r;
	char *const *argv;
	struct se_start c;
	struct se_handover *h;
	char name[128];
	/* The cgroup directories made, in order, and their fds. */
	int ncg;
	char *cg[SE_MAX_CG];
	int v2_fd, v2_index, procs_fd;
	int join[SE_MAX_CG];
	int njoin;
	/* The claims: lock and decide lock fds per group (the decide lock is
	 * held only while claiming; the guardian takes it to remove), the
	 * directory its placeholders are in as the claim took it (-1 for a
	 * group only locked), and the placeholders known per group. */
	int nclaims;
	int lock[SE_MAX_CLAIMS];
	int decide[SE_MAX_CLAIMS];
	int parent[SE_MAX_CLAIMS];
	struct se_ph ph[SE_MAX_PH];
	int ph_group[SE_MAX_PH];
	int nph;
	/* The guardian. */
	struct se_guard *g;
	int guard_pid, guard_w;
	int ruleset;
	int notify_parent, notify_child;
	int proxy_parent, proxy_child;
	/* The audit log's socket until Go has it, or -1 (audit_err: why);
	 * the pair the program says its pid on (se_audit_mark), the pid, and
	 * the name it takes. */
	int audit_fd, audit_err, audit_parent, audit_child, audit_pid;
	char audit_comm[16];
	/* The forwarded signals, blocked in every thread since the first
	 * constructor, read here. */
	int sigfd;
	int oom_fd;
	/* The ready pipe's read end, kept while the program runs under an
	 * init that says 'D' on it when the tree is gone (se_init.say_done),
	 * or the program's stops (se_init.say_stops); or -1. */
	int done_r;
	/* The caller's terminal as the run found it, put back at its end. */
	struct se_term term;
	int early[16];
	int nearly;

	/* Once the program runs. */
	struct se_init *init; /* the PID namespace's init, or NULL */
	int pid;      /* the child: the init, or the program without one */
	int pidfd;    /* its pidfd */
	int listener; /* the seccomp listener, until Go has it */
	int proxy_l;  /* the proxy's listener, until Go has it */
	int layers;   /* the scratch caches' layers, until Go has them */
	int64_t program_ns;
	/* How the runner ended the run (enum se_ending), 0 while it has not:
	 * the tree was signalled, and kill_at is when it is killed (again). */
	int ending;
	int64_t kill_at;
	int64_t cpu_next;
	/* Go's service: given by Go (a run it decided), or made when the run
	 * first needs Go (serving says it was called). */
	struct se_service *svc;
	/* Why the runner ended the run with SE_END_SERVICE, and errno. */
	const char *svc_what;
	int svc_err;
	int serving;
	int own_thread; /* the run goes on in a thread of its own (SE_RET_SERVE) */
};

static int64_t se_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fail(struct se_runner *s, int step, int err, const char *what)
{
	if (s->h->fail_step == 0) {
		s->h->fail_step = step;
		s->h->fail_errno = err;
		/* Cut to fit, on purpose (snprintf would warn of it). */
		size_t n = strnlen(what, sizeof s->h->fail_what - 1);
		memcpy(s->h->fail_what, what, n);
		s->h->fail_what[n] = 0;
	}
}

static char *join2(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);
	if (!p)
		return NULL;
	memcpy(p, a, la);
	p[la] = '/';
	memcpy(p + la + 1, b, lb + 1);
	return p;
}

static int write_all(int fd, const char *data, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, data, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		data += w;
		n -= (size_t)w;
	}
	return 0;
}

static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < cap) {
		ssize_t got = read(fd, buf + n, cap - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* ---- the sweep ---- */

/* sweep_due says why the stale sweep is due (into why), or returns 0. */
static int sweep_due(const struct se_recipe *r, char *why, size_t n)
{
	struct stat st;
	if (r->sweep_request.n && access(rs(r, r->sweep_request), F_OK) == 0) {
		snprintf(why, n, "sweep due: %s", rs(r, r->sweep_request));
		return 1;
	}
	time_t now = time(NULL);
	for (uint32_t i = 0; i < r->sweep_stamps.n; i++) {
		const struct se_rstamp *t = &RA(r, r->sweep_stamps, struct se_rstamp)[i];
		int64_t age = -1;
		if (stat(rs(r, t->path), &st) == 0)
			age = (int64_t)now - (int64_t)st.st_mtim.tv_sec;
		if (age < 0 || age >= t->every_s) {
			snprintf(why, n, "sweep due: %s (age %lld s)", rs(r, t->path), (long long)age);
			return 1;
		}
	}
	return 0;
}

/* ---- host-side setup ---- */

static int open_dir(const char *path);

/* make_roots makes the writable roots that do not exist yet, each one
 * directory in a parent taken without following a link. */
static int make_roots(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	for (uint32_t i = 0; i < r->roots.n; i++) {
		const char *p = rs(r, RA(r, r->roots, struct se_rref)[i]);
		const char *slash = strrchr(p, '/');
		struct stat st;
		if (!slash || !slash[1]) {
			fail(s, 0, EINVAL, p);
			return -1;
		}
		char parent[4096];
		size_t n = slash == p ? 1 : (size_t)(slash - p);
		if (n >= sizeof parent) {
			fail(s, 0, ENAMETOOLONG, p);
			return -1;
		}
		memcpy(parent, p, n);
		parent[n] = 0;
		int pfd = open_dir(parent);
		if (pfd < 0) {
			fail(s, 0, errno, p);
			return -1;
		}
		int ok = (mkdirat(pfd, slash + 1, 0777) == 0 || errno == EEXIST) &&
			 fstatat(pfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
		int e = errno;
		close(pfd);
		if (!ok) {
			fail(s, 0, e ? e : ENOTDIR, p);
			return -1;
		}
	}
	return 0;
}

int se_shared_tmp_judge(const struct se_file_facts *parent, const struct se_file_facts *self, uint32_t uid, int missing)
{
	if (parent->err)
		return SE_TMP_PARENT_UNREAD;
	if ((parent->uid != 0 && parent->uid != uid) || ((parent->mode & 022) && !(parent->mode & S_ISVTX)))
		return SE_TMP_PARENT_UNFIT;
	if (self->err == ENOENT && missing)
		return SE_TMP_FIT;
	if (self->err)
		return SE_TMP_UNREAD;
	if (!S_ISDIR(self->mode) || self->uid != uid || (self->mode & 0777) != 0700)
		return SE_TMP_UNFIT;
	return SE_TMP_FIT;
}

static struct se_file_facts facts_of(int (*statf)(const char *, struct stat *), const char *path)
{
	struct stat st;
	struct se_file_facts f = {0, 0, 0};
	if (statf(path, &st) != 0)
		f.err = errno;
	else {
		f.uid = st.st_uid;
		f.mode = st.st_mode;
	}
	return f;
}

/* make_shared_tmp makes the shared temp mount point 0700 when missing, and
 * judges it as the decision did (se_shared_tmp_judge). */
static int make_shared_tmp(struct se_runner *s)
{
	const char *dir = rs(s->r, s->r->shared_tmp);
	if (!s->r->shared_tmp.n)
		return 0;
	if (mkdir(dir, 0700) == 0) {
		/* 0700 whatever the umask, on the directory just made: a link
		 * put in its place meanwhile is not followed. */
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fchmod(fd, 0700) != 0) {
			fail(s, 0, errno, dir);
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	} else if (errno != EEXIST) {
		fail(s, 0, errno, dir);
		return -1;
	}
	char parent[4096];
	snprintf(parent, sizeof parent, "%s", dir);
	char *slash = strrchr(parent, '/');
	if (!slash) {
		fail(s, 0, EINVAL, dir);
		return -1;
	}
	if (slash == parent)
		slash[1] = 0;
	else
		*slash = 0;
	struct se_file_facts pf = facts_of(stat, parent), df = facts_of(lstat, dir);
	int v = se_shared_tmp_judge(&pf, &df, (uint32_t)geteuid(), 0);
	if (v != SE_TMP_FIT) {
		fail(s, 0, v == SE_TMP_PARENT_UNREAD ? pf.err : v == SE_TMP_UNREAD ? df.err : EPERM,
		     v == SE_TMP_PARENT_UNREAD || v == SE_TMP_PARENT_UNFIT ? parent : dir);
		return -1;
	}
	return 0;
}

/* ---- placeholders (mountns/registry.go) ---- */

/* The init is cloned (start_init) with a copy of this process's fd table,
 * which it keeps until the program runs, and a copy of a descriptor keeps
 * its flock. Go sweeps beside the run, on another thread: a group's lock or
 * decide lock that the sweep held at the clone would stay held by the init,
 * while this run's claim waits for that very lock (until lock_wait gives
 * up). The sweep holds a group's locks only under this mutex, and the init
 * is cloned under it. */
static pthread_mutex_t sweep_locks = PTHREAD_MUTEX_INITIALIZER;

static int lock_wait(int fd, int how)
{
	long pause_us = 50;
	int64_t deadline = se_now_ns() + SE_LOCK_WAIT_MS * 1000000LL;
	for (;;) {
		if (flock(fd, how | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (se_now_ns() > deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct timespec ts = {0, pause_us * 1000};
		nanosleep(&ts, NULL);
		pause_us = pause_us * 2 > 5000 ? 5000 : pause_us * 2;
	}
}

char *se_record_path(const char *group, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t lg = strlen(group), lb = strlen(base);
	char *p = malloc(lg + lb + 4);
	if (!p)
		return NULL;
	memcpy(p, group, lg);
	memcpy(p + lg, "/n-", 3);
	memcpy(p + lg + 3, base, lb + 1);
	return p;
}

int se_hold_decisions(const char *group)
{
	char *path = join2(group, "decide");
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	free(path);
	if (fd >= 0 && lock_wait(fd, LOCK_SH) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* se_record_parse reads a placeholder's record, the text of its n-<name>
 * link: "<dev>:<ino>:<ctime sec>:<ctime nsec>" as claim writes it. 1 when
 * it is one. Go's decision reads records with it too
 * (spawn.ParsePlaceholderRecord). */
int se_record_parse(const char *text, uint64_t *dev, uint64_t *ino, int64_t *sec, int64_t *nsec)
{
	unsigned long long d, i;
	long long a, b;
	char end;
	if (sscanf(text, "%llu:%llu:%lld:%lld%c", &d, &i, &a, &b, &end) != 4)
		return 0;
	*dev = d;
	*ino = i;
	*sec = a;
	*nsec = b;
	return 1;
}

static int read_record(const char *rec, struct se_ph_id *id)
{
	char text[128];
	ssize_t n = readlink(rec, text, sizeof text - 1);
	if (n <= 0)
		return 0;
	text[n] = 0;
	return se_record_parse(text, &id->dev, &id->ino, &id->ctime_sec, &id->ctime_nsec);
}

/* open_dir opens the directory path without following a symbolic link
 * anywhere on its way (every path a recipe names is canonical), or
 * returns -1. Placeholders are made, looked at and removed through their
 * parent's descriptor: a parent swapped for a link to elsewhere (a run's
 * workspace is another run's to rename) is never followed. */
static int open_dir(const char *path)
{
	struct se_open_how how = {O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd < 0 && errno == ENOSYS)
		fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return fd;
}

/* se_remove_recorded: under the group's exclusive lock, every recorded
 * placeholder of parent that still matches its record goes, and the
 * records of those gone or no longer ours. The runner's release and Go's
 * sweep (mountns.SweepStale) both remove placeholders with it. It holds
 * the decide lock too: a decision reading a record and its directory
 * (se_hold_decisions) must not see the directory mid-removal, its ctime
 * already changed by the rmdir and its name still there. Past the wait,
 * nothing is removed: the next run's release or the sweep will. */
void se_remove_recorded(const char *group, const char *parent)
{
	char *dp = join2(group, "decide");
	int dfd = dp ? open(dp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	free(dp);
	if (dfd < 0 || lock_wait(dfd, LOCK_EX) != 0) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	DIR *d = opendir(group);
	if (!d) {
		close(dfd);
		return;
	}
	int pfd = -1, opened = 0, perr = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "n-", 2) != 0)
			continue;
		if (!opened) {
			/* Only where there is a record: most groups have none. */
			pfd = open_dir(parent);
			perr = errno;
			opened = 1;
		}
		char *rec = join2(group, e->d_name);
		struct se_guard_ph ph = {e->d_name + 2, rec, {0, 0, 0, 0}};
		if (!rec)
			continue;
		if (!read_record(rec, &ph.id))
			unlink(rec);
		else if (pfd >= 0)
			se_remove_placeholder(pfd, &ph);
		else if (perr == ENOENT || perr == ELOOP || perr == ENOTDIR)
			unlink(rec); /* the parent is gone */
		free(rec);
	}
	if (pfd >= 0)
		close(pfd);
	closedir(d);
	close(dfd);
}

char *se_group_dir(const char *registry, const char *parent)
{
	struct se_sha256 h;
	unsigned char sum[SE_SHA256_SIZE];
	se_sha256_init(&h);
	se_sha256_update(&h, parent, strlen(parent));
	se_sha256_final(&h, sum);
	char name[2 + 32 + 1] = "g-";
	for (int i = 0; i < 16; i++) {
		name[2 + 2 * i] = "0123456789abcdef"[sum[i] >> 4];
		name[3 + 2 * i] = "0123456789abcdef"[sum[i] & 15];
	}
	name[34] = 0;
	return join2(registry, name);
}

void se_sweep_placeholders(const char *registry)
{
	DIR *d = opendir(registry);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "g-", 2) != 0)
			continue;
		char *group = join2(registry, e->d_name);
		char *link = group ? join2(group, "dir") : NULL;
		char *lock = group ? join2(group, "lock") : NULL;
		char parent[4096];
		ssize_t n = link ? readlink(link, parent, sizeof parent - 1) : -1;
		char *want = NULL;
		if (n > 0) {
			parent[n] = 0;
			want = parent[0] == '/' ? se_group_dir(registry, parent) : NULL;
		}
		/* Only a group this code made, whose lock no run holds. */
		if (want && strcmp(want, group) == 0) {
			pthread_mutex_lock(&sweep_locks);
			int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
			if (fd >= 0) {
				if (flock(fd, LOCK_EX | LOCK_NB) == 0)
					se_remove_recorded(group, parent);
				close(fd);
			}
			pthread_mutex_unlock(&sweep_locks);
		}
		free(want);
		free(lock);
		free(link);
		free(group);
	}
	closedir(d);
}

static void release_claims(struct se_runner *s)
{
	for (int i = 0; i < s->nclaims; i++) {
		const struct se_rclaim *c = &RA(s->r, s->r->claims, struct se_rclaim)[i];
		if (s->lock[i] < 0)
			continue;
		if (flock(s->lock[i], LOCK_EX | LOCK_NB) == 0)
			se_remove_recorded(rs(s->r, c->dir), rs(s->r, c->parent));
		flock(s->lock[i], LOCK_UN);
		close(s->lock[i]);
		s->lock[i] = -1;
		if (s->decide[i] >= 0)
			close(s->decide[i]);
		if (s->parent[i] >= 0)
			close(s->parent[i]);
		s->decide[i] = s->parent[i] = -1;
	}
	s->nclaims = 0;
}

/* hold_placeholder opens the placeholder at path (O_PATH: a reference, never
 * used for anything else), or returns -1. The guardian keeps it for the
 * run, so that the rmdir at the end only unlinks the name: the inode is
 * freed when the guardian lets it go, after the helper has exited. Freeing
 * a directory's block is most of an rmdir's cost where the filesystem
 * discards freed blocks at once (ext4 mounted with discard: some 90 us
 * each); the name is gone as before when the helper exits. A placeholder
 * that cannot be held is removed as before, at full cost. */
static int hold_placeholder(int pfd, const char *name)
{
	return openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* drop_holds closes the runner's own references on the placeholders. */
static void drop_holds(struct se_runner *s)
{
	for (int i = 0; i < s->nph; i++) {
		if (s->ph[i].hold >= 0)
			close(s->ph[i].hold);
		s->ph[i].hold = -1;
	}
}

/* claim takes the groups' locks, then decides nothing: each placeholder
 * the view covers must be missing (made here and recorded) or a recorded
 * placeholder still matching its record; anything else means the view
 * Go decided no longer holds. */
static int claim(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	int ndecide = 0, ok = 0;
	const char *at = "placeholder registry";
	for (uint32_t i = 0; i < r->claims.n; i++) {
		const struct se_rclaim *c = &RA(r, r->claims, struct se_rclaim)[i];
		const char *dir = rs(r, c->dir);
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			goto out;
		char *link = join2(dir, "dir");
		if (!link)
			goto out;
		if (symlink(rs(r, c->parent), link) != 0 && errno != EEXIST) {
			free(link);
			goto out;
		}
		free(link);
		char *lp = join2(dir, "lock");
		int fd = lp ? open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
		free(lp);
		if (fd < 0)
			goto out;
		s->lock[s->nclaims++] = fd;
		if (lock_wait(fd, LOCK_SH) != 0)
			goto out;
	}
	for (uint32_t i = 0; i < r->claims.n; i++) {
		const struct se_rclaim *c = &RA(r, r->claims, struct se_rclaim)[i];
		char *dp = join2(rs(r, c->dir), "decide");
		int fd = dp ? open(dp, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
		free(dp);
		if (fd < 0)
			goto out;
		s->decide[ndecide++] = fd;
		if (lock_wait(fd, LOCK_EX) != 0)
			goto out;
	}
	for (uint32_t i = 0; i < r->claims.n; i++) {
		const struct se_rclaim *c = &RA(r, r->claims, struct se_rclaim)[i];
		/* A group with nothing to make here (a directory on the way to
		 * a placeholder's, which may not exist) is only locked. */
		if (c->placeholders.n == 0)
			continue;
		/* The parent is the directory the decision saw, taken once. */
		at = rs(r, c->parent);
		int pfd = s->parent[i] = open_dir(at);
		struct stat pst;
		if (pfd < 0 || fstat(pfd, &pst) != 0 || (c->parent_id.kind == SE_ID_FILE &&
							 ((uint64_t)pst.st_dev != c->parent_id.dev ||
							  (uint64_t)pst.st_ino != c->parent_id.ino))) {
			errno = ESTALE; /* not the directory the decision saw */
			goto out;
		}
		for (uint32_t j = 0; j < c->placeholders.n; j++) {
			const char *p = rs(r, RA(r, c->placeholders, struct se_rref)[j]);
			at = p;
			const char *name = strrchr(p, '/');
			struct stat st;
			struct se_ph d;
			if (s->nph >= SE_MAX_PH || !name)
				goto out;
			name++;
			memset(&d, 0, sizeof d);
			d.record = se_record_path(rs(r, c->dir), p);
			d.path = strdup(p);
			if (!d.record || !d.path)
				goto out;
			if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
				if (!read_record(d.record, &d.id) || !se_ph_matches(&d.id, &st)) {
					errno = EEXIST; /* not a placeholder: the view changed */
					free(d.record);
					free(d.path);
					goto out;
				}
			} else if (errno != ENOENT) {
				free(d.record);
				free(d.path);
				goto out;
			} else {
				char text[128];
				if (mkdirat(pfd, name, 0700) != 0) {
					free(d.record);
					free(d.path);
					goto out;
				}
				if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
					unlinkat(pfd, name, AT_REMOVEDIR);
					free(d.record);
					free(d.path);
					goto out;
				}
				d.id.dev = (uint64_t)st.st_dev;
				d.id.ino = (uint64_t)st.st_ino;
				d.id.ctime_sec = st.st_ctim.tv_sec;
				d.id.ctime_nsec = st.st_ctim.tv_nsec;
				snprintf(text, sizeof text, "%llu:%llu:%lld:%lld", (unsigned long long)d.id.dev,
					 (unsigned long long)d.id.ino, (long long)d.id.ctime_sec, (long long)d.id.ctime_nsec);
				/* A record of an earlier placeholder that is gone is
				 * replaced. */
				if (symlink(text, d.record) != 0 &&
				    (errno != EEXIST || unlink(d.record) != 0 || symlink(text, d.record) != 0)) {
					unlinkat(pfd, name, AT_REMOVEDIR);
					free(d.record);
					free(d.path);
					goto out;
				}
			}
			d.hold = hold_placeholder(pfd, name);
			s->ph_group[s->nph] = (int)i;
			s->ph[s->nph++] = d;
		}
	}
	ok = 1;
out:
	if (!ok)
		fail(s, 0, errno, at);
	for (int i = 0; i < ndecide; i++)
		flock(s->decide[i], LOCK_UN);
	return ok ? 0 : -1;
}

/* name_placeholders gives the child's operations on placeholders the
 * identity of the one the run made or found recorded: the stage takes
 * nothing else at their paths. */
static void name_placeholders(struct se_runner *s)
{
	struct se_op *ops = s->c.ops;
	if (!ops)
		return;
	for (uint32_t i = 0; i < s->r->ops.n; i++) {
		struct se_op *op = &ops[i];
		struct se_ident *ids[2] = {&op->ida, &op->idb};
		const char *paths[2] = {op->a, op->b};
		for (int k = 0; k < 2; k++) {
			if (ids[k]->kind != SE_ID_PLACEHOLDER || !paths[k])
				continue;
			for (int j = 0; j < s->nph; j++) {
				if (strcmp(s->ph[j].path, paths[k]) == 0) {
					ids[k]->dev = s->ph[j].id.dev;
					ids[k]->ino = s->ph[j].id.ino;
				}
			}
		}
	}
}

/* ---- the cgroup ---- */

/* A run's groups are named SE_CG_PREFIX "<pid>-<start>-<pidns>-<random>":
 * the supervisor's pid, its start time (field 22 of /proc/<pid>/stat, clock
 * ticks since boot, so that a reused pid is not taken for it), the inode of
 * its pid namespace (a pid means something only there) and 48 random bits
 * in hex, so that the groups of one supervisor differ. Without a start time
 * or a namespace the name has fewer fields. */
#define SE_CG_PREFIX "sandbox-executable-"

/* proc_start reads field 22 (the start time) and the state of the stat
 * text of a process; 0 when it cannot. */
static unsigned long long proc_start(char *stat_text, char *state)
{
	char *p = strrchr(stat_text, ')');
	if (!p || p[1] != ' ')
		return 0;
	if (state)
		*state = p[2];
	for (int field = 2; *p; p++)
		if (*p == ' ' && ++field == 22)
			return strtoull(p + 1, NULL, 10);
	return 0;
}

static unsigned long long own_pidns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

static int make_name(struct se_runner *s)
{
	char stat_text[1024];
	unsigned long long start = 0, ns = own_pidns(), rnd = 0;
	if (read_small("/proc/self/stat", stat_text, sizeof stat_text) > 0)
		start = proc_start(stat_text, NULL);
	if (getrandom(&rnd, 6, 0) != 6)
		return -1;
	rnd &= (1ULL << 48) - 1;
	int pid = getpid();
	if (start && ns)
		snprintf(s->name, sizeof s->name, SE_CG_PREFIX "%d-%llu-%llu-%012llx", pid, start, ns, rnd);
	else if (start)
		snprintf(s->name, sizeof s->name, SE_CG_PREFIX "%d-%llu-%012llx", pid, start, rnd);
	else
		snprintf(s->name, sizeof s->name, SE_CG_PREFIX "%d-%012llx", pid, rnd);
	return 0;
}

/* name_number parses the digits from p to end (decimal or hex) into *v:
 * 0 when the span is empty, too long or holds anything else. */
static int name_number(const char *p, const char *end, int base, unsigned long long *v)
{
	if (p == end || end - p > 20)
		return 0;
	*v = 0;
	for (; p < end; p++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else
			return 0;
		if (*v > (~0ULL - (unsigned long long)d) / (unsigned long long)base)
			return 0;
		*v = *v * (unsigned long long)base + (unsigned long long)d;
	}
	return 1;
}

int se_cgroup_stale(const char *name)
{
	size_t lp = strlen(SE_CG_PREFIX);
	if (strncmp(name, SE_CG_PREFIX, lp) != 0)
		return 0;
	/* Two to four fields: pid [start [pidns]] random. */
	const char *f[5];
	int nf = 0;
	f[nf++] = name + lp;
	for (const char *p = name + lp; *p; p++) {
		if (*p == '-') {
			if (nf == 4)
				return 0;
			f[nf++] = p + 1;
		}
	}
	if (nf < 2)
		return 0;
	const char *end_of[4];
	for (int i = 0; i < nf; i++)
		end_of[i] = i + 1 < nf ? f[i + 1] - 1 : f[i] + strlen(f[i]);
	unsigned long long pid, start = 0, ns = 0, rnd;
	if (!name_number(f[0], end_of[0], 10, &pid) || pid == 0 || pid > 0x7fffffff)
		return 0;
	if (nf >= 3 && (!name_number(f[1], end_of[1], 10, &start) || start == 0))
		return 0;
	if (nf == 4 && (!name_number(f[2], end_of[2], 10, &ns) || ns == 0))
		return 0;
	if (!name_number(f[nf - 1], end_of[nf - 1], 16, &rnd) || end_of[nf - 1] - f[nf - 1] > 16)
		return 0;
	/* Another pid namespace's supervisor: its pid means nothing in this
	 * /proc. */
	unsigned long long own = own_pidns();
	if (ns && own && ns != own)
		return 0;
	char path[64], stat_text[1024];
	snprintf(path, sizeof path, "/proc/%llu/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	ssize_t n = read(fd, stat_text, sizeof stat_text - 1);
	int err = errno;
	close(fd);
	if (n <= 0)
		return n < 0 && err == ESRCH; /* unreadable: taken for alive */
	stat_text[n] = 0;
	char state = 0;
	unsigned long long now = proc_start(stat_text, &state);
	if (state == 'Z' || state == 'X')
		return 1;
	return start != 0 && now != start;
}

static int has_words(const char *list, const char *want)
{
	char w[256];
	snprintf(w, sizeof w, "%s", want);
	for (char *save = NULL, *tok = strtok_r(w, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		size_t n = strlen(tok);
		const char *p = list;
		int found = 0;
		while ((p = strstr(p, tok)) != NULL) {
			if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n')) {
				found = 1;
				break;
			}
			p += n;
		}
		if (!found)
			return 0;
	}
	return 1;
}

static int swap_on(void)
{
	char text[4096];
	ssize_t n = read_small("/proc/swaps", text, sizeof text);
	if (n < 0)
		return errno != ENOENT;
	char *nl = strchr(text, '\n');
	return nl && nl[1] != 0;
}

static int cg_write(const char *dir, const struct se_recipe *r, const struct se_rwrite *w)
{
	char *path = join2(dir, rs(r, w->file));
	if (!path)
		return -1;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	free(path);
	if (fd < 0) {
		if (errno == ENOENT && w->missing == SE_MAY_MISS)
			return 0;
		if (errno == ENOENT && w->missing == SE_SWAP_ACCOUNT && !swap_on())
			return 0;
		return -1;
	}
	int ret = write_all(fd, rs(r, w->value), w->value.n);
	int e = errno;
	close(fd);
	errno = e;
	return ret;
}

static void remove_cgroups(struct se_runner *s, int *busy)
{
	int was = s->ncg;
	if (s->v2_fd >= 0)
		close(s->v2_fd);
	if (s->procs_fd >= 0)
		close(s->procs_fd);
	for (int i = 0; i < s->njoin; i++)
		close(s->join[i]);
	s->v2_fd = s->procs_fd = -1;
	s->njoin = 0;
	for (int i = 0; i < s->ncg; i++) {
		if (!s->cg[i])
			continue;
		if (rmdir(s->cg[i]) != 0 && errno != ENOENT) {
			if (busy)
				*busy = 1;
			continue;
		}
		free(s->cg[i]);
		s->cg[i] = NULL;
	}
	/* The parents made for this run go once empty (another run's group
	 * in one keeps it: rmdir fails). */
	if (was && !(busy && *busy))
		for (uint32_t i = 0; i < s->r->cgroup_made.n; i++)
			rmdir(rs(s->r, RA(s->r, s->r->cgroup_made, struct se_rref)[i]));
}

static int make_cgroups(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	if (r->cgroups.n == 0)
		return 0;
	for (uint32_t i = 0; i < r->cgroups.n; i++) {
		const struct se_rcg *c = &RA(r, r->cgroups, struct se_rcg)[i];
		const char *parent = rs(r, c->parent);
		if (c->require.n) {
			char *sc = join2(parent, "cgroup.subtree_control");
			char text[512];
			ssize_t n = sc ? read_small(sc, text, sizeof text) : -1;
			free(sc);
			if (n < 0 || !has_words(text, rs(r, c->require))) {
				fail(s, 0, ENOENT, "cgroup controllers");
				return -1;
			}
		}
		char *dir = join2(parent, s->name);
		if (!dir || mkdir(dir, 0755) != 0) {
			fail(s, 0, errno, dir ? dir : "cgroup");
			free(dir);
			return -1;
		}
		s->cg[s->ncg++] = dir;
		for (uint32_t j = 0; j < c->writes.n; j++) {
			if (cg_write(dir, r, &RA(r, c->writes, struct se_rwrite)[j]) != 0) {
				fail(s, 0, errno, rs(r, RA(r, c->writes, struct se_rwrite)[j].file));
				return -1;
			}
		}
		if (c->v2) {
			s->v2_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (s->v2_fd < 0) {
				fail(s, 0, errno, dir);
				return -1;
			}
			s->v2_index = (int)i;
		}
		if (c->join) {
			char *tasks = join2(dir, "tasks");
			int fd = tasks ? open(tasks, O_WRONLY | O_CLOEXEC) : -1;
			free(tasks);
			if (fd < 0) {
				fail(s, 0, errno, "tasks");
				return -1;
			}
			s->join[s->njoin++] = fd;
		}
	}
	return 0;
}

/* ---- the guardian (spawn/guardian.go's StartGuardian) ---- */

struct se_bump {
	char *mem;
	size_t off, size;
};

static void *bump(struct se_bump *b, size_t n)
{
	b->off = (b->off + 7) & ~(size_t)7;
	if (b->off + n > b->size)
		return NULL;
	void *p = b->mem + b->off;
	b->off += n;
	return p;
}

static char *bump_str(struct se_bump *b, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = bump(b, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int start_guardian(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	int tmp = r->tmp_dir.n && r->tmp_fd >= 0;
	if (s->ncg == 0 && s->nclaims == 0 && !tmp)
		return 0;
	size_t size = SE_GUARD_STACK + sizeof(struct se_guard) + 4096 + sizeof(int) * (size_t)s->nph;
	if (tmp)
		size += sizeof(struct se_guard_tmp) + r->tmp_dir.n + r->tmp_record.n + 32 +
			SE_RM_DEPTH * sizeof(struct se_rm_level);
	size += (size_t)s->ncg * (3 * 8 + 2 * 4096);
	size += (size_t)s->nclaims * (sizeof(struct se_guard_lock) + 16);
	for (int i = 0; i < s->nph; i++)
		size += sizeof(struct se_guard_ph) + strlen(s->ph[i].path) + strlen(s->ph[i].record) + 32;
	size += r->sweep_request.n + 16;
	size = (size + 4095) & ~(size_t)4095;
	void *base = se_guard_alloc(size);
	if (!base) {
		fail(s, 0, ENOMEM, "guardian");
		return -1;
	}
	struct se_bump b = {base, SE_GUARD_STACK, size};
	struct se_guard *g = bump(&b, sizeof *g);
	memset(g, 0, sizeof *g);
	/* An init cloned before the guardian (start_init): nothing is removed
	 * while it lives. A child cloned later is written here as it is
	 * (finish_child: CLONE_PARENT_SETTID). */
	g->child_pid = s->c.pid > 0 ? (int)s->c.pid : 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		fail(s, 0, errno, "guardian pipe");
		return -1;
	}
	g->pipe_fd = p[0];
	g->kill_rounds = r->guard_kill_rounds;
	g->kill_interval_ms = r->guard_kill_interval_ms;
	g->child_wait_ms = r->guard_child_wait_ms;
	g->ready_wait_ms = r->guard_ready_wait_ms;
	g->clone_fallback = 1;
	/* The cgroup: as cgroups.Cleanup lists it. */
	if (s->ncg > 0) {
		const char **procs = bump(&b, sizeof(char *) * (size_t)s->ncg);
		const char **dirs = bump(&b, sizeof(char *) * (size_t)s->ncg);
		int n = 0;
		for (int i = 0; i < s->ncg; i++) {
			char tmp[4200];
			if (i == s->v2_index && s->v2_fd >= 0) {
				struct stat st;
				snprintf(tmp, sizeof tmp, "%s/cgroup.kill", s->cg[i]);
				if (stat(tmp, &st) == 0)
					g->kill_file = bump_str(&b, tmp);
			}
			snprintf(tmp, sizeof tmp, "%s/cgroup.procs", s->cg[i]);
			procs[n] = bump_str(&b, tmp);
			dirs[n] = bump_str(&b, s->cg[i]);
			n++;
		}
		g->procs = procs;
		g->nprocs = n;
		g->dirs = dirs;
		g->ndirs = n;
	}
	if (s->nclaims > 0) {
		struct se_guard_lock *locks = bump(&b, sizeof *locks * (size_t)s->nclaims);
		for (int i = 0; i < s->nclaims; i++) {
			int nph = 0;
			for (int j = 0; j < s->nph; j++)
				nph += s->ph_group[j] == i;
			locks[i].fd = s->lock[i];
			locks[i].decide_fd = s->decide[i];
			locks[i].parent_fd = s->parent[i];
			locks[i].nph = nph;
			locks[i].ph = NULL;
			if (nph == 0)
				continue;
			struct se_guard_ph *phs = bump(&b, sizeof *phs * (size_t)nph);
			int k = 0;
			for (int j = 0; j < s->nph; j++) {
				if (s->ph_group[j] != i)
					continue;
				const char *slash = strrchr(s->ph[j].path, '/');
				phs[k].name = bump_str(&b, slash ? slash + 1 : s->ph[j].path);
				phs[k].record = bump_str(&b, s->ph[j].record);
				phs[k].id = s->ph[j].id;
				k++;
			}
			locks[i].ph = phs;
		}
		g->locks = locks;
		g->nlocks = s->nclaims;
	}
	if (tmp) {
		struct se_guard_tmp *t = bump(&b, sizeof *t);
		t->path = bump_str(&b, rs(r, r->tmp_dir));
		t->record = r->tmp_record.n ? bump_str(&b, rs(r, r->tmp_record)) : NULL;
		t->fd = r->tmp_fd;
		g->tmp_dirs = t;
		g->ntmp_dirs = 1;
		g->rm_levels = bump(&b, SE_RM_DEPTH * sizeof(struct se_rm_level));
	}
	int *keep = bump(&b, sizeof(int) * (size_t)(2 + 3 * s->nclaims + s->nph));
	int nkeep = 0;
	keep[nkeep++] = p[0];
	if (tmp)
		keep[nkeep++] = r->tmp_fd;
	for (int i = 0; i < s->nclaims; i++) {
		keep[nkeep++] = s->lock[i];
		if (s->decide[i] >= 0)
			keep[nkeep++] = s->decide[i];
		if (s->parent[i] >= 0)
			keep[nkeep++] = s->parent[i];
	}
	for (int i = 0; i < s->nph; i++)
		if (s->ph[i].hold >= 0)
			keep[nkeep++] = s->ph[i].hold;
	qsort(keep, (size_t)nkeep, sizeof(int), cmp_int);
	g->keep_fds = keep;
	g->nkeep = nkeep;
	if (r->sweep_request.n)
		g->sweep_request = bump_str(&b, rs(r, r->sweep_request));
	if (b.off > b.size) {
		fail(s, 0, ENOMEM, "guardian");
		return -1;
	}
	long pid = se_guardian(g, base, SE_GUARD_STACK);
	/* Out of the caller's process group at once, whenever the guardian
	 * first gets a CPU (it makes a session of its own then): a killpg
	 * aimed at the helper must not take it along. */
	if (pid > 0)
		setpgid((pid_t)pid, (pid_t)pid);
	close(p[0]);
	/* The guardian has its own copies of the holds (or there is none to
	 * keep them, and the removal pays in full). */
	drop_holds(s);
	if (pid < 0) {
		close(p[1]);
		fail(s, 0, (int)-pid, "guardian clone");
		return -1;
	}
	s->g = g;
	s->guard_pid = (int)pid;
	s->guard_w = p[1];
	return 0;
}

static void release_guardian(struct se_runner *s)
{
	if (!s->g || s->guard_w < 0)
		return;
	se_guard_wait_ready(s->g);
	char d = 'D';
	(void)!write(s->guard_w, &d, 1);
	close(s->guard_w);
	s->guard_w = -1;
}

/* ---- Landlock (landlock.Spec.Build) ---- */

struct se_ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct se_ll_port {
	uint64_t allowed_access;
	uint64_t port;
};


/* A batch of the rules' O_PATH fds, closed together: with hundreds of
 * rules (the entries of a directory split around a denied path), a close
 * per rule is a quarter of their cost. Nothing in the batch is closed
 * before the batch is, so each new fd is normally the lowest free one and
 * above those before it. Only a run of consecutive numbers, every one of
 * them the batch's own, goes in one close_range: an fd held between two
 * (a hole they skipped) is never in a range. Where another thread frees a
 * lower number meanwhile (a run Go decided calls the runner with its
 * threads running), the fd that reuses it is closed at once. */
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438 /* the same on x86_64 and aarch64 */
#endif
#ifndef SYS_close_range
#define SYS_close_range 436 /* the same on x86_64 and aarch64 */
#endif

struct se_fd_batch {
	int fd[64];
	int n;
};

static void batch_flush(struct se_fd_batch *b)
{
	for (int i = 0; i < b->n;) {
		int j = i;
		while (j + 1 < b->n && b->fd[j + 1] == b->fd[j] + 1)
			j++;
		if (syscall(SYS_close_range, (unsigned)b->fd[i], (unsigned)b->fd[j], 0) != 0)
			for (int k = i; k <= j; k++)
				close(b->fd[k]); /* before 5.9 */
		i = j + 1;
	}
	b->n = 0;
}

static void batch_add(struct se_fd_batch *b, int fd)
{
	if (b->n > 0 && fd <= b->fd[b->n - 1]) {
		close(fd);
		return;
	}
	b->fd[b->n++] = fd;
	if (b->n == (int)(sizeof b->fd / sizeof b->fd[0]))
		batch_flush(b);
}

/* open_rule_path opens path with flags, never through a symbolic link. */
static int open_rule_path(const char *path, int flags, struct se_fd_batch *b)
{
	struct se_open_how how = {(uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW), 0, RESOLVE_NO_SYMLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd < 0 && errno == EMFILE && b->n > 0) {
		batch_flush(b);
		fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	}
	if (fd < 0 && errno == ENOSYS)
		fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
	return fd;
}

static long add_beneath(int rs_fd, uint64_t access, int fd)
{
	struct se_ll_path_beneath pb = {access, fd};
	return syscall(SYS_landlock_add_rule, rs_fd, 1, &pb, 0);
}

/* The type of a file as a listing gave it, for add_path_rule. */
enum se_listed { SE_UNLISTED, SE_LISTED_DIR, SE_LISTED_FILE };

/* add_path_rule grants access on the file open at fd. Listed as a
 * directory, it gets a directory's rights without a stat; refused
 * (EINVAL: no longer a directory), it is stat'ed as an unlisted one is.
 * Listed as another type, it gets a non-directory's rights (less, should
 * it be a directory now; inert on a symbolic link, as no access is checked
 * on a link itself). An unlisted symbolic link gets no rule (an error when
 * required). 1 added or skipped, 0 failed (errno). */
static int add_path_rule(const struct se_recipe *r, int rs_fd, uint64_t access, int required, enum se_listed listed,
			 int fd)
{
	if (listed == SE_LISTED_FILE)
		access &= r->ll_file_rights;
	if (listed != SE_UNLISTED && (!access || add_beneath(rs_fd, access, fd) == 0))
		return 1;
	if (listed == SE_LISTED_FILE || (listed == SE_LISTED_DIR && errno != EINVAL))
		return 0;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		errno = ELOOP;
		return !required;
	}
	if (!S_ISDIR(st.st_mode))
		access &= r->ll_file_rights;
	return !access || add_beneath(rs_fd, access, fd) == 0;
}

/* excepted reports whether name is one of rule's except names. */
static int excepted(const struct se_recipe *r, const struct se_rll *rule, const char *name)
{
	for (uint32_t i = 0; i < rule->except.n; i++)
		if (strcmp(rs(r, RA(r, rule->except, struct se_rref)[i]), name) == 0)
			return 1;
	return 0;
}

/* add_entry_rules grants rule's access on each entry of the directory path,
 * open at dir (which it closes), but the excepted names and symbolic links,
 * as this listing finds them; one that vanishes meanwhile is skipped. */
static int add_entry_rules(struct se_runner *s, const struct se_rll *rule, const char *path, int dir,
			   struct se_fd_batch *b)
{
	const struct se_recipe *r = s->r;
	uint64_t access = rule->access & r->ll_handled_fs;
	DIR *d = fdopendir(dir);
	const struct dirent *e = NULL;
	int ok = d != NULL;
	while (ok && (errno = 0, e = readdir(d))) {
		if (e->d_type == DT_LNK || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    excepted(r, rule, e->d_name))
			continue;
		int fd = openat(dir, e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == EMFILE && b->n > 0) {
			batch_flush(b);
			fd = openat(dir, e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0 && errno == ENOENT)
			continue;
		enum se_listed listed = e->d_type == DT_DIR ? SE_LISTED_DIR : e->d_type == DT_UNKNOWN ? SE_UNLISTED : SE_LISTED_FILE;
		ok = fd >= 0 && add_path_rule(r, s->ruleset, access, 0, listed, fd);
		if (fd >= 0)
			batch_add(b, fd);
	}
	ok = ok && errno == 0;
	if (!ok) {
		char where[PATH_MAX + 256];
		snprintf(where, sizeof where, "%s%s%s", path, e && strcmp(path, "/") ? "/" : "", e ? e->d_name : "");
		fail(s, SE_STEP_LANDLOCK, errno, where);
	}
	if (d)
		closedir(d);
	else
		close(dir);
	return ok ? 0 : -1;
}

int se_landlock_restrict_thread(uint64_t rights, const int *dirs, int n)
{
	uint64_t attr[1] = {rights};
	int rs_fd = (int)syscall(SYS_landlock_create_ruleset, attr, sizeof attr, 0);
	if (rs_fd < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		if (add_beneath(rs_fd, rights, dirs[i]) != 0) {
			int err = errno;
			close(rs_fd);
			return -err;
		}
	}
	long r = syscall(SYS_landlock_restrict_self, rs_fd, 0);
	int err = errno;
	close(rs_fd);
	return r == 0 ? 0 : -err;
}

/* create_ruleset makes the (empty) Landlock ruleset, s->ruleset. */
static int create_ruleset(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	if (r->ll_abi < 1)
		return 0;
	uint64_t attr[3] = {r->ll_handled_fs, r->ll_handled_net, r->ll_scoped};
	size_t size = 8;
	if (r->ll_handled_net)
		size = 16;
	if (r->ll_scoped)
		size = 24;
	int rs_fd = (int)syscall(SYS_landlock_create_ruleset, attr, size, 0);
	if (rs_fd < 0) {
		fail(s, SE_STEP_LANDLOCK, errno, "create ruleset");
		return -1;
	}
	s->ruleset = rs_fd;
	return 0;
}

/* add_rules adds the recipe's rules to s->ruleset. Any process holding the
 * ruleset's fd sees them: a held init (every init is) cloned with it, before
 * they were added, restricts its program with all of them. */
static int add_rules(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	int rs_fd = s->ruleset;
	if (rs_fd < 0)
		return 0;
	struct se_fd_batch b;
	b.n = 0;
	for (uint32_t i = 0; i < r->ll_paths.n; i++) {
		const struct se_rll *rule = &RA(r, r->ll_paths, struct se_rll)[i];
		const char *path = rs(r, rule->path);
		int fd = open_rule_path(path, rule->entries ? O_RDONLY | O_DIRECTORY : O_PATH, &b);
		if (fd < 0) {
			/* Not granting is the safe side: a path that vanished, and
			 * a split directory this user cannot list. */
			if (!rule->required && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP ||
						(rule->entries && errno == EACCES)))
				continue;
			fail(s, SE_STEP_LANDLOCK, errno, path);
			batch_flush(&b);
			return -1;
		}
		if (rule->entries) {
			if (add_entry_rules(s, rule, path, fd, &b) == 0)
				continue;
			batch_flush(&b);
			return -1;
		}
		int ok = add_path_rule(r, rs_fd, rule->access & r->ll_handled_fs, rule->required, SE_UNLISTED, fd);
		if (!ok)
			fail(s, SE_STEP_LANDLOCK, errno, path);
		batch_add(&b, fd);
		if (!ok) {
			batch_flush(&b);
			return -1;
		}
	}
	batch_flush(&b);
	for (uint32_t i = 0; i < r->ll_ports.n; i++) {
		struct se_ll_port np = {r->ll_net_connect, RA(r, r->ll_ports, uint16_t)[i]};
		if (syscall(SYS_landlock_add_rule, rs_fd, 2, &np, 0) != 0) {
			fail(s, SE_STEP_LANDLOCK, errno, "port rule");
			return -1;
		}
	}
	return 0;
}

/* ---- undo ---- */

/* close_audit closes what open_audit made and Go has not taken. */
static void close_audit(struct se_runner *s)
{
	int *fds[] = {&s->audit_fd, &s->audit_parent, &s->audit_child};
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

static void undo(struct se_runner *s)
{
	close_audit(s);
	if (s->ruleset >= 0)
		close(s->ruleset);
	if (s->notify_parent >= 0)
		close(s->notify_parent);
	if (s->notify_child >= 0)
		close(s->notify_child);
	s->ruleset = s->notify_parent = s->notify_child = -1;
	int busy = 0;
	remove_cgroups(s, &busy);
	release_claims(s);
	if (!busy)
		release_guardian(s);
	drop_holds(s);
	for (int i = 0; i < s->nph; i++) {
		free(s->ph[i].path);
		free(s->ph[i].record);
	}
	s->nph = 0;
}

/* ---- signals ---- */

/* forward passes a caught signal on to the init (or the program), but
 * for one the terminal gave the program too. A SIGCONT (fg or bg after a
 * stop) continues a program that took the terminal at once, giving it the
 * terminal back where the caller's shell gave it to this process's group. */
static void forward(struct se_runner *s, int pid, int sig)
{
	if (sig == SIGCONT && se_term_continue(&s->term))
		return;
	if (!se_term_shared_signal(sig))
		kill(pid, sig);
}

static int terminating(int sig)
{
	return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

/* The signals the helper passes on to the program. They are blocked in the
 * helper's only thread from its first constructor on (se_block_signals),
 * and the runner reads them from a signalfd. Once Go runs (a run it
 * decides, or one it serves) its runtime takes SIGTERM, SIGINT, SIGHUP and
 * SIGQUIT itself in every thread it makes, whatever the mask: Go catches
 * those with os/signal from its first package's init and passes each on to
 * the runner, one byte on the service's sig pipe (spawn/signals.go); the
 * others stay blocked in Go's threads too and come through the signalfd.
 * Either way the runner alone decides what to do with them. */
static const int se_forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};
#define SE_NFORWARDED ((int)(sizeof se_forwarded / sizeof se_forwarded[0]))

static void forwarded_set(sigset_t *set)
{
	sigemptyset(set);
	for (int i = 0; i < SE_NFORWARDED; i++)
		sigaddset(set, se_forwarded[i]);
}

int se_forwarded_signals(int *out, int max)
{
	int n = 0;
	for (int i = 0; i < SE_NFORWARDED && n < max; i++)
		out[n++] = se_forwarded[i];
	return n;
}

/* se_block_signals blocks the forwarded signals in the helper's only
 * thread, before the Go runtime starts (its threads inherit the mask).
 * se_capture_initial_state (101) has recorded the caller's mask for the
 * program first. Only the helper's own binary does (se_is_helper): a test
 * binary that links this package keeps its signals. */
extern int se_is_helper __attribute__((weak));
int se_helper_binary(void);
__attribute__((constructor(105))) static void se_block_signals(void)
{
	if (!se_helper_binary())
		return;
	sigset_t set;
	forwarded_set(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

int se_helper_binary(void)
{
	return &se_is_helper && se_is_helper;
}

static int open_signals(struct se_runner *s)
{
	sigset_t set;
	forwarded_set(&set);
	s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return s->sigfd < 0 ? -1 : 0;
}

static void close_signals(struct se_runner *s)
{
	if (s->sigfd >= 0)
		close(s->sigfd);
	s->sigfd = -1;
}

/* next_signal returns the next forwarded signal that came, from the
 * signalfd or from Go, or 0. */
static int next_signal(struct se_runner *s)
{
	struct signalfd_siginfo si;
	if (s->sigfd >= 0 && read(s->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		return (int)si.ssi_signo;
	unsigned char b;
	if (s->svc && s->svc->sig_r >= 0 && read(s->svc->sig_r, &b, 1) == 1)
		return b;
	return 0;
}

/* ---- the child ---- */

char **se_exec_paths(const char *const *dirs, size_t n, const char *name)
{
	size_t count = strchr(name, '/') ? 1 : n;
	char **c = calloc(count + 1, sizeof *c);
	if (!c)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		const char *d = strchr(name, '/') ? NULL : dirs[i];
		if (!d || strcmp(d, ".") == 0)
			c[i] = strdup(name);
		else if (strcmp(d, "/") == 0)
			c[i] = join2("", name);
		else
			c[i] = join2(d, name);
		if (!c[i]) {
			for (size_t j = 0; j < i; j++)
				free(c[j]);
			free(c);
			return NULL;
		}
	}
	return c;
}

/* candidates are the paths the child tries for name (se_exec_paths over
 * the recipe's PATH entries). */
static char **candidates(const struct se_recipe *r, const char *name)
{
	const char **dirs = calloc(r->path_dirs.n + 1, sizeof *dirs);
	if (!dirs)
		return NULL;
	for (uint32_t i = 0; i < r->path_dirs.n; i++)
		dirs[i] = rs(r, RA(r, r->path_dirs, struct se_rref)[i]);
	char **c = se_exec_paths(dirs, r->path_dirs.n, name);
	free(dirs);
	return c;
}

static int recv_fd(int sock)
{
	char b;
	struct iovec iov = {&b, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = {0};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof u.buf;
	if (recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

/* open_audit opens what a run whose file denials are read needs (the
 * recipe's audit): the kernel audit log's multicast socket, bound before
 * the program exists so that no record of its domain comes before it, and
 * the pair the program says its pid on, with the random name it takes
 * (se_audit_mark): the kernel's record of a domain names its creator by
 * both, as they were when it was made, so Go tells the run's domain from
 * every other, a pid reused included. A socket the kernel refuses (no
 * CAP_AUDIT_READ where the helper runs) fails nothing but the reading: Go
 * reports audit_err. */
static void open_audit(struct se_runner *s)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
	if (fd < 0) {
		s->audit_err = errno;
		return;
	}
	/* Records queue here until Go reads them: room for bursts. */
	int size = 4 << 20, on = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = 1 /* AUDIT_NLGRP_READLOG */};
	int sp[2];
	unsigned char nonce[6];
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce) {
		s->audit_err = errno;
		close(fd);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) != 0) {
		s->audit_err = errno;
		close(fd);
		return;
	}
	if (setsockopt(sp[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0) {
		s->audit_err = errno;
		close(fd);
		close(sp[0]);
		close(sp[1]);
		return;
	}
	s->audit_fd = fd;
	s->audit_parent = sp[0];
	s->audit_child = sp[1];
	snprintf(s->audit_comm, sizeof s->audit_comm, "se-%02x%02x%02x%02x%02x%02x", nonce[0], nonce[1], nonce[2], nonce[3],
		 nonce[4], nonce[5]);
}

/* audit_said reads the pid the program said (se_audit_mark, before its
 * exec: the runner asks once the program runs), as this process's PID
 * namespace numbers it; 0 when it said nothing. */
static int audit_said(struct se_runner *s)
{
	if (s->audit_parent < 0)
		return 0;
	char b;
	struct iovec iov = {&b, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} u;
	struct msghdr m = {0};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof u.buf;
	int pid = 0;
	if (recvmsg(s->audit_parent, &m, MSG_DONTWAIT) == 1) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
			struct ucred cr;
			memcpy(&cr, CMSG_DATA(c), sizeof cr);
			pid = cr.pid;
		}
	}
	close(s->audit_parent);
	s->audit_parent = -1;
	return pid;
}

/* early_signal reads the signals that came while the run was set up: it
 * returns the first terminating one (the program must not start), or 0;
 * the others are kept, to be passed on once it runs. */
static int early_signal(struct se_runner *s)
{
	int sig;
	while ((sig = next_signal(s)) != 0) {
		if (terminating(sig))
			return sig;
		if (s->nearly < 16)
			s->early[s->nearly++] = sig;
	}
	return 0;
}

/* exit_after_go ends the helper with code once Go's held work is done:
 * hold_r reads its end (se_service). */
static __attribute__((noreturn)) void exit_after_go(struct se_runner *s, int code)
{
	char c;
	while (s->svc && s->svc->hold_r >= 0) {
		ssize_t n = read(s->svc->hold_r, &c, 1);
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	_exit(code);
}

/* end_unstarted ends the helper as the terminating signal sig asked, before
 * the program started: the held init (pid, or -1 for none) is let go
 * without starting it and reaped, and the run's state undone. */
static __attribute__((noreturn)) void end_unstarted(struct se_runner *s, long pid, int sig)
{
	if (pid > 0) {
		int st;
		while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	undo(s);
	close_signals(s);
	exit_after_go(s, 128 + sig);
}

/* free_request frees the child's request and what it points at (the
 * init's struct and stack live on: see se_guard_alloc). */
static void free_request(struct se_start *c)
{
	if (c->paths)
		for (int i = 0; c->paths[i]; i++)
			free(c->paths[i]);
	free(c->paths);
	free(c->env);
	free(c->sh);
	free(c->ops);
	free(c->stack);
	free(c->q);
	memset(c, 0, sizeof *c);
}

/* child_request makes the child's request, s->c: all of it but where the
 * program goes (place_child). Returns 0 or -ENOMEM. */
static long child_request(struct se_runner *s, char *const *argv)
{
	const struct se_recipe *r = s->r;
	struct se_start *c = &s->c;
	struct se_req *q = c->q = calloc(1, sizeof *q);
	c->env = calloc(r->env.n + 1, sizeof *c->env);
	c->paths = candidates(r, argv[0]);
	size_t argc = 0;
	while (argv[argc])
		argc++;
	c->sh = calloc(argc + 3, sizeof *c->sh);
	c->ops = calloc(r->ops.n + 1, sizeof *c->ops);
	c->stack = malloc(SE_CHILD_STACK);
	if (!q || !c->env || !c->paths || !c->sh || !c->ops || !c->stack)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->env.n; i++)
		c->env[i] = (char *)rs(r, RA(r, r->env, struct se_rref)[i]);
	int npaths = 0;
	while (c->paths[npaths])
		npaths++;
	q->paths = c->paths;
	q->npaths = npaths;
	q->argv = argv;
	q->envp = c->env;
	if (r->sh_fallback) {
		c->sh[0] = "sh";
		c->sh[1] = "";
		for (size_t i = 1; i < argc; i++)
			c->sh[i + 1] = argv[i];
		q->sh_argv = c->sh;
		q->sh_fallback = 1;
	}
	q->cgroup_fd = q->procs_fd = -1;
	q->ns_flags = r->ns_flags;
	q->unshare_flags = r->unshare_flags;
	if (r->init) {
		size_t size = (SE_INIT_STACK + sizeof(struct se_init) + 4095) & ~(size_t)4095;
		char *base = se_guard_alloc(size);
		if (!base)
			return -ENOMEM;
		struct se_init *init = (struct se_init *)(base + SE_INIT_STACK);
		init->stack = base;
		init->stack_size = SE_INIT_STACK;
		/* A run whose end Go reports is handed over once the init is
		 * reaped, before any cleanup: no early word. */
		init->say_done = !r->end_in_go;
		q->init = init;
		s->init = init;
	}
	for (uint32_t i = 0; i < r->ops.n; i++) {
		const struct se_rop *o = &RA(r, r->ops, struct se_rop)[i];
		struct se_op *op = &c->ops[i];
		op->kind = o->kind;
		op->fd = o->slot;
		op->flags = (unsigned long)o->flags;
		op->a = o->a.n ? rs(r, o->a) : NULL;
		op->b = o->b.n ? rs(r, o->b) : NULL;
		op->c = o->c.n ? rs(r, o->c) : NULL;
		op->d = o->d.n ? rs(r, o->d) : NULL;
		op->ida = o->ida;
		op->idb = o->idb;
		op->lower_is_target = o->lower_is_target;
		memcpy(op->addr, o->addr, 4);
		memcpy(op->port, o->port, 2);
		op->backlog = o->backlog;
		if (op->kind == SE_OP_LISTEN_SEND || op->kind == SE_OP_OPEN_SEND)
			op->fd = s->proxy_child;
	}
	q->ops = c->ops;
	q->nops = (int)r->ops.n;
	q->rlimits = r->rlimits.n ? RA(r, r->rlimits, struct se_rlimit) : NULL;
	q->nrlimits = (int)r->rlimits.n;
	q->pdeathsig = r->pdeathsig;
	q->exit_rules = RA(r, r->exit_rules, struct se_exit_rule);
	q->nexit_rules = (int)r->exit_rules.n;
	q->clone_fallback = r->clone_fallback;
	q->prog_clone_fallback = r->prog_clone_fallback;
	q->drop_caps = r->drop_caps;
	/* The terminal as the run found it; with an init, a program on the
	 * caller's foreground terminal takes it (se_place_program). */
	se_term_save(&s->term);
	q->fg_tty = r->init && s->term.pgrp ? s->term.fd : -1;
	q->fg_linked = s->term.linked;
	q->ruleset_fd = s->ruleset;
	q->ruleset_flags = r->ll_restrict_flags;
	q->bpf = r->bpf.n ? (const char *)r + r->bpf.off : NULL;
	q->bpf_len = (unsigned short)(r->bpf.n / 8);
	q->notify_sock = s->notify_child;
	q->audit_sock = s->audit_child;
	memcpy(q->audit_comm, s->audit_comm, sizeof q->audit_comm);
	q->notify_killable = r->notify_killable;
	q->keep_fds = r->keep_fds.n ? RA(r, r->keep_fds, int32_t) : NULL;
	q->nkeep = (int)r->keep_fds.n;
	static int ignored[64];
	int nignored;
	uint64_t cur, max;
	se_initial_state(&q->mask, ignored, 64, &nignored, &cur, &max);
	q->ignored = ignored;
	q->nignored = nignored;
	q->stack = c->stack;
	q->stack_size = SE_CHILD_STACK;
	return 0;
}

/* place_child puts the run's cgroups in the request: the v2 directory (for
 * CLONE_INTO_CGROUP), under an init its cgroup.procs too (to join where
 * clone3 cannot), and the v1 tasks files. Returns 0 or -errno. */
static long place_child(struct se_runner *s)
{
	struct se_req *q = s->c.q;
	q->cgroup_fd = s->v2_fd;
	q->join_fds = s->join;
	q->njoin = s->njoin;
	if (s->r->init && s->v2_fd >= 0) {
		char *procs = join2(s->cg[s->v2_index], "cgroup.procs");
		s->procs_fd = procs ? open(procs, O_WRONLY | O_CLOEXEC) : -1;
		free(procs);
		if (s->procs_fd < 0)
			return -errno;
		q->procs_fd = s->procs_fd;
	}
	return 0;
}

/* start_init clones the init (held) as soon as the stored recipe is found
 * sound, before whether its decision still holds is checked (se_run's
 * holds) and before the signal handlers, placeholders, cgroups, guardian
 * and rules are made: it makes its namespaces (the start's
 * largest cost: a network namespace alone is hundreds of microseconds)
 * meanwhile, its mounts once ops_go says what they need is there, and it
 * starts the program at finish_child's go, receiving the cgroup fds made
 * after its clone with it. What the init's clone copies of this process
 * (its memory is shared; its fd table, working directory, umask and
 * limits are copied) does not change between here and the go but for the
 * fds made since, and those the program needs are the ones passed. */
static int start_init(struct se_runner *s, char *const *argv)
{
	if (child_request(s, argv) != 0) {
		fail(s, 0, ENOMEM, "child");
		free_request(&s->c);
		return -1;
	}
	pthread_mutex_lock(&sweep_locks);
	long pid = se_spawn_start(s->c.q);
	pthread_mutex_unlock(&sweep_locks);
	if (pid <= 0) {
		se_spawn_finish(s->c.q, pid, 0);
		fail(s, SE_STEP_CLONE, pid ? (int)-pid : EINVAL, "clone");
		free_request(&s->c);
		return -1;
	}
	s->c.pid = pid;
	return 0;
}

/* ops_go lets the early init make its mounts. An init that failed a step
 * meanwhile is found at the go (finish_child). */
static void ops_go(struct se_runner *s)
{
	if (s->c.pid > 0)
		(void)se_spawn_ops_go(s->c.q);
}

/* end_init lets a held init go without starting the program and reaps it:
 * the run ends before it started. */
static void end_init(struct se_runner *s)
{
	if (s->c.pid <= 0)
		return;
	se_spawn_finish(s->c.q, s->c.pid, 0);
	int st;
	while (waitpid((pid_t)s->c.pid, &st, 0) < 0 && errno == EINTR)
		;
	if (s->c.q->used_clone3 && s->c.q->pidfd >= 0)
		close(s->c.q->pidfd);
	free_request(&s->c);
}

/* finish_child starts the program and returns its pid (the init's, under
 * one) or -errno. The held init starts it once the rules are in;
 * without an init the child is cloned here. */
static long finish_child(struct se_runner *s, char *const *argv)
{
	const struct se_recipe *r = s->r;
	long pid = 0;
	if (!s->c.q) {
		pid = child_request(s, argv);
		if (pid == 0)
			name_placeholders(s);
	}
	if (pid == 0)
		pid = place_child(s);
	if (pid < 0) {
		fail(s, 0, (int)-pid, "child");
		end_init(s);
		free_request(&s->c);
		return pid;
	}
	struct se_req *q = s->c.q;
	if (r->init) {
		/* The init has been making its namespaces and mounts since
		 * start_init; it starts the program once the rules are in. */
		pid = s->c.pid;
		int go = add_rules(s) == 0;
		se_phase("landlock");
		int sig = go ? early_signal(s) : 0;
		se_spawn_finish(q, pid, go && !sig);
		s->c.pid = 0; /* let go: end_init has nothing to do */
		s->done_r = q->ready_r; /* open only when the program runs (se_spawn_finish) */
		if (sig)
			end_unstarted(s, pid, sig);
		if (!go && q->fail_step == SE_STEP_NONE) {
			/* Not expected: a stopped init fails its stop. */
			q->fail_step = SE_STEP_INIT;
			q->fail_errno = ECANCELED;
		}
	} else {
		if (s->g)
			q->parent_tid = (int *)&s->g->child_pid;
		pid = se_spawn(q);
		if (pid == -ENOSYS && q->cgroup_fd >= 0) {
			/* No clone3 (a container's filter): the child joins
			 * the v2 group through cgroup.procs before anything
			 * else, as it joins v1 hierarchies. */
			char *procs = join2(s->cg[s->v2_index], "cgroup.procs");
			s->procs_fd = procs ? open(procs, O_WRONLY | O_CLOEXEC) : -1;
			free(procs);
			if (s->procs_fd >= 0 && s->njoin < SE_MAX_CG) {
				memmove(s->join + 1, s->join, sizeof s->join[0] * (size_t)s->njoin);
				s->join[0] = s->procs_fd;
				s->njoin++;
				s->procs_fd = -1;
				q->join_fds = s->join;
				q->njoin = s->njoin;
				q->cgroup_fd = -1;
				q->clone_fallback = 1;
				pid = se_spawn(q);
			}
		}
	}
	if (pid > 0) {
		s->pidfd = q->used_clone3 ? q->pidfd : -1;
		if (q->fail_step != SE_STEP_NONE) {
			int st;
			if (!s->h->fail_what[0]) { /* else the runner's own step failed first */
				fail(s, q->fail_step, q->fail_errno, "child");
				s->h->fail_index = q->fail_index;
			}
			while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR)
				;
			if (s->pidfd >= 0)
				close(s->pidfd);
			s->pidfd = -1;
			if (s->done_r >= 0)
				close(s->done_r);
			s->done_r = -1;
			pid = -q->fail_errno;
			if (pid == 0)
				pid = -EINVAL;
		}
	} else {
		fail(s, SE_STEP_CLONE, (int)-pid, "clone");
	}
	free_request(&s->c);
	return pid;
}

/* ---- waiting ---- */

static int oom_watch(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	s->oom_fd = -1;
	if (!r->oom_watch)
		return 0;
	for (int i = 0; i < s->ncg; i++) {
		const struct se_rcg *c = &RA(r, r->cgroups, struct se_rcg)[i];
		char path[4200];
		if (c->v2 && r->oom_watch == 2) {
			int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
			snprintf(path, sizeof path, "%s/memory.events", s->cg[i]);
			if (fd < 0 || inotify_add_watch(fd, path, IN_MODIFY) < 0) {
				if (fd >= 0)
					close(fd);
				return -1;
			}
			s->oom_fd = fd;
			return 0;
		}
		if (!c->v2 && r->oom_watch == 1) {
			snprintf(path, sizeof path, "%s/memory.oom_control", s->cg[i]);
			int ofd = open(path, O_RDONLY | O_CLOEXEC);
			if (ofd < 0)
				continue; /* not the memory hierarchy */
			int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			snprintf(path, sizeof path, "%s/cgroup.event_control", s->cg[i]);
			int cfd = open(path, O_WRONLY | O_CLOEXEC);
			char line[64];
			int n = snprintf(line, sizeof line, "%d %d", efd, ofd);
			int ok = efd >= 0 && cfd >= 0 && write_all(cfd, line, (size_t)n) == 0;
			if (cfd >= 0)
				close(cfd);
			close(ofd);
			if (!ok) {
				if (efd >= 0)
					close(efd);
				return -1;
			}
			s->oom_fd = efd;
			return 0;
		}
	}
	return -1;
}

/* ---- ending the tree ---- */

/* signal_descendants sends sig to every descendant of parent but skip
 * (whose own descendants it does reach) and the guardian, from
 * /proc/PID/task/TID/children: the run's processes where it has no cgroup.
 * Returns how many it signalled. */
static int signal_descendants(struct se_runner *s, int parent, int skip, int sig, int depth)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", parent);
	DIR *d = opendir(path);
	if (!d || depth > 64) {
		if (d)
			closedir(d);
		return 0;
	}
	int found = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char file[320], text[4096];
		snprintf(file, sizeof file, "/proc/%d/task/%s/children", parent, e->d_name);
		if (read_small(file, text, sizeof text) <= 0)
			continue;
		for (char *save = NULL, *tok = strtok_r(text, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
			int pid = atoi(tok);
			if (pid <= 0 || pid == s->guard_pid)
				continue;
			if (pid != skip) {
				kill(pid, sig);
				found++;
			}
			found += signal_descendants(s, pid, skip, sig, depth + 1);
		}
	}
	closedir(d);
	return found;
}

/* tree_signal sends sig to every process of the run's tree but its init,
 * which would pass it on to the program a second time. */
static void tree_signal(struct se_runner *s, int sig)
{
	if (s->ncg > 0) {
		char *procs = join2(s->cg[0], "cgroup.procs");
		if (procs)
			se_signal_listed(procs, sig);
		free(procs);
		return;
	}
	signal_descendants(s, getpid(), s->r->init ? s->pid : 0, sig, 0);
}

/* tree_kill kills the whole tree: the init first (its end ends its PID
 * namespace and everything in it), then the cgroup the way the guardian
 * would (se_kill_tree: cgroup.kill, or SIGKILL to every pid listed), or
 * every descendant where there is none. */
static void tree_kill(struct se_runner *s)
{
	if (s->r->init && s->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
	if (s->ncg > 0 && s->g)
		se_kill_tree(s->g, 1);
	else
		signal_descendants(s, getpid(), 0, SIGKILL, 0);
}

/* reap_all waits for every child left but the guardian (which no wait
 * without __WALL sees): the run's tree is gone when none is left, as the
 * helper is a child subreaper. */
static void reap_all(void)
{
	int st;
	while (waitpid(-1, &st, 0) > 0 || errno == EINTR)
		;
}

/* ---- the run's figures ---- */

/* counter reads c (struct se_rcounter) in the run's cgroup; 0 when it
 * cannot. */
static uint64_t counter(struct se_runner *s, const struct se_rcounter *c)
{
	if (c->cg < 0 || c->cg >= s->ncg || !s->cg[c->cg] || !c->file.n)
		return 0;
	char *path = join2(s->cg[c->cg], rs(s->r, c->file));
	char text[4096];
	ssize_t n = path ? read_small(path, text, sizeof text) : -1;
	free(path);
	if (n <= 0)
		return 0;
	const char *key = rs(s->r, c->key), *p = text;
	if (*key) {
		size_t kl = strlen(key);
		for (p = text; p; p = strchr(p, '\n')) {
			if (*p == '\n')
				p++;
			if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
				p += kl + 1;
				break;
			}
		}
		if (!p)
			return 0;
	}
	return strtoull(p, NULL, 10) * (c->scale ? c->scale : 1);
}

/* cpu_look reads the tree's CPU usage: 1 when the budget is spent, else
 * when to look again (cpu_next). */
static int cpu_look(struct se_runner *s, int64_t now)
{
	const struct se_recipe *r = s->r;
	uint64_t used = counter(s, &r->cpu_usage);
	if (used >= (uint64_t)r->cpu_budget_ns)
		return 1;
	int64_t d = (r->cpu_budget_ns - (int64_t)used) / (r->cpu_spread > 0 ? r->cpu_spread : 1);
	if (d < 20000000)
		d = 20000000;
	if (d > 1000000000)
		d = 1000000000;
	s->cpu_next = now + d;
	return 0;
}

static int exit_code(int ending, int status)
{
	switch (ending) {
	case SE_END_TIMEOUT:
		return 124;
	case SE_END_FSIZE:
		return 128 + SIGXFSZ;
	case SE_END_CPU:
		return 128 + SIGXCPU;
	case SE_END_OOM:
		return 128 + SIGKILL;
	case SE_END_SERVICE:
		return 125;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 125;
}

/* ending_of says how a run ended that the runner did not end itself:
 * a SIGKILL with an OOM kill in the group is the OOM's, a failure with a
 * fork the pids limit refused is the limit's. */
static int ending_of(struct se_runner *s, int status)
{
	if (s->ending)
		return s->ending;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && counter(s, &s->r->oom_kills) > 0)
		return SE_END_OOM;
	/* RLIMIT_CPU and RLIMIT_FSIZE end a process with their own signal: a
	 * limit the recipe set, not the program's doing. */
	if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGXFSZ)) {
		int res = WTERMSIG(status) == SIGXCPU ? RLIMIT_CPU : RLIMIT_FSIZE;
		for (uint32_t i = 0; i < s->r->rlimits.n; i++)
			if (RA(s->r, s->r->rlimits, struct se_rlimit)[i].resource == res)
				return res == RLIMIT_CPU ? SE_END_CPU : SE_END_FSIZE;
	}
	if (exit_code(0, status) != 0 && counter(s, &s->r->pids_hits) > 0)
		return SE_END_PIDS;
	return WIFSIGNALED(status) ? SE_END_SIGNALED : SE_END_EXITED;
}

/* say writes the recipe's line for ending on stderr, when it has one (0:
 * the line said as the program starts). */
static void say(struct se_runner *s, int ending)
{
	const struct se_recipe *r = s->r;
	if (ending < 0 || (uint32_t)ending >= r->say.n)
		return;
	struct se_rref line = RA(r, r->say, struct se_rref)[ending];
	if (line.n) {
		(void)!write(2, rs(r, line), line.n);
		if (ending == SE_END_SERVICE && s->svc_what) {
			char why[256];
			int n = snprintf(why, sizeof why, ": %s%s%s", s->svc_what, s->svc_err ? ": " : "",
					 s->svc_err ? strerror(s->svc_err) : "");
			if (n > 0)
				(void)!write(2, why, (size_t)n < sizeof why ? (size_t)n : sizeof why - 1);
		}
		(void)!write(2, "\n", 1);
	}
}

/* ---- Go's service ---- */

struct se_service *se_service_new(void)
{
	struct se_service *v = calloc(1, sizeof *v);
	int ev[2], ack[2], sg[2];
	if (!v)
		return NULL;
	if (pipe2(ev, O_CLOEXEC) != 0) {
		free(v);
		return NULL;
	}
	if (pipe2(ack, O_CLOEXEC) != 0) {
		close(ev[0]);
		close(ev[1]);
		free(v);
		return NULL;
	}
	if (pipe2(sg, O_CLOEXEC | O_NONBLOCK) != 0) {
		close(ev[0]);
		close(ev[1]);
		close(ack[0]);
		close(ack[1]);
		free(v);
		return NULL;
	}
	v->ev_r = ev[0];
	v->ev_w = ev[1];
	v->ack_r = ack[0];
	v->ack_w = ack[1];
	v->sig_r = sg[0];
	v->sig_w = sg[1];
	v->listener_fd = v->proxy_fd = v->layers_fd = v->audit_fd = v->hold_r = -1;
	return v;
}

static void supervise(struct se_runner *s);

static void *run_thread(void *arg)
{
	supervise(arg);
	return NULL;
}

/* call_go makes sure Go serves the run, and tells it each of events ('S'
 * started, 'L' the listener, 'P' the proxy's listener). A run started
 * before the Go runtime (no service yet) gets one, and once everything of
 * the run is in place for Go its supervision moves to a thread of its own,
 * which never calls Go and takes no signal: the caller then returns (se_run
 * with SE_RET_SERVE) and the runtime starts. Returns 1 when the caller must
 * return so, 0 to go on, -1 when Go cannot be called (the caller ends the
 * run: SE_END_SERVICE). */
static int call_go(struct se_runner *s, const char *events)
{
	int need_thread = 0;
	if (!s->svc) {
		if ((s->svc = se_service_new()) == NULL)
			return -1;
		need_thread = 1;
	}
	struct se_service *v = s->svc;
	v->started_ns = s->h->started_ns;
	v->program_ns = s->program_ns;
	snprintf(v->cgroup_name, sizeof v->cgroup_name, "%s", s->ncg ? s->name : "");
	for (const char *e = events; *e; e++) {
		if (*e == 'L') {
			v->listener_fd = s->listener;
			s->listener = -1;
		} else if (*e == 'P') {
			v->proxy_fd = s->proxy_l;
			s->proxy_l = -1;
		} else if (*e == 'A') {
			v->audit_fd = s->audit_fd;
			v->audit_err = s->audit_err;
			v->audit_pid = s->audit_pid;
			memcpy(v->audit_comm, s->audit_comm, sizeof v->audit_comm);
			s->audit_fd = -1;
		}
		if (write_all(v->ev_w, e, 1) != 0)
			return -1;
	}
	s->serving = 1;
	if (!need_thread)
		return 0;
	/* Last: from here on the run's state is the thread's. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	s->own_thread = 1;
	int err = pthread_create(&t, &a, run_thread, s);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		s->own_thread = 0;
		return -1;
	}
	return 1;
}

/* ---- supervising ---- */

/* end_by ends the run by the runner's hand: the tree gets sig (none: it is
 * killed at once), and is killed after grace_ns. */
static void end_by(struct se_runner *s, int ending, int sig, int64_t grace_ns)
{
	if (s->ending)
		return;
	s->ending = ending;
	if (sig) {
		tree_signal(s, sig);
		s->kill_at = se_now_ns() + grace_ns;
	} else {
		tree_kill(s);
		s->kill_at = se_now_ns() + 50000000;
	}
}

/* end_service ends the run because it cannot be served as decided: what
 * failed, and its errno (0: none), said with the ending's line. */
static void end_service(struct se_runner *s, const char *what, int err)
{
	if (!s->ending) {
		s->svc_what = what;
		s->svc_err = err;
	}
	end_by(s, SE_END_SERVICE, 0, 0);
}

/* wait_end forwards signals and waits for the child's end, ending the tree
 * on the timeout, a spent CPU budget, an OOM kill, or Go's word. It
 * returns 0 with the init's (or program's) wait status once reaped, 1 with
 * the program's once the init has said the tree is gone (it is still
 * exiting: the caller reaps it), or -1 when the run must move to a thread
 * of its own for Go (s->own_thread: the caller returns). */
static int wait_end(struct se_runner *s, int *status)
{
	const struct se_recipe *r = s->r;
	for (;;) {
		struct pollfd p[7];
		int n = 0, si = -1, gi = -1, ci = -1, li = -1, oi = -1, di = -1, ki = -1;
		if (s->sigfd >= 0) {
			si = n;
			p[n++] = (struct pollfd){s->sigfd, POLLIN, 0};
		}
		if (s->svc && s->svc->sig_r >= 0) {
			gi = n;
			p[n++] = (struct pollfd){s->svc->sig_r, POLLIN, 0};
		}
		ci = n;
		p[n++] = (struct pollfd){s->pidfd, POLLIN, 0};
		if (s->listener >= 0) {
			li = n;
			p[n++] = (struct pollfd){s->listener, POLLIN, 0};
		}
		if (s->oom_fd >= 0) {
			oi = n;
			p[n++] = (struct pollfd){s->oom_fd, POLLIN, 0};
		}
		if (s->done_r >= 0) {
			di = n;
			p[n++] = (struct pollfd){s->done_r, POLLIN, 0};
		}
		if (s->serving) {
			ki = n;
			p[n++] = (struct pollfd){s->svc->ack_r, POLLIN, 0};
		}
		int64_t now = se_now_ns(), wake = -1;
		if (r->timeout_ms > 0 && !s->ending)
			wake = s->program_ns + r->timeout_ms * 1000000;
		if (r->cpu_budget_ns > 0 && !s->ending && (wake < 0 || s->cpu_next < wake))
			wake = s->cpu_next;
		if (s->kill_at > 0 && (wake < 0 || s->kill_at < wake))
			wake = s->kill_at;
		struct timespec ts, *tp = NULL;
		if (wake >= 0) {
			int64_t d = wake > now ? wake - now : 0;
			ts.tv_sec = d / 1000000000;
			ts.tv_nsec = d % 1000000000;
			tp = &ts;
		}
		int k = ppoll(p, (nfds_t)n, tp, NULL);
		if (k < 0 && errno == EINTR)
			continue;
		now = se_now_ns();
		if (s->kill_at > 0 && now >= s->kill_at) {
			tree_kill(s);
			s->kill_at = now + 50000000;
		}
		if (!s->ending && r->timeout_ms > 0 && now >= s->program_ns + r->timeout_ms * 1000000)
			end_by(s, SE_END_TIMEOUT, SIGTERM, r->grace_ms * 1000000);
		if (!s->ending && r->cpu_budget_ns > 0 && now >= s->cpu_next && cpu_look(s, now))
			end_by(s, SE_END_CPU, SIGXCPU, 1000000000);
		if (k <= 0)
			continue;
		if (li >= 0 && (p[li].revents & POLLIN)) {
			int moved = call_go(s, "L");
			if (moved < 0)
				end_service(s, "Go could not be called", errno);
			if (moved > 0)
				return -1;
		} else if (li >= 0 && (p[li].revents & (POLLHUP | POLLERR | POLLNVAL))) {
			/* No task uses the filter any more: nothing more can come. */
			close(s->listener);
			s->listener = -1;
		}
		if (oi >= 0 && (p[oi].revents & POLLIN)) {
			char ev[4096] __attribute__((aligned(8)));
			(void)!read(s->oom_fd, ev, sizeof ev); /* an inotify event, or the eventfd's count */
			if (r->oom_kills.file.n == 0 || counter(s, &r->oom_kills) > 0) {
				close(s->oom_fd);
				s->oom_fd = -1;
				end_by(s, SE_END_OOM, 0, 0);
			}
		}
		if (ki >= 0 && (p[ki].revents & (POLLIN | POLLHUP))) {
			char c = 0;
			ssize_t got = read(s->svc->ack_r, &c, 1);
			if (got <= 0 || c == 'K')
				end_service(s, "Go's service failed (its log says why)", 0);
		}
		if (di >= 0 && p[di].revents) {
			char c = 0;
			ssize_t got = read(s->done_r, &c, 1);
			int prog;
			if (got == 1 && c == 'D' && s->init && se_init_status(s->init, &prog)) {
				*status = prog;
				return 1;
			}
			if (got == 1 && c > 0 && c < 32) {
				/* The program stopped (se_init.say_stops). */
				se_term_follow_stop(&s->term, c);
				continue;
			}
			if (got != -1 || errno != EINTR) { /* EOF: the init exited without the word */
				close(s->done_r);
				s->done_r = -1;
			}
		}
		if ((si >= 0 && (p[si].revents & POLLIN)) || (gi >= 0 && (p[gi].revents & POLLIN))) {
			int sig;
			while ((sig = next_signal(s)) != 0)
				forward(s, s->pid, sig);
		}
		if (p[ci].revents & POLLIN) {
			siginfo_t info;
			memset(&info, 0, sizeof info);
			if (waitid(P_PIDFD, (id_t)s->pidfd, &info, WEXITED) == 0) {
				*status = info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status, 0) : info.si_status;
				return 0;
			}
		}
	}
}

/* finish ends a run whose child was reaped (waited: 0) or whose init said
 * the tree is gone (1): what is left of the tree is ended, Go (when it
 * serves the run, or reports its end) is told and answers, and the run's
 * objects go. It exits with the run's code. */
static __attribute__((noreturn)) void finish(struct se_runner *s, int waited, int status)
{
	se_phase("program");
	int busy = 0, ending = 0;
	if (waited == 1) {
		/* Said before the groups go: their counters (an OOM kill, the
		 * pids limit) tell how it ended. */
		ending = ending_of(s, status);
		/* The tree is gone and the init is tearing its namespaces down
		 * (hundreds of microseconds): the run's cgroups (empty) and
		 * placeholders (under no process but the init) go meanwhile,
		 * and the init is reaped after, unless Go reads the figures
		 * first. */
		if (!s->serving) {
			remove_cgroups(s, &busy);
			se_phase("cgroups removed");
			release_claims(s);
			se_phase("placeholders removed");
		}
		int st;
		while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
			;
		se_phase("init reaped");
	} else {
		/* The program's end ends the run: nothing it started runs on. */
		int prog;
		if (s->init && se_init_status(s->init, &prog))
			status = prog;
		int st;
		if (waitpid(-1, &st, WNOHANG) != -1 || errno != ECHILD) {
			tree_kill(s);
			reap_all();
		}
	}
	if (s->done_r >= 0)
		close(s->done_r);
	s->done_r = -1;
	if (s->listener >= 0)
		close(s->listener);
	s->listener = -1;
	if (s->oom_fd >= 0)
		close(s->oom_fd);
	s->oom_fd = -1;
	close_audit(s);
	se_term_restore(&s->term);
	if (!ending)
		ending = ending_of(s, status);
	int code = exit_code(ending, status);
	if (s->serving) {
		struct se_service *v = s->svc;
		v->ending = ending;
		v->status = status;
		v->layers_fd = s->layers;
		s->layers = -1;
		v->exit_code = code;
		v->started = 1;
		v->ended_ns = se_now_ns();
		char e = 'E', d = 0;
		if (write_all(v->ev_w, &e, 1) == 0)
			while (read(v->ack_r, &d, 1) == 1 && d != 'D')
				;
	}
	say(s, ending);
	if (s->ncg > 0 && s->cg[0]) {
		remove_cgroups(s, &busy);
		se_phase("cgroups removed");
	}
	if (s->nclaims > 0) {
		release_claims(s);
		se_phase("placeholders removed");
	}
	if (!busy)
		release_guardian(s);
	se_phase("guardian released");
	se_phases_say();
	exit_after_go(s, code);
}

/* supervise waits for the run's end and finishes it; in a thread of its
 * own, it goes on from where se_run left it. */
static void supervise(struct se_runner *s)
{
	int status = 0;
	int waited = wait_end(s, &status);
	if (waited < 0)
		return;
	finish(s, waited, status);
}

void se_run(const struct se_recipe *r, char *const *argv, se_holds_fn *holds, void *holds_arg,
	    struct se_service *svc, struct se_handover *h)
{
	struct se_runner *sp = calloc(1, sizeof *sp);
	memset(h, 0, sizeof *h);
	h->started_ns = se_now_ns();
	if (!sp) {
		h->reason = SE_RET_FALLBACK;
		snprintf(h->fail_what, sizeof h->fail_what, "runner: out of memory");
		return;
	}
	struct se_runner *s = sp;
	s->r = r;
	s->h = h;
	s->argv = argv;
	s->svc = svc;
	s->v2_fd = s->procs_fd = s->ruleset = s->notify_parent = s->notify_child = -1;
	s->proxy_parent = s->proxy_child = s->sigfd = -1;
	s->guard_w = s->oom_fd = s->done_r = s->pidfd = s->listener = s->proxy_l = s->layers = -1;
	s->audit_fd = s->audit_parent = s->audit_child = -1;
	s->v2_index = -1;
	for (int i = 0; i < SE_MAX_CLAIMS; i++)
		s->lock[i] = s->decide[i] = s->parent[i] = -1;
	int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);

	const char *name = argv[0];
	if (!name || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		fail(s, 0, EINVAL, "program name");
		h->reason = SE_RET_FALLBACK;
		free(sp);
		return;
	}
	char why[sizeof h->fail_what];
	/* The stale sweep is Go's: a stored recipe (no Go yet) with one due
	 * falls back; a run Go decided has its sweep run beside it. */
	if (!svc && sweep_due(r, why, sizeof why)) {
		fail(s, 0, 0, why); /* begins with spawn.FallbackSweepDue */
		h->reason = SE_RET_FALLBACK;
		free(sp);
		return;
	}
	/* What the child's request holds: made first, for an init cloned
	 * now (start_init). */
	if (r->notify) {
		int sp2[2];
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp2) != 0) {
			fail(s, 0, errno, "socket pair");
			goto fallback;
		}
		s->notify_parent = sp2[0];
		s->notify_child = sp2[1];
	}
	if (r->proxy || r->layers) {
		int sp2[2];
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp2) != 0) {
			fail(s, 0, errno, "socket pair");
			goto fallback;
		}
		s->proxy_parent = sp2[0];
		s->proxy_child = sp2[1];
	}
	if (r->audit)
		open_audit(s);
	if (create_ruleset(s) != 0)
		goto fallback;
	/* The cgroups' name, made now: its /proc/self/stat takes hundreds of
	 * microseconds longer once the init, which shares this memory, is
	 * making its namespaces. */
	if (r->cgroups.n && make_name(s) != 0) {
		fail(s, 0, errno, "cgroup name");
		goto fallback;
	}
	if (r->init) {
		if (start_init(s, argv) != 0)
			goto fallback;
		se_phase("init");
	}
	/* Whether the decision still holds is asked while the init makes its
	 * namespaces: up to here nothing has been made outside this process
	 * and its init, which makes nothing else before ops_go. */
	if (holds) {
		if (!holds(holds_arg)) {
			h->stale = 1;
			fail(s, 0, 0, "what the decision read changed");
			goto fallback;
		}
		se_phase("dependencies");
	}
	if (open_signals(s) != 0) {
		fail(s, 0, errno, "signals");
		goto fallback;
	}
	se_phase("signals");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 || make_roots(s) != 0 || make_shared_tmp(s) != 0 ||
	    claim(s) != 0)
		goto fallback;
	name_placeholders(s);
	ops_go(s);
	se_phase("placeholders");
	if (make_cgroups(s) != 0)
		goto fallback;
	se_phase("cgroups");
	if (start_guardian(s) != 0)
		goto fallback;
	se_phase("guardian");
	if (!r->init) {
		/* The child execs the program as soon as it is cloned. */
		if (add_rules(s) != 0)
			goto fallback;
		se_phase("landlock");
		int sig = early_signal(s);
		if (sig)
			end_unstarted(s, -1, sig);
	}
	say(s, 0);
	long pid = finish_child(s, argv);
	if (pid < 0) {
		if (h->fail_step != 0 && h->fail_step != SE_STEP_CLONE) {
			/* The child failed a step of its own (its exec, mostly):
			 * nothing ran, and that is the run's answer, not a reason
			 * to run it another way. */
			h->exit_code = se_exit_code_of(RA(r, r->exit_rules, struct se_exit_rule), (int)r->exit_rules.n, h->fail_step, h->fail_errno);
			end_init(s);
			undo(s);
			close_signals(s);
			h->reason = SE_RET_FAILED;
			free(sp);
			return;
		}
		goto fallback;
	}
	s->pid = (int)pid;
	s->program_ns = se_now_ns();
	if (s->pidfd < 0)
		s->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	se_term_started(&s->term);
	se_phase("start");
	close(s->ruleset);
	s->ruleset = -1;
	if (s->notify_child >= 0)
		close(s->notify_child);
	s->notify_child = -1;
	if (s->proxy_child >= 0)
		close(s->proxy_child);
	s->proxy_child = -1;
	if (s->audit_child >= 0)
		close(s->audit_child);
	s->audit_child = -1;
	s->audit_pid = audit_said(s);
	for (int i = 0; i < s->nearly; i++)
		forward(s, s->pid, s->early[i]);
	if (s->pidfd < 0) {
		/* Without a pidfd (before 5.3) nothing here can wait for the
		 * child without SIGCHLD: end it. */
		end_service(s, "no pidfd for the program's init (Linux 5.3 and later have one)", 0);
	}
	if (s->notify_parent >= 0) {
		s->listener = recv_fd(s->notify_parent);
		int err = errno;
		/* The init sends the listener once the program has started,
		 * and the program may have made that fail already (its
		 * prlimit on the init: ETOOMANYREFS): then it is taken from the
		 * init's file table, where the init keeps it until told. */
		if (s->listener < 0 && s->init && s->init->listener_left >= 0) {
			if (s->pidfd >= 0)
				s->listener = (int)syscall(SYS_pidfd_getfd, s->pidfd, s->init->listener_left, 0);
			if (s->listener < 0)
				err = errno;
			(void)!write(s->notify_parent, "T", 1); /* the init may go on */
		}
		close(s->notify_parent);
		s->notify_parent = -1;
		if (s->listener < 0)
			end_service(s, "the seccomp listener did not reach the helper", err);
	}
	if (s->proxy_parent >= 0) {
		if (r->proxy && (s->proxy_l = recv_fd(s->proxy_parent)) < 0)
			end_service(s, "the proxy's listener did not reach the helper", errno);
		if (r->layers && (s->layers = recv_fd(s->proxy_parent)) < 0)
			end_service(s, "the scratch caches' layers did not reach the helper", errno);
		close(s->proxy_parent);
		s->proxy_parent = -1;
	}
	if (r->cpu_budget_ns > 0)
		cpu_look(s, s->program_ns);
	if (oom_watch(s) != 0)
		end_service(s, "the OOM watch could not be set up", errno);
	/* Go serves from the start a run that needs it then (a listener that
	 * records every denial, the proxy), and one whose end it reports: it
	 * must be there by then. */
	int moved = 0;
	if (!s->ending && (r->go_from_start || r->end_in_go)) {
		char events[8] = "S";
		int n = 1;
		if (r->go_from_start && s->listener >= 0)
			events[n++] = 'L';
		if (s->proxy_l >= 0)
			events[n++] = 'P';
		if (r->audit)
			events[n++] = 'A';
		events[n] = 0;
		if ((moved = call_go(s, events)) < 0)
			end_service(s, "Go could not be called", errno);
	}
	if (moved > 0) {
		h->reason = SE_RET_SERVE;
		h->svc = s->svc;
		return;
	}
	int status = 0;
	int waited = wait_end(s, &status);
	if (waited < 0) {
		h->reason = SE_RET_SERVE;
		h->svc = s->svc;
		return;
	}
	finish(s, waited, status);

fallback:
	end_init(s);
	undo(s);
	close_signals(s);
	/* An init that got its go made the memory it shares with this process
	 * undumpable (se_undumpable) and then failed a step: it is reaped, and
	 * Go, which takes over, may need its own children to write their id
	 * maps. */
	if (dumpable == 1 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	h->reason = SE_RET_FALLBACK;
	free(sp);
}
