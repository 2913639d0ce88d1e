/*
 * The lookup of a stored recipe (see recipestore.h). It runs on a warm
 * start before the Go runtime, so it uses the C library only and keeps to
 * the system calls the checks need: for a hit, geteuid, three stats of the
 * directories, and open, fstat, read and close for each of the entry and
 * the key file (a miss stops at the open of the entry).
 */
#define _GNU_SOURCE
#include "recipestore.h"
#include "sha256.h"
#include "statedir.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char se_recipe_base[PATH_MAX];

void se_recipe_set_base(const char *dir)
{
	se_recipe_base[0] = 0;
	if (dir && strlen(dir) < sizeof se_recipe_base)
		strcpy(se_recipe_base, dir);
}

/* runstate.checkPrivate: a directory, not a link, euid's, no rights for
 * group or others. */
static int se_check_private(const char *dir, uid_t euid)
{
	struct stat st;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == euid && (st.st_mode & 077) == 0;
}

/* runstate.checkParent: owned by root or euid, writable by others only
 * with the sticky bit. */
static int se_check_parent(const char *dir, uid_t euid)
{
	struct stat st;
	return stat(dir, &st) == 0 && (st.st_uid == 0 || st.st_uid == euid) &&
	       ((st.st_mode & 022) == 0 || (st.st_mode & S_ISVTX));
}

/* se_read_private reads the whole of path, which must be euid's regular
 * file with no rights for group or others, of min..max bytes, into a
 * malloc'd buffer (*size bytes); NULL on any failure. */
static unsigned char *se_read_private(const char *path, uid_t euid, size_t min, size_t max, size_t *size)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	struct stat st;
	unsigned char *buf = NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != euid || (st.st_mode & 077) != 0 ||
	    st.st_size < (off_t)min || st.st_size > (off_t)max)
		goto fail;
	size_t n = (size_t)st.st_size, got = 0;
	if (!(buf = malloc(n ? n : 1)))
		goto fail;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r <= 0)
			goto fail;
		got += (size_t)r;
	}
	close(fd);
	*size = n;
	return buf;
fail:
	if (buf) {
		se_wipe(buf, (size_t)st.st_size);
		free(buf);
	}
	close(fd);
	return NULL;
}

/* se_state_dir writes the state directory's path to base and its parent's
 * to parent, the latter empty when the checks made already imply it: the
 * base set for tests, or where statedir.h's rule puts it. */
static int se_state_dir(uid_t euid, char *base, char *parent, size_t size)
{
	if (se_recipe_base[0]) {
		size_t n = strlen(se_recipe_base);
		while (n > 1 && se_recipe_base[n - 1] == '/')
			n--;
		if (n >= size)
			return 0;
		memcpy(base, se_recipe_base, n);
		base[n] = 0;
		char *slash = strrchr(base, '/');
		if (!slash)
			snprintf(parent, size, ".");
		else if (slash == base)
			snprintf(parent, size, "/");
		else
			snprintf(parent, size, "%.*s", (int)(slash - base), base);
		return 1;
	}
	struct se_state_where w;
	if (!se_state_where((unsigned)euid, 0, &w) || strlen(w.place[0]) >= size || strlen(w.parent) >= size)
		return 0;
	strcpy(base, w.place[0]);
	strcpy(parent, w.parent);
	return 1;
}

int se_recipe_lookup(const unsigned char key[32], unsigned char **body, size_t *len)
{
	static const char hex[] = "0123456789abcdef";
	char base[PATH_MAX], parent[PATH_MAX], path[PATH_MAX + 128];
	uid_t euid = geteuid();

	if (!se_state_dir(euid, base, parent, sizeof base))
		return 0;
	if (parent[0] && !se_check_parent(parent, euid))
		return 0;
	/* base passing checkPrivate is what checkParent asks of it as the
	 * parent of "recipes" and of "key". */
	if (!se_check_private(base, euid))
		return 0;
	int n = snprintf(path, sizeof path, "%s/recipes", base);
	if (!se_check_private(path, euid))
		return 0;
	path[n++] = '/';
	for (int i = 0; i < 32; i++) {
		path[n++] = hex[key[i] >> 4];
		path[n++] = hex[key[i] & 15];
	}
	path[n] = 0;

	size_t size, ksize;
	unsigned char *f = se_read_private(path, euid, SE_RECIPE_HEADER, SE_RECIPE_HEADER + (size_t)SE_RECIPE_MAX_BODY, &size);
	if (!f)
		return 0;
	size_t blen = (size_t)f[8] | (size_t)f[9] << 8 | (size_t)f[10] << 16 | (size_t)f[11] << 24;
	if (memcmp(f, SE_RECIPE_MAGIC, 8) != 0 || blen != size - SE_RECIPE_HEADER || memcmp(f + 12, key, 32) != 0)
		goto miss;

	snprintf(path, sizeof path, "%s/key", base);
	unsigned char *secret = se_read_private(path, euid, 32, 32, &ksize);
	if (!secret)
		goto miss;
	struct se_hmac_sha256 h;
	unsigned char mac[SE_SHA256_SIZE];
	se_hmac_sha256_init(&h, secret, ksize);
	se_wipe(secret, ksize);
	free(secret);
	se_hmac_sha256_update(&h, f, 44);
	se_hmac_sha256_update(&h, f + SE_RECIPE_HEADER, blen);
	se_hmac_sha256_final(&h, mac);
	if (!se_ct_equal(mac, f + 44, sizeof mac))
		goto miss;

	memmove(f, f + SE_RECIPE_HEADER, blen);
	*body = f;
	*len = blen;
	return 1;
miss:
	free(f);
	return 0;
}

static uint32_t le32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

int se_stored_split(const unsigned char *body, size_t len, struct se_stored_parts *p)
{
	if (len < 16 || le32(body + 12) != 0)
		return 0;
	size_t dl = le32(body), rl = le32(body + 4), vl = le32(body + 8);
	/* Each length below len (at most SE_RECIPE_MAX_BODY): no sum wraps. */
	if (dl > len || rl > len || vl > len)
		return 0;
	size_t doff = 16, roff = align8(doff + dl), voff = align8(roff + rl);
	if (roff > len || voff > len || len - voff != vl)
		return 0;
	*p = (struct se_stored_parts){doff, dl, roff, rl, voff, vl};
	return 1;
}
