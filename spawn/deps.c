/*
 * The dependency verifier. See deps.h for the format and the checks.
 */
#define _GNU_SOURCE
#include "deps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define SE_DEPS_HEADER 16
#define SE_DEPS_MAX_PATH 4095u
#define SE_DEPS_MAX_DATA (1u << 24)
#define SE_DEPS_MAX_ERRNO 4095u

/* A cursor over the encoding: past its end, bad is set and zeros come back. */
struct se_rd {
	const unsigned char *p;
	size_t left;
	int bad;
};

static const unsigned char *se_take(struct se_rd *r, size_t n)
{
	const unsigned char *p;

	if (r->bad || n > r->left) {
		r->bad = 1;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

static uint64_t se_le(struct se_rd *r, size_t n)
{
	const unsigned char *p = se_take(r, n);
	uint64_t v = 0;
	size_t i;

	if (p == NULL)
		return 0;
	for (i = n; i > 0; i--)
		v = (v << 8) | p[i - 1];
	return v;
}

#define se_u8(r) ((uint8_t)se_le((r), 1))
#define se_u16(r) ((uint16_t)se_le((r), 2))
#define se_u32(r) ((uint32_t)se_le((r), 4))
#define se_u64(r) ((uint64_t)se_le((r), 8))
#define se_i64(r) ((int64_t)se_le((r), 8))

/* One record, parsed. */
struct se_dep {
	unsigned kind, flags;
	int err;
	const unsigned char *path;
	uint32_t path_len;
	uint32_t mode, uid, gid;
	uint64_t dev, ino, rdev;
	int64_t size, msec, mnsec, csec, cnsec, fstype;
	const unsigned char *data;
	uint32_t data_len;
};

static unsigned se_allowed_flags(unsigned kind)
{
	switch (kind) {
	case SE_DEP_LSTAT:
		return SE_DEP_CTIME;
	case SE_DEP_FILE_META:
	case SE_DEP_FILE_CONTENT:
		return SE_DEP_NOFOLLOW;
	}
	return 0;
}

/* se_parse reads one record; 0 when it is malformed. */
static int se_parse(struct se_rd *r, struct se_dep *d)
{
	uint32_t e;

	memset(d, 0, sizeof(*d));
	d->kind = se_u8(r);
	d->flags = se_u8(r);
	if (se_u16(r) != 0 || r->bad)
		return 0;
	if (d->kind < SE_DEP_LSTAT || d->kind > SE_DEP_STATFS || (d->flags & ~se_allowed_flags(d->kind)) != 0)
		return 0;
	e = se_u32(r);
	if (e > SE_DEPS_MAX_ERRNO)
		return 0;
	d->err = (int)e;
	d->path_len = se_u32(r);
	if (r->bad || d->path_len > SE_DEPS_MAX_PATH)
		return 0;
	d->path = se_take(r, d->path_len);
	if (r->bad || (d->path_len > 0 && memchr(d->path, 0, d->path_len) != NULL))
		return 0;
	if (d->err == 0) {
		switch (d->kind) {
		case SE_DEP_LSTAT:
		case SE_DEP_STAT:
			d->mode = se_u32(r);
			d->uid = se_u32(r);
			d->gid = se_u32(r);
			d->dev = se_u64(r);
			d->ino = se_u64(r);
			d->rdev = se_u64(r);
			if (d->flags & SE_DEP_CTIME) {
				d->csec = se_i64(r);
				d->cnsec = se_i64(r);
			}
			break;
		case SE_DEP_READLINK:
		case SE_DEP_FILE_CONTENT:
			d->data_len = se_u32(r);
			if (r->bad)
				return 0;
			if (d->kind == SE_DEP_READLINK && (d->data_len == 0 || d->data_len > SE_DEPS_MAX_PATH))
				return 0;
			if (d->data_len > SE_DEPS_MAX_DATA)
				return 0;
			d->data = se_take(r, d->data_len);
			break;
		case SE_DEP_READDIR:
			d->dev = se_u64(r);
			d->ino = se_u64(r);
			d->msec = se_i64(r);
			d->mnsec = se_i64(r);
			break;
		case SE_DEP_FILE_META:
			d->dev = se_u64(r);
			d->ino = se_u64(r);
			d->size = se_i64(r);
			d->msec = se_i64(r);
			d->mnsec = se_i64(r);
			d->csec = se_i64(r);
			d->cnsec = se_i64(r);
			break;
		case SE_DEP_STATFS:
			d->fstype = se_i64(r);
			break;
		}
	}
	return !r->bad;
}

/* se_failed compares a failed call's errno with the record's. */
static int se_failed(const struct se_dep *d, int err)
{
	return d->err != 0 && d->err == err ? SE_DEPS_OK : SE_DEPS_ERRNO;
}

static int se_check_stat(const struct se_dep *d, const char *path)
{
	struct stat st;
	int r;

	do
		r = d->kind == SE_DEP_LSTAT ? lstat(path, &st) : stat(path, &st);
	while (r != 0 && errno == EINTR);
	if (r != 0)
		return se_failed(d, errno);
	if (d->err != 0)
		return SE_DEPS_ERRNO;
	if ((uint32_t)st.st_mode != d->mode || (uint32_t)st.st_uid != d->uid || (uint32_t)st.st_gid != d->gid ||
	    (uint64_t)st.st_dev != d->dev || (uint64_t)st.st_ino != d->ino || (uint64_t)st.st_rdev != d->rdev)
		return SE_DEPS_CHANGED;
	if ((d->flags & SE_DEP_CTIME) && ((int64_t)st.st_ctim.tv_sec != d->csec || (int64_t)st.st_ctim.tv_nsec != d->cnsec))
		return SE_DEPS_CHANGED;
	return SE_DEPS_OK;
}

static int se_check_readlink(const struct se_dep *d, const char *path)
{
	char target[SE_DEPS_MAX_PATH + 1];
	ssize_t n = readlink(path, target, sizeof(target));

	if (n < 0)
		return se_failed(d, errno);
	if (d->err != 0)
		return SE_DEPS_ERRNO;
	if ((size_t)n != d->data_len || memcmp(target, d->data, d->data_len) != 0)
		return SE_DEPS_CHANGED;
	return SE_DEPS_OK;
}

/* se_open_failed checks a recorded failure to open with flags: it must
 * fail alike. The path is opened O_PATH first and looked at, and only a
 * regular file or a directory is then opened as flags say (through its
 * /proc/self/fd link, so it is the file looked at): opening a FIFO or a
 * device has effects of its own, and a program may have put one where a
 * git include points. Anything else there now is a change. */
static int se_open_failed(const struct se_dep *d, const char *path, int flags)
{
	char link[32];
	struct stat st;
	int fd, rfd, err;

	do
		fd = open(path, O_PATH | O_CLOEXEC | (flags & (O_NOFOLLOW | O_DIRECTORY)));
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return se_failed(d, errno);
	if (fstat(fd, &st) != 0) {
		close(fd);
		return SE_DEPS_IO;
	}
	if (S_ISLNK(st.st_mode)) {
		close(fd);
		return se_failed(d, ELOOP); /* what O_NOFOLLOW says of a link */
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		close(fd);
		return SE_DEPS_CHANGED;
	}
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	do
		rfd = open(link, flags & ~O_NOFOLLOW);
	while (rfd < 0 && errno == EINTR);
	err = errno;
	close(fd);
	if (rfd >= 0) {
		close(rfd);
		return SE_DEPS_ERRNO;
	}
	/* ENOENT: the file is there, its link is not (no /proc). */
	return err == ENOENT ? SE_DEPS_CHANGED : se_failed(d, err);
}

static int se_read_flags(const struct se_dep *d)
{
	return O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | ((d->flags & SE_DEP_NOFOLLOW) ? O_NOFOLLOW : 0);
}

static int se_check_readdir(const struct se_dep *d, const char *path)
{
	struct stat st;
	int r;

	if (d->err != 0)
		return se_open_failed(d, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	do
		r = stat(path, &st);
	while (r != 0 && errno == EINTR);
	if (r != 0)
		return SE_DEPS_ERRNO;
	if (!S_ISDIR(st.st_mode) || (uint64_t)st.st_dev != d->dev || (uint64_t)st.st_ino != d->ino ||
	    (int64_t)st.st_mtim.tv_sec != d->msec || (int64_t)st.st_mtim.tv_nsec != d->mnsec)
		return SE_DEPS_CHANGED;
	return SE_DEPS_OK;
}

static int se_check_meta(const struct se_dep *d, const char *path)
{
	struct stat st;
	int r;

	if (d->err != 0)
		return se_open_failed(d, path, se_read_flags(d));
	do
		r = (d->flags & SE_DEP_NOFOLLOW) ? lstat(path, &st) : stat(path, &st);
	while (r != 0 && errno == EINTR);
	if (r != 0)
		return SE_DEPS_ERRNO;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_dev != d->dev || (uint64_t)st.st_ino != d->ino ||
	    (int64_t)st.st_size != d->size || (int64_t)st.st_mtim.tv_sec != d->msec ||
	    (int64_t)st.st_mtim.tv_nsec != d->mnsec || (int64_t)st.st_ctim.tv_sec != d->csec ||
	    (int64_t)st.st_ctim.tv_nsec != d->cnsec)
		return SE_DEPS_CHANGED;
	return SE_DEPS_OK;
}

static int se_check_content(const struct se_dep *d, const char *path)
{
	unsigned char buf[4096];
	uint32_t off = 0;
	int fd, res = SE_DEPS_OK;

	if (d->err != 0)
		return se_open_failed(d, path, se_read_flags(d));
	do
		fd = open(path, se_read_flags(d));
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return SE_DEPS_ERRNO;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			res = SE_DEPS_IO;
			break;
		}
		if (n == 0) {
			if (off != d->data_len)
				res = SE_DEPS_CHANGED;
			break;
		}
		if ((size_t)n > d->data_len - off || memcmp(buf, d->data + off, (size_t)n) != 0) {
			res = SE_DEPS_CHANGED;
			break;
		}
		off += (uint32_t)n;
	}
	close(fd);
	return res;
}

static int se_check_statfs(const struct se_dep *d, const char *path)
{
	struct statfs s;
	int r;

	do
		r = statfs(path, &s);
	while (r != 0 && errno == EINTR);
	if (r != 0)
		return se_failed(d, errno);
	if (d->err != 0)
		return SE_DEPS_ERRNO;
	return (int64_t)s.f_type == d->fstype ? SE_DEPS_OK : SE_DEPS_CHANGED;
}

static int se_check_one(const struct se_dep *d)
{
	char path[SE_DEPS_MAX_PATH + 1];

	memcpy(path, d->path, d->path_len);
	path[d->path_len] = 0;
	switch (d->kind) {
	case SE_DEP_LSTAT:
	case SE_DEP_STAT:
		return se_check_stat(d, path);
	case SE_DEP_READLINK:
		return se_check_readlink(d, path);
	case SE_DEP_READDIR:
		return se_check_readdir(d, path);
	case SE_DEP_FILE_META:
		return se_check_meta(d, path);
	case SE_DEP_FILE_CONTENT:
		return se_check_content(d, path);
	case SE_DEP_STATFS:
		return se_check_statfs(d, path);
	}
	return SE_DEPS_MALFORMED;
}

/* se_header checks the header; the records' count, or -1. */
static long se_header(const unsigned char *buf, size_t len, struct se_rd *r)
{
	uint32_t count;

	if (buf == NULL || len < SE_DEPS_HEADER || len > 0xffffffffu)
		return -1;
	r->p = buf;
	r->left = len;
	r->bad = 0;
	if (se_u32(r) != SE_DEPS_MAGIC || se_u16(r) != SE_DEPS_VERSION || se_u16(r) != 0)
		return -1;
	count = se_u32(r);
	if (se_u32(r) != (uint32_t)len || r->bad)
		return -1;
	/* The smallest record is 12 bytes. */
	if (count > (len - SE_DEPS_HEADER) / 12)
		return -1;
	return (long)count;
}

static int se_fail(long i, int why, long *index, int *reason)
{
	if (index != NULL)
		*index = i;
	if (reason != NULL)
		*reason = why;
	return 0;
}

int se_deps_check_ex(const unsigned char *buf, size_t len, long *index, int *reason)
{
	struct se_rd r;
	struct se_dep d;
	long count, i;
	int res;

	if (index != NULL)
		*index = -1;
	if (reason != NULL)
		*reason = SE_DEPS_OK;
	count = se_header(buf, len, &r);
	if (count < 0)
		return se_fail(-1, SE_DEPS_MALFORMED, index, reason);
	/* The whole encoding is validated before any call is made. */
	for (i = 0; i < count; i++)
		if (!se_parse(&r, &d))
			return se_fail(i, SE_DEPS_MALFORMED, index, reason);
	if (r.left != 0)
		return se_fail(-1, SE_DEPS_MALFORMED, index, reason);
	se_header(buf, len, &r);
	for (i = 0; i < count; i++) {
		se_parse(&r, &d);
		res = se_check_one(&d);
		if (res != SE_DEPS_OK)
			return se_fail(i, res, index, reason);
	}
	return 1;
}

int se_deps_check(const unsigned char *buf, size_t len)
{
	return se_deps_check_ex(buf, len, NULL, NULL);
}
