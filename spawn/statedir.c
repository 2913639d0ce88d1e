/*
 * Where the state directory lies (see statedir.h). C library only: it runs
 * on a warm start before the Go runtime, and costs a lookup one stat of
 * /run/user/UID and one lstat of the /tmp place; /etc/passwd is read only
 * when the /tmp place is someone else's, or when Go asks for every place.
 */
#define _GNU_SOURCE
#include "statedir.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* se_home reads euid's home directory from /etc/passwd into home (size
 * bytes); it reports whether it found an absolute one. The first line of
 * the uid wins, as getpwuid's files backend does. */
static int se_home(unsigned euid, char *home, size_t size)
{
	int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	struct stat st;
	char *buf = NULL;
	int found = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > (16 << 20) ||
	    !(buf = malloc((size_t)st.st_size + 1)))
		goto out;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	for (char *line = buf, *next; line && *line && !found; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		/* name:password:uid:gid:gecos:home:shell */
		char *f[7] = {line};
		int n = 1;
		for (char *p = line; *p && n < 7; p++)
			if (*p == ':') {
				*p = 0;
				f[n++] = p + 1;
			}
		if (n < 6 || !*f[2])
			continue;
		char *end;
		unsigned long uid = strtoul(f[2], &end, 10);
		if (*end || uid != euid)
			continue;
		if (f[5][0] == '/' && strlen(f[5]) < size) {
			strcpy(home, f[5]);
			found = 1;
		}
		break;
	}
out:
	free(buf);
	close(fd);
	return found;
}

/* se_own_private: a directory, not a link, euid's, no rights for group or
 * others (runstate.checkPrivate). */
static int se_own_private(const char *dir, unsigned euid)
{
	struct stat st;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == euid && (st.st_mode & 077) == 0;
}

static void se_add(struct se_state_where *w, const char *path, const char *parent)
{
	if (w->n == 0)
		snprintf(w->parent, sizeof w->parent, "%s", parent);
	snprintf(w->place[w->n++], sizeof w->place[0], "%s", path);
}

int se_state_where(unsigned euid, int all, struct se_state_where *w)
{
	char path[PATH_MAX];
	struct stat st;

	memset(w, 0, sizeof *w);
	if (euid == 0) {
		se_add(w, "/run/sandbox-executable", "/run");
		return w->n;
	}
	snprintf(path, sizeof path, "/run/user/%u", euid);
	if (se_own_private(path, euid)) {
		/* runstate.checkParent of it holds: it is euid's, not a link,
		 * and writable by nobody else. */
		snprintf(path, sizeof path, "/run/user/%u/sandbox-executable", euid);
		se_add(w, path, "");
		if (!all)
			return w->n;
	}
	snprintf(path, sizeof path, "/tmp/sandbox-executable-%u", euid);
	if (lstat(path, &st) < 0 || (S_ISDIR(st.st_mode) && st.st_uid == euid)) {
		/* Missing (made on first use), or the user's own: checked as a
		 * state directory when used. */
		se_add(w, path, "/tmp");
		if (!all)
			return w->n;
	} else if (!S_ISDIR(st.st_mode)) {
		snprintf(w->passed, sizeof w->passed, "%s is not a directory (uid %u's)", path, (unsigned)st.st_uid);
	} else {
		snprintf(w->passed, sizeof w->passed, "%s is another user's (uid %u)", path, (unsigned)st.st_uid);
	}
	char home[PATH_MAX];
	if (!se_home(euid, home, sizeof home)) {
		if (w->passed[0] && w->n == 0)
			strncat(w->passed, ", and the user has no home directory in /etc/passwd", sizeof w->passed - strlen(w->passed) - 1);
		return w->n;
	}
	if (stat(home, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != euid || (st.st_mode & 022)) {
		if (w->passed[0] && w->n == 0) {
			size_t l = strlen(w->passed);
			snprintf(w->passed + l, sizeof w->passed - l, ", and the home directory %s is not a directory of the user's own that only the user can write", home);
		}
		return w->n;
	}
	size_t hl = strlen(home);
	while (hl > 1 && home[hl - 1] == '/')
		home[--hl] = 0;
	char parent[PATH_MAX];
	if ((size_t)snprintf(parent, sizeof parent, "%s/.local/state", hl == 1 ? "" : home) >= sizeof parent ||
	    (size_t)snprintf(path, sizeof path, "%s/sandbox-executable", parent) >= sizeof path)
		return w->n;
	se_add(w, path, parent);
	return w->n;
}
