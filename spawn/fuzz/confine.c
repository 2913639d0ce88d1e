/*
 * Confinement for the harnesses (confine.h): the kernel keeps the fuzzed
 * paths away from the host, in a mount namespace whose root holds nothing
 * but what the run needs.
 */
#define _GNU_SOURCE
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* The new root: a tmpfs mounted over /tmp in the new namespace (the host's
 * /tmp is then reachable only through descriptors opened before). */
#define ROOT "/tmp"
#define MAX_BINDS 64
/* In the new root: says a process is in it already (see se_fuzz_confine). */
#define MARK "/.se-fuzz-confined"

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fuzz: confine: %s%s%s: %s\n", what, path ? " " : "", path ? path : "", strerror(errno));
	exit(1);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die("open", path);
	size_t n = strlen(text);
	if (write(fd, text, n) != (ssize_t)n)
		die("write", path);
	close(fd);
}

/* A directory to bind read-write at its own path: its real path and its
 * mounts' copy (open_tree). */
struct bind_rw {
	char path[PATH_MAX];
	int fd;
};
static struct bind_rw binds[MAX_BINDS];
static int nbinds;

/* want_rw records dir (resolved) for a read-write bind, unless a directory
 * recorded already holds it. */
static void want_rw(const char *dir)
{
	char real[PATH_MAX];
	if (!realpath(dir, real))
		return; /* libFuzzer will say what is missing */
	if (strcmp(real, "/") == 0) {
		errno = EPERM;
		die("will not bind the whole host at", "/");
	}
	for (int i = 0; i < nbinds; i++) {
		size_t n = strlen(binds[i].path);
		if (strncmp(real, binds[i].path, n) == 0 && (real[n] == '/' || real[n] == 0))
			return;
	}
	if (nbinds == MAX_BINDS) {
		errno = E2BIG;
		die("too many directories in", "argv");
	}
	/* A detached copy of its mounts, taken before /tmp is covered. */
	int fd = open_tree(AT_FDCWD, real, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0)
		die("open_tree", real);
	snprintf(binds[nbinds].path, sizeof binds[nbinds].path, "%s", real);
	binds[nbinds++].fd = fd;
}

/* want_arg records the directory an argument names: itself when it is one
 * (a corpus), else the one it is in (an input file, an artifact prefix). */
static void want_arg(const char *arg)
{
	char dir[PATH_MAX];
	struct stat st;
	if (snprintf(dir, sizeof dir, "%s", arg) >= (int)sizeof dir)
		return;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		char *slash = strrchr(dir, '/');
		if (!slash)
			return; /* a name in the working directory */
		slash[slash == dir] = 0;
	}
	want_rw(dir);
}

/* mkdirs makes path and its missing parents (mode 0755). */
static void mkdirs(const char *path)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
		die("path too long", path);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != 0)
			continue;
		char c = *s;
		*s = 0;
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			die("mkdir", p);
		*s = c;
		if (c == 0)
			return;
	}
}

/* bind mounts src at ROOT/dst, a directory
 * or with file set a file, read-only unless rw. */
static void bind(const char *src, const char *dst, int file, int rw)
{
	char at[PATH_MAX];
	if (snprintf(at, sizeof at, "%s%s", ROOT, dst) >= (int)sizeof at)
		die("path too long", dst);
	if (file) {
		char *slash = strrchr(at, '/');
		*slash = 0;
		mkdirs(at);
		*slash = '/';
		int fd = open(at, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			die("create", at);
		close(fd);
	} else {
		mkdirs(at);
	}
	if (mount(src, at, NULL, MS_BIND | MS_REC, NULL) != 0)
		die("bind", dst);
	if (!rw) {
		struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
		if (mount_setattr(AT_FDCWD, at, AT_RECURSIVE, &a, sizeof a) != 0)
			die("make read-only", dst);
	}
}

/* system_dir gives the new root the host's dir: the same link where the
 * host has one (merged /usr), else a read-only bind. */
static void system_dir(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) != 0)
		return;
	if (!S_ISLNK(st.st_mode)) {
		bind(dir, dir, 0, 0);
		return;
	}
	char target[PATH_MAX], at[PATH_MAX];
	ssize_t n = readlink(dir, target, sizeof target - 1);
	if (n < 0)
		die("readlink", dir);
	target[n] = 0;
	snprintf(at, sizeof at, "%s%s", ROOT, dir);
	if (symlink(target, at) != 0)
		die("symlink", at);
}

/* in_child goes on in a child, the first process of the new PID
 * namespace (libFuzzer has started no thread yet); this process waits for
 * it and ends as it ended. */
static void in_child(void)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork", NULL);
	if (pid == 0)
		return;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid", NULL);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

void se_fuzz_confine(int argc, char **argv, void (*fixture)(const char *root))
{
	char cwd[PATH_MAX];
	/* A process the confined harness started (libFuzzer's -merge runs
	 * one) is in the root already, and stays there. */
	struct statfs fs;
	if (statfs("/", &fs) == 0 && fs.f_type == TMPFS_MAGIC && access(MARK, F_OK) == 0)
		return;
	if (!getcwd(cwd, sizeof cwd))
		die("getcwd", NULL);
	uid_t uid = geteuid();
	gid_t gid = getegid();
	/* Without root, a user namespace gives the others; the harness is
	 * then root in it and nowhere else. */
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | (uid != 0 ? CLONE_NEWUSER : 0)) != 0)
		die("unshare", NULL);
	if (uid != 0) {
		char map[64];
		write_file("/proc/self/setgroups", "deny");
		snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
		write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
		write_file("/proc/self/gid_map", map);
	}
	in_child();
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		die("make private", "/");
	/* Taken in the new namespace, whose mounts they copy. */
	want_rw(cwd);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "-artifact_prefix=", 17) == 0)
			want_arg(a + 17);
		else if (strncmp(a, "-exact_artifact_path=", 21) == 0)
			want_arg(a + 21);
		else if (a[0] != '-')
			want_arg(a);
	}

	if (mount("se-fuzz", ROOT, "tmpfs", MS_NODEV | MS_NOSUID | MS_NOEXEC, "mode=0755") != 0)
		die("mount tmpfs on", ROOT);

	/* The symbolizer the sanitizers start for a report, and its libraries. */
	system_dir("/usr");
	system_dir("/bin");
	system_dir("/lib");
	system_dir("/lib64");
	/* /proc for the sanitizers (a process's maps, its threads): the PID
	 * namespace's, which holds the harness and what it starts alone
	 * (never another process's descriptors), and with subset=pid no
	 * /proc/kmsg (whose read takes the kernel's messages) or /proc/sys.
	 * Where the kernel refuses an unprivileged harness a new one, the
	 * harness's own entry of the host's is its /proc/self (enough but for
	 * -merge). */
	mkdirs(ROOT "/proc");
	if (mount("proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid") != 0) {
		char self[64], host[32];
		ssize_t n = readlink("/proc/self", host, sizeof host - 1);
		if (uid == 0 || n <= 0)
			die("mount proc on", ROOT "/proc");
		host[n] = 0;
		snprintf(self, sizeof self, "/proc/%s", host);
		bind(self, "/proc/self", 0, 0);
	}
	bind("/dev/null", "/dev/null", 1, 1);
	for (int i = 0; i < nbinds; i++) {
		char at[PATH_MAX];
		if (snprintf(at, sizeof at, "%s%s", ROOT, binds[i].path) >= (int)sizeof at)
			die("path too long", binds[i].path);
		mkdirs(at);
		if (move_mount(binds[i].fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) != 0)
			die("bind", binds[i].path);
		close(binds[i].fd);
	}
	/* libFuzzer's own temporary files (-merge's control file). */
	if ((mkdir(ROOT "/tmp", 01777) != 0 && errno != EEXIST) || chmod(ROOT "/tmp", 01777) != 0)
		die("mkdir", ROOT "/tmp");
	int fd = open(ROOT MARK, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
	if (fd < 0)
		die("create", ROOT MARK);
	close(fd);
	if (fixture)
		fixture(ROOT);
	if (chroot(ROOT) != 0)
		die("chroot", ROOT);
	if (chdir(cwd) != 0)
		die("chdir", cwd);
}
