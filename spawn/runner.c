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
#include "sigcatch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

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
	    !ref_ok(r, r->sweep_request, 1, 1) || !strs_ok(r, r->env) || !strs_ok(r, r->path_dirs) ||
	    !ref_ok(r, r->bpf, 1, 0) || r->bpf.n % 8 != 0 || r->bpf.n / 8 > 0xffff ||
	    !ref_ok(r, r->rlimits, sizeof(struct se_rlimit), 0) ||
	    !ref_ok(r, r->exit_rules, sizeof(struct se_exit_rule), 0) ||
	    !ref_ok(r, r->ll_ports, sizeof(uint16_t), 0) || !ref_ok(r, r->forwarded, sizeof(int32_t), 0))
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
	for (uint32_t i = 0; i < r->ll_paths.n; i++)
		if (!ref_ok(r, RA(r, r->ll_paths, struct se_rll)[i].path, 1, 1) ||
		    (uint32_t)RA(r, r->ll_paths, struct se_rll)[i].listed > SE_LISTED_FILE)
			return 0;
	if (!ref_ok(r, r->ops, sizeof(struct se_rop), 0))
		return 0;
	for (uint32_t i = 0; i < r->ops.n; i++) {
		const struct se_rop *o = &RA(r, r->ops, struct se_rop)[i];
		if (!ref_ok(r, o->a, 1, 1) || !ref_ok(r, o->b, 1, 1) || !ref_ok(r, o->c, 1, 1) ||
		    !ref_ok(r, o->d, 1, 1) || o->slot < -1 || o->slot >= SE_MAX_SLOTS)
			return 0;
	}
	return 1;
}

/* ---- the runner's state ---- */

struct se_ph {
	char *path, *record;
	uint64_t dev, ino;
	int64_t ctime_sec, ctime_nsec;
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
	struct se_start c;
	struct se_handover *h;
	char name[128];
	/* The cgroup directories made, in order, and their fds. */
	int ncg;
	char *cg[SE_MAX_CG];
	int v2_fd, v2_index, procs_fd;
	int join[SE_MAX_CG];
	int njoin;
	/* The claims: lock fds per group, and the placeholders known per group. */
	int nclaims;
	int lock[SE_MAX_CLAIMS];
	struct se_ph ph[SE_MAX_PH];
	int ph_group[SE_MAX_PH];
	int nph;
	/* The guardian. */
	struct se_guard *g;
	int guard_pid, guard_w;
	int ruleset;
	int notify_parent, notify_child;
	int sig_r, sig_w;
	int oom_fd;
	/* The ready pipe's read end, kept while the program runs under an
	 * init that says 'D' on it when the tree is gone (se_init.say_done),
	 * or -1. */
	int done_r;
	int fg_tty;
	int early[16];
	int nearly;
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

static int make_roots(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	for (uint32_t i = 0; i < r->roots.n; i++) {
		const char *p = rs(r, RA(r, r->roots, struct se_rref)[i]);
		struct stat st;
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			fail(s, 0, errno, p);
			return -1;
		}
		if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
			fail(s, 0, ENOTDIR, p);
			return -1;
		}
	}
	return 0;
}

/* The shared temp mount point, made 0700 when missing and checked as
 * hostfacts.CheckSharedTmp does. */
static int make_shared_tmp(struct se_runner *s)
{
	const char *dir = rs(s->r, s->r->shared_tmp);
	struct stat st;
	if (!s->r->shared_tmp.n)
		return 0;
	if (mkdir(dir, 0700) == 0) {
		if (chmod(dir, 0700) != 0) {
			fail(s, 0, errno, dir);
			return -1;
		}
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
	uid_t uid = geteuid();
	if (stat(parent, &st) != 0 || (st.st_uid != 0 && st.st_uid != uid) ||
	    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
		fail(s, 0, EPERM, parent);
		return -1;
	}
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 0777) != 0700) {
		fail(s, 0, EPERM, dir);
		return -1;
	}
	return 0;
}

/* ---- placeholders (mountns/registry.go) ---- */

static int lock_wait(int fd, int how)
{
	long pause_us = 50;
	int64_t deadline = se_now_ns() + 10LL * 1000000000;
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

static char *record_path(const char *group, const char *path)
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

static int read_record(const char *rec, struct se_ph *d)
{
	char text[128];
	ssize_t n = readlink(rec, text, sizeof text - 1);
	if (n <= 0)
		return 0;
	text[n] = 0;
	unsigned long long dev, ino;
	long long sec, nsec;
	char end;
	if (sscanf(text, "%llu:%llu:%lld:%lld%c", &dev, &ino, &sec, &nsec, &end) != 4)
		return 0;
	d->dev = dev;
	d->ino = ino;
	d->ctime_sec = sec;
	d->ctime_nsec = nsec;
	return 1;
}

static int matches(const struct se_ph *d, const struct stat *st)
{
	return S_ISDIR(st->st_mode) && (uint64_t)st->st_dev == d->dev && (uint64_t)st->st_ino == d->ino &&
	       (int64_t)st->st_ctim.tv_sec == d->ctime_sec && (int64_t)st->st_ctim.tv_nsec == d->ctime_nsec;
}

/* removeRecorded: under the group's exclusive lock, every recorded
 * placeholder of parent that still matches its record goes, and the
 * records of those gone or no longer ours. */
static void remove_recorded(const char *group, const char *parent)
{
	DIR *d = opendir(group);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "n-", 2) != 0)
			continue;
		char *rec = join2(group, e->d_name);
		char *path = join2(parent, e->d_name + 2);
		struct se_ph ph;
		struct stat st;
		if (!rec || !path) {
			free(rec);
			free(path);
			continue;
		}
		if (!read_record(rec, &ph)) {
			unlink(rec);
		} else if (lstat(path, &st) != 0) {
			if (errno == ENOENT)
				unlink(rec);
		} else if (!matches(&ph, &st) || rmdir(path) == 0 || errno == ENOENT || errno == ENOTEMPTY) {
			unlink(rec);
		}
		free(rec);
		free(path);
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
			remove_recorded(rs(s->r, c->dir), rs(s->r, c->parent));
		flock(s->lock[i], LOCK_UN);
		close(s->lock[i]);
		s->lock[i] = -1;
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
static int hold_placeholder(const char *path)
{
	return open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
	int decide[SE_MAX_CLAIMS];
	int ndecide = 0, ok = 0;
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
		decide[ndecide++] = fd;
		if (lock_wait(fd, LOCK_EX) != 0)
			goto out;
	}
	for (uint32_t i = 0; i < r->claims.n; i++) {
		const struct se_rclaim *c = &RA(r, r->claims, struct se_rclaim)[i];
		for (uint32_t j = 0; j < c->placeholders.n; j++) {
			const char *p = rs(r, RA(r, c->placeholders, struct se_rref)[j]);
			struct stat st;
			struct se_ph d;
			if (s->nph >= SE_MAX_PH)
				goto out;
			memset(&d, 0, sizeof d);
			d.record = record_path(rs(r, c->dir), p);
			d.path = strdup(p);
			if (!d.record || !d.path)
				goto out;
			if (lstat(p, &st) == 0) {
				if (!read_record(d.record, &d) || !matches(&d, &st)) {
					fail(s, 0, EEXIST, p); /* not a placeholder: the view changed */
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
				if (mkdir(p, 0700) != 0) {
					free(d.record);
					free(d.path);
					goto out;
				}
				if (lstat(p, &st) != 0) {
					rmdir(p);
					free(d.record);
					free(d.path);
					goto out;
				}
				d.dev = (uint64_t)st.st_dev;
				d.ino = (uint64_t)st.st_ino;
				d.ctime_sec = st.st_ctim.tv_sec;
				d.ctime_nsec = st.st_ctim.tv_nsec;
				snprintf(text, sizeof text, "%llu:%llu:%lld:%lld", (unsigned long long)d.dev,
					 (unsigned long long)d.ino, (long long)d.ctime_sec, (long long)d.ctime_nsec);
				/* A record of an earlier placeholder that is gone is
				 * replaced. */
				if (symlink(text, d.record) != 0 &&
				    (errno != EEXIST || unlink(d.record) != 0 || symlink(text, d.record) != 0)) {
					rmdir(p);
					free(d.record);
					free(d.path);
					goto out;
				}
			}
			d.hold = hold_placeholder(p);
			s->ph_group[s->nph] = (int)i;
			s->ph[s->nph++] = d;
		}
	}
	ok = 1;
out:
	if (!ok)
		fail(s, 0, errno, "placeholders");
	for (int i = 0; i < ndecide; i++)
		close(decide[i]);
	return ok ? 0 : -1;
}

/* ---- the cgroup ---- */

/* The group's name, as cgroups.formatName makes it: the supervisor's pid,
 * its start time, its pid namespace and 48 random bits. */
static int make_name(struct se_runner *s)
{
	char stat_text[1024];
	unsigned long long start = 0, ns = 0, rnd = 0;
	if (read_small("/proc/self/stat", stat_text, sizeof stat_text) > 0) {
		char *p = strrchr(stat_text, ')');
		for (int field = 2; p && *p; p++) {
			if (*p == ' ' && ++field == 22) {
				start = strtoull(p + 1, NULL, 10);
				break;
			}
		}
	}
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) == 0)
		ns = st.st_ino;
	if (getrandom(&rnd, 6, 0) != 6)
		return -1;
	rnd &= (1ULL << 48) - 1;
	int pid = getpid();
	if (start && ns)
		snprintf(s->name, sizeof s->name, "sandbox-executable-%d-%llu-%llu-%012llx", pid, start, ns, rnd);
	else if (start)
		snprintf(s->name, sizeof s->name, "sandbox-executable-%d-%llu-%012llx", pid, start, rnd);
	else
		snprintf(s->name, sizeof s->name, "sandbox-executable-%d-%012llx", pid, rnd);
	return 0;
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
}

static int make_cgroups(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	if (r->cgroups.n == 0)
		return 0;
	snprintf(s->h->cgroup_name, sizeof s->h->cgroup_name, "%s", s->name);
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
	if (s->ncg == 0 && s->nclaims == 0)
		return 0;
	size_t size = SE_GUARD_STACK + sizeof(struct se_guard) + 4096 + sizeof(int) * (size_t)s->nph;
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
			locks[i].nph = nph;
			locks[i].ph = NULL;
			if (nph == 0)
				continue;
			struct se_guard_ph *phs = bump(&b, sizeof *phs * (size_t)nph);
			int k = 0;
			for (int j = 0; j < s->nph; j++) {
				if (s->ph_group[j] != i)
					continue;
				phs[k].path = bump_str(&b, s->ph[j].path);
				phs[k].record = bump_str(&b, s->ph[j].record);
				phs[k].dev = s->ph[j].dev;
				phs[k].ino = s->ph[j].ino;
				phs[k].ctime_sec = s->ph[j].ctime_sec;
				phs[k].ctime_nsec = s->ph[j].ctime_nsec;
				k++;
			}
			locks[i].ph = phs;
		}
		g->locks = locks;
		g->nlocks = s->nclaims;
		s->h->locks = locks;
	}
	int *keep = bump(&b, sizeof(int) * (size_t)(1 + s->nclaims + s->nph));
	int nkeep = 0;
	keep[nkeep++] = p[0];
	for (int i = 0; i < s->nclaims; i++)
		keep[nkeep++] = s->lock[i];
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

#ifndef RESOLVE_NO_SYMLINKS
#define RESOLVE_NO_SYMLINKS 0x04
#endif

struct se_open_how {
	uint64_t flags, mode, resolve;
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

static int open_rule_path(const char *path, struct se_fd_batch *b)
{
	struct se_open_how how = {O_PATH | O_CLOEXEC | O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd < 0 && errno == EMFILE && b->n > 0) {
		batch_flush(b);
		fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	}
	if (fd < 0 && errno == ENOSYS)
		fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	return fd;
}

/* add_path_rule adds r's rule for the path open at fd: the access for the
 * type its listing gave (no stat) where it was listed and is not required,
 * else for the type fstat gives. 1 added or skipped, 0 failed (errno). */
static long add_beneath(int rs_fd, uint64_t access, int fd)
{
	struct se_ll_path_beneath pb = {access, fd};
	return syscall(SYS_landlock_add_rule, rs_fd, 1, &pb, 0);
}

static int add_path_rule(struct se_runner *s, int rs_fd, const struct se_rll *rule, const char *path, int fd)
{
	const struct se_recipe *r = s->r;
	uint64_t access = rule->access & r->ll_handled_fs;
	if (!rule->required && (rule->listed == SE_LISTED_DIR || rule->listed == SE_LISTED_FILE)) {
		/* A non-directory listed as one gets a non-directory's rights:
		 * on a symbolic link (one replaced it since) the rule is inert,
		 * as no access is checked on a link itself. A directory listed
		 * as a non-directory gets those rights, less than its own. A
		 * non-directory listed as a directory is refused (EINVAL) and
		 * stat'ed below. */
		uint64_t a = rule->listed == SE_LISTED_DIR ? access : access & r->ll_file_rights;
		if (!a || add_beneath(rs_fd, a, fd) == 0)
			return 1;
		if (errno != EINVAL || rule->listed != SE_LISTED_DIR) {
			fail(s, SE_STEP_LANDLOCK, errno, path);
			return 0;
		}
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		fail(s, SE_STEP_LANDLOCK, errno, path);
		return 0;
	}
	if (S_ISLNK(st.st_mode)) {
		if (rule->required) {
			fail(s, SE_STEP_LANDLOCK, ELOOP, path);
			return 0;
		}
		return 1;
	}
	if (!S_ISDIR(st.st_mode))
		access &= r->ll_file_rights;
	if (access && add_beneath(rs_fd, access, fd) != 0) {
		fail(s, SE_STEP_LANDLOCK, errno, path);
		return 0;
	}
	return 1;
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
 * ruleset's fd sees them: a held init (hold_init) cloned with it, before
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
		int fd = open_rule_path(path, &b);
		if (fd < 0) {
			if (!rule->required && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
				continue;
			fail(s, SE_STEP_LANDLOCK, errno, path);
			batch_flush(&b);
			return -1;
		}
		int ok = add_path_rule(s, rs_fd, rule, path, fd);
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

static void undo(struct se_runner *s)
{
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

static int in_foreground(void)
{
	pid_t pgrp = getpgrp();
	for (int fd = 0; fd < 3; fd++) {
		pid_t fg;
		if (ioctl(fd, TIOCGPGRP, &fg) == 0)
			return fg == pgrp;
	}
	return 0;
}

static int foreground_tty(void)
{
	pid_t pgrp = getpgrp();
	for (int fd = 0; fd < 3; fd++) {
		pid_t fg;
		if (ioctl(fd, TIOCGPGRP, &fg) == 0)
			return fg == pgrp ? fd : -1;
	}
	return -1;
}

static void forward(int pid, int sig)
{
	if ((sig == SIGINT || sig == SIGQUIT) && in_foreground())
		return;
	kill(pid, sig);
}

static int terminating(int sig)
{
	return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

static int catch_signals(struct se_runner *s)
{
	const struct se_recipe *r = s->r;
	int sigs[70];
	int n = 0;
	for (uint32_t i = 0; i < r->forwarded.n && n < 64; i++)
		sigs[n++] = RA(r, r->forwarded, int32_t)[i];
	sigs[n++] = SIGCHLD;
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	if (se_catch_signals(p[1], sigs, n) < 0) {
		se_release_signals();
		close(p[0]);
		close(p[1]);
		return -1;
	}
	s->sig_r = p[0];
	s->sig_w = p[1];
	return 0;
}

static void drop_signals(struct se_runner *s)
{
	se_release_signals();
	close(s->sig_r);
	close(s->sig_w);
	s->sig_r = s->sig_w = -1;
}

/* ---- the child ---- */

static char **candidates(const struct se_recipe *r, const char *name)
{
	if (strchr(name, '/')) {
		char **c = calloc(2, sizeof *c);
		if (c)
			c[0] = strdup(name);
		return c;
	}
	char **c = calloc(r->path_dirs.n + 1, sizeof *c);
	if (!c)
		return NULL;
	for (uint32_t i = 0; i < r->path_dirs.n; i++) {
		const char *d = rs(r, RA(r, r->path_dirs, struct se_rref)[i]);
		if (strcmp(d, ".") == 0)
			c[i] = strdup(name);
		else if (strcmp(d, "/") == 0)
			c[i] = join2("", name);
		else
			c[i] = join2(d, name);
		if (!c[i])
			return NULL;
	}
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

/* early_signal reads the signals that came while the run was set up: it
 * returns the first terminating one (the program must not start), or 0;
 * the others are kept, to be passed on once it runs. */
static int early_signal(struct se_runner *s)
{
	for (;;) {
		unsigned char buf[64];
		ssize_t got = read(s->sig_r, buf, sizeof buf);
		if (got <= 0)
			return 0;
		for (ssize_t i = 0; i < got; i++) {
			if (buf[i] == SIGCHLD)
				continue;
			if (terminating(buf[i]))
				return buf[i];
			if (s->nearly < 16)
				s->early[s->nearly++] = buf[i];
		}
	}
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
	drop_signals(s);
	_exit(128 + sig);
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
		s->h->init = init;
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
		memcpy(op->addr, o->addr, 4);
		memcpy(op->port, o->port, 2);
		op->backlog = o->backlog;
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
	q->fg_tty = r->init ? foreground_tty() : -1;
	s->fg_tty = q->fg_tty;
	q->ruleset_fd = s->ruleset;
	q->ruleset_flags = r->ll_restrict_flags;
	q->bpf = r->bpf.n ? (const char *)r + r->bpf.off : NULL;
	q->bpf_len = (unsigned short)(r->bpf.n / 8);
	q->notify_sock = s->notify_child;
	q->notify_killable = r->notify_killable;
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
	s->c.q->hold_init = 1;
	s->c.q->early_init = 1;
	long pid = se_spawn_start(s->c.q);
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
	if (!s->c.q)
		pid = child_request(s, argv);
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
	}
	if (pid > 0) {
		s->h->pidfd = q->used_clone3 ? q->pidfd : -1;
		if (q->fail_step != SE_STEP_NONE) {
			int st;
			if (!s->h->fail_what[0]) /* else the runner's own step failed first */
				fail(s, q->fail_step, q->fail_errno, "child");
			while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR)
				;
			if (s->h->pidfd >= 0)
				close(s->h->pidfd);
			s->h->pidfd = -1;
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

static void give_foreground_back(int tty)
{
	struct sigaction ign, old;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGTTOU, &ign, &old);
	pid_t pgrp = getpgrp();
	ioctl(tty, TIOCSPGRP, &pgrp);
	sigaction(SIGTTOU, &old, NULL);
}

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

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 125;
}

static void hand_over(struct se_runner *s, int reason)
{
	struct se_handover *h = s->h;
	h->reason = reason;
	h->sig_r = s->sig_r;
	h->sig_w = s->sig_w;
	h->guard_pid = s->guard_pid;
	h->guard_w = s->guard_w;
	h->guard = s->g;
	h->nclaims = s->nclaims;
	for (int i = 0; i < s->nclaims; i++)
		h->claim_fds[i] = s->lock[i];
	h->fg_tty = s->fg_tty;
	if (s->v2_fd >= 0)
		close(s->v2_fd);
	if (s->procs_fd >= 0)
		close(s->procs_fd);
	for (int i = 0; i < s->njoin; i++)
		close(s->join[i]);
	if (s->oom_fd >= 0)
		close(s->oom_fd);
	if (s->done_r >= 0)
		close(s->done_r);
	s->done_r = -1;
	for (int i = 0; i < s->ncg; i++)
		free(s->cg[i]);
	drop_holds(s);
	for (int i = 0; i < s->nph; i++) {
		free(s->ph[i].path);
		free(s->ph[i].record);
	}
}

/* The program runs: forward signals and wait for its init's end. Returns
 * 0 with the init's wait status once it is reaped, 1 with the program's
 * once the init has said the tree is gone (it is still exiting: the caller
 * reaps it), or hands over (returns -1). */
static int wait_quietly(struct se_runner *s, int pid, int listener, int *status)
{
	const struct se_recipe *r = s->r;
	int64_t start = s->h->program_ns;
	for (;;) {
		struct pollfd p[4];
		int n = 0;
		p[n++] = (struct pollfd){s->sig_r, POLLIN, 0};
		int li = -1, oi = -1, di = -1;
		if (listener >= 0) {
			li = n;
			p[n++] = (struct pollfd){listener, POLLIN, 0};
		}
		if (s->oom_fd >= 0) {
			oi = n;
			p[n++] = (struct pollfd){s->oom_fd, POLLIN, 0};
		}
		if (s->done_r >= 0) {
			di = n;
			p[n++] = (struct pollfd){s->done_r, POLLIN, 0};
		}
		int64_t now = se_now_ns(), wake = -1;
		int why = 0;
		if (r->timeout_ms > 0) {
			wake = start + r->timeout_ms * 1000000;
			why = SE_HO_TIMEOUT;
		}
		if (r->cpu_check_ms > 0 && (wake < 0 || start + r->cpu_check_ms * 1000000 < wake)) {
			wake = start + r->cpu_check_ms * 1000000;
			why = SE_HO_CPU;
		}
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
		if (k == 0 && wake >= 0)
			return hand_over(s, why), -1;
		if (li >= 0 && (p[li].revents & POLLIN))
			return hand_over(s, SE_HO_NOTIFY), -1;
		/* No task uses the filter any more (the program is gone):
		 * nothing more can come. */
		if (li >= 0 && (p[li].revents & (POLLHUP | POLLERR | POLLNVAL)))
			listener = -1;
		if (oi >= 0 && (p[oi].revents & POLLIN))
			return hand_over(s, SE_HO_OOM), -1;
		if (di >= 0 && p[di].revents) {
			char c = 0;
			ssize_t got = read(s->done_r, &c, 1);
			int prog;
			if (got == 1 && c == 'D' && s->h->init && se_init_status(s->h->init, &prog)) {
				*status = prog;
				return 1;
			}
			if (got != -1 || errno != EINTR) { /* EOF: the init exited without the word */
				close(s->done_r);
				s->done_r = -1;
			}
		}
		if (p[0].revents & POLLIN) {
			unsigned char buf[64];
			ssize_t got;
			int child = 0;
			while ((got = read(s->sig_r, buf, sizeof buf)) > 0) {
				for (ssize_t i = 0; i < got; i++) {
					if (buf[i] == SIGCHLD)
						child = 1;
					else
						forward(pid, buf[i]);
				}
			}
			if (child) {
				for (;;) {
					int st;
					pid_t w = waitpid(-1, &st, WNOHANG);
					if (w == pid) {
						*status = st;
						return 0;
					}
					if (w <= 0)
						break;
				}
			}
		}
	}
}

void se_run(const struct se_recipe *r, char *const *argv, se_holds_fn *holds, void *holds_arg,
	    struct se_handover *h)
{
	struct se_runner s;
	memset(&s, 0, sizeof s);
	memset(h, 0, sizeof *h);
	s.r = r;
	s.h = h;
	s.v2_fd = s.procs_fd = s.ruleset = s.notify_parent = s.notify_child = -1;
	s.sig_r = s.sig_w = s.guard_w = s.oom_fd = s.fg_tty = s.done_r = -1;
	s.v2_index = -1;
	for (int i = 0; i < SE_MAX_CLAIMS; i++)
		s.lock[i] = -1;
	h->pid = h->pidfd = h->listener_fd = h->sig_r = h->sig_w = h->guard_w = h->fg_tty = -1;
	h->started_ns = se_now_ns();
	int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);

	const char *name = argv[0];
	if (!name || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		fail(&s, 0, EINVAL, "program name");
		h->reason = SE_HO_FALLBACK;
		return;
	}
	char why[sizeof h->fail_what];
	if (sweep_due(r, why, sizeof why)) {
		fail(&s, 0, 0, why); /* begins with spawn.FallbackSweepDue */
		h->reason = SE_HO_FALLBACK;
		return;
	}
	/* What the child's request holds: made first, for an init cloned
	 * now (start_init). */
	if (r->notify) {
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) != 0) {
			fail(&s, 0, errno, "socket pair");
			goto fallback;
		}
		s.notify_parent = sp[0];
		s.notify_child = sp[1];
	}
	if (create_ruleset(&s) != 0)
		goto fallback;
	/* The cgroups' name, made now: its /proc/self/stat takes hundreds of
	 * microseconds longer once the init, which shares this memory, is
	 * making its namespaces. */
	if (r->cgroups.n && make_name(&s) != 0) {
		fail(&s, 0, errno, "cgroup name");
		goto fallback;
	}
	if (r->init) {
		if (start_init(&s, argv) != 0)
			goto fallback;
		se_phase("init");
	}
	/* Whether the decision still holds is asked while the init makes its
	 * namespaces: up to here nothing has been made outside this process
	 * and its init, which makes nothing else before ops_go. */
	if (holds) {
		if (!holds(holds_arg)) {
			h->stale = 1;
			fail(&s, 0, 0, "what the decision read changed");
			goto fallback;
		}
		se_phase("dependencies");
	}
	if (catch_signals(&s) != 0) {
		fail(&s, 0, errno, "signals");
		goto fallback;
	}
	se_phase("signals");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 || make_roots(&s) != 0 || make_shared_tmp(&s) != 0 ||
	    claim(&s) != 0)
		goto fallback;
	ops_go(&s);
	se_phase("placeholders");
	if (make_cgroups(&s) != 0)
		goto fallback;
	se_phase("cgroups");
	if (start_guardian(&s) != 0)
		goto fallback;
	se_phase("guardian");
	if (!r->init) {
		/* The child execs the program as soon as it is cloned. */
		if (add_rules(&s) != 0)
			goto fallback;
		se_phase("landlock");
		int sig = early_signal(&s);
		if (sig)
			end_unstarted(&s, -1, sig);
	}
	long pid = finish_child(&s, argv);
	if (pid < 0)
		goto fallback;
	h->pid = (int)pid;
	h->program_ns = se_now_ns();
	se_phase("start");
	close(s.ruleset);
	s.ruleset = -1;
	if (s.notify_child >= 0)
		close(s.notify_child);
	s.notify_child = -1;
	int listener = -1;
	if (s.notify_parent >= 0) {
		listener = recv_fd(s.notify_parent);
		close(s.notify_parent);
		s.notify_parent = -1;
		h->listener_fd = listener;
		if (listener < 0)
			return hand_over(&s, SE_HO_NOTIFY);
	}
	for (int i = 0; i < s.nearly; i++)
		forward((int)pid, s.early[i]);
	if (oom_watch(&s) != 0)
		return hand_over(&s, SE_HO_OOM);
	int status = 0;
	int waited = wait_quietly(&s, (int)pid, listener, &status);
	if (waited < 0)
		return;
	se_phase("program");
	int busy = 0;
	if (waited == 1) {
		/* The tree is gone and the init is tearing its namespaces down
		 * (hundreds of microseconds): the run's cgroups (empty) and
		 * placeholders (under no process but the init) go meanwhile,
		 * and the init is reaped after. */
		remove_cgroups(&s, &busy);
		se_phase("cgroups removed");
		release_claims(&s);
		se_phase("placeholders removed");
		int st;
		while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR)
			;
		close(s.done_r);
		s.done_r = -1;
		se_phase("init reaped");
	}
	/* The init is gone, and with it its PID namespace: the tree is gone
	 * when no child is left to reap (the guardian is not waited for). */
	int prog;
	if (h->init && se_init_status(h->init, &prog))
		status = prog;
	int st;
	pid_t other = waitpid(-1, &st, WNOHANG);
	if (r->end_in_go || other != -1 || errno != ECHILD) {
		h->exited = 1;
		h->status = status;
		if (h->pidfd >= 0)
			close(h->pidfd);
		h->pidfd = -1;
		if (listener >= 0)
			close(listener);
		h->listener_fd = -1;
		return hand_over(&s, SE_HO_ENDED);
	}
	if (listener >= 0)
		close(listener);
	if (h->pidfd >= 0)
		close(h->pidfd);
	if (s.fg_tty >= 0)
		give_foreground_back(s.fg_tty);
	if (s.oom_fd >= 0)
		close(s.oom_fd);
	s.oom_fd = -1;
	if (waited == 0) {
		remove_cgroups(&s, &busy);
		se_phase("cgroups removed");
		release_claims(&s);
		se_phase("placeholders removed");
	}
	if (!busy)
		release_guardian(&s);
	se_phase("guardian released");
	se_phases_say();
	_exit(exit_code(status));

fallback:
	end_init(&s);
	undo(&s);
	drop_signals(&s);
	/* An init that got its go made the memory it shares with this process
	 * undumpable (se_undumpable) and then failed a step: it is reaped, and
	 * Go, which takes over, may need its own children to write their id
	 * maps. */
	if (dumpable == 1 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	h->reason = SE_HO_FALLBACK;
}
