/*
 * The spawn stage. See stage.h for the rules this code lives by.
 */
#define _GNU_SOURCE
#include "stage.h"
#include "phases.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The raw system calls and the clone trampoline below are written for each
 * architecture the helper supports; the syscall numbers come from the
 * libc's <sys/syscall.h> of that architecture, and only calls that exist on
 * all of them are used (aarch64 has no poll, rmdir, unlink, open or fork:
 * ppoll and unlinkat serve both). Anything else must not build: a guessed
 * calling convention would misbehave in ways no test here would see.
 */
#if !defined(__x86_64__) && !defined(__aarch64__)
#error "the spawn stage supports x86_64 and aarch64 only: port se_sys and se_clone_call to this architecture first"
#endif

/* Constants newer than the build host's headers may be. */
#define SE_CLONE_CLEAR_SIGHAND 0x100000000ULL
#define SE_CLONE_INTO_CGROUP 0x200000000ULL
#define SE_CLONE_PIDFD 0x00001000ULL
#define SE_CLOSE_RANGE_CLOEXEC (1U << 2)
#define SE_NR_clone3 435
#define SE_FUTEX_WAIT 0
#define SE_FUTEX_WAKE 1
#define SE_NR_close_range 436
/* The namespaces an init is cloned into; it makes the others itself. */
#define SE_INIT_CLONE_NS (CLONE_NEWUSER | CLONE_NEWPID)
#define SE_NR_pidfd_open 434
#define SE_NR_landlock_add_rule 445
#define SE_NR_landlock_restrict_self 446
#define SE_PR_SET_PDEATHSIG 1
#define SE_PR_SET_NO_NEW_PRIVS 38
#define SE_SECCOMP_SET_MODE_FILTER 1
#define SE_SECCOMP_FILTER_FLAG_NEW_LISTENER (1U << 3)
#define SE_SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1U << 5)
#define SE_NR_open_tree 428
#define SE_NR_move_mount 429
#define SE_NR_mount_setattr 442
#define SE_OPEN_TREE_CLONE 1
#define SE_AT_RECURSIVE 0x8000
#define SE_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define SE_MOVE_MOUNT_T_EMPTY_PATH 0x40
#define SE_NR_openat2 437
#define SE_RESOLVE_NO_MAGICLINKS 0x02
#define SE_RESOLVE_NO_SYMLINKS 0x04
#define SE_PR_SET_DUMPABLE 4
#define SE_PR_SET_NAME 15
#define SE_PR_CAPBSET_DROP 24
#define SE_PR_SET_SECUREBITS 28
#define SE_PR_CAP_AMBIENT 47
#define SE_PR_CAP_AMBIENT_CLEAR_ALL 4
/* SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS off,
 * SECBIT_NO_CAP_AMBIENT_RAISE, each with its _LOCKED bit. */
#define SE_SECUREBITS_LOCKED_DOWN 0xef
#define SE_LINUX_CAPABILITY_VERSION_3 0x20080522

struct se_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

struct se_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
		stack_size, tls, set_tid, set_tid_size, cgroup;
};

struct se_sock_fprog {
	unsigned short len;
	const void *filter;
};

struct se_kernel_sigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	uint64_t mask;
};

/* Raw system calls: return -errno on failure and never touch errno. */
#if defined(__x86_64__)
static inline long se_sys(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
/* The number in x8, the arguments in x0-x5, the result in x0; svc clobbers
 * nothing else. */
static inline long se_sys(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
}
#endif
#define SYS0(n) se_sys((n), 0, 0, 0, 0, 0, 0)
#define SYS1(n, a) se_sys((n), (long)(a), 0, 0, 0, 0, 0)
#define SYS2(n, a, b) se_sys((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define SYS3(n, a, b, c) se_sys((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYS4(n, a, b, c, d) se_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define SYS5(n, a, b, c, d, e) se_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

static __attribute__((noreturn)) void se_exit(int code)
{
	for (;;)
		SYS1(SYS_exit, code);
}

/* se_exit_code is the exit code Go chose for a failure of step with err:
 * the first of its rules that matches (a rule's step or err 0 matches
 * any). Go ends the table with a rule that matches everything; should none
 * match, the code is 1, still a failure. */
int se_exit_code_of(const struct se_exit_rule *rules, int n, int step, int err)
{
	for (int i = 0; i < n; i++) {
		const struct se_exit_rule *e = &rules[i];
		if ((e->step == 0 || e->step == step) && (e->err == 0 || e->err == err))
			return e->code;
	}
	return 1;
}

static int se_exit_code(const struct se_req *r, int step, long err)
{
	return se_exit_code_of(r->exit_rules, r->nexit_rules, step, (int)-err);
}

static __attribute__((noreturn)) void se_fail(struct se_req *r, int step, int index, long err)
{
	r->fail_index = index;
	r->fail_errno = (int)-err;
	r->fail_step = step;
	se_exit(se_exit_code(r, step, err));
}

/* se_cloexec_from marks every open fd from first on close-on-exec, for
 * kernels without CLOSE_RANGE_CLOEXEC (5.11; close_range itself is 5.9):
 * the fds are read from /proc/self/fd where it is mounted, else every
 * number below the soft RLIMIT_NOFILE is tried (no fd can be above it
 * but one inherited before a lower limit was set: a process that lowers
 * its own limit under its open fds; /proc is there in every mode the
 * helper runs). Returns 0 or -errno. */
static long se_cloexec_from(int first)
{
	char buf[1024];
	long dir = SYS4(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dir >= 0) {
		for (;;) {
			long n = SYS3(SYS_getdents64, dir, buf, sizeof buf);
			if (n < 0) {
				SYS1(SYS_close, dir);
				return n;
			}
			if (n == 0)
				break;
			for (long off = 0; off < n;) {
				/* struct linux_dirent64: ino, off, reclen, type, name */
				unsigned short reclen;
				memcpy(&reclen, buf + off + 16, sizeof reclen);
				const char *name = buf + off + 19;
				off += reclen;
				if (name[0] < '0' || name[0] > '9')
					continue;
				long fd = 0;
				for (const char *c = name; *c >= '0' && *c <= '9'; c++)
					fd = fd * 10 + (*c - '0');
				if (fd < first || fd == dir)
					continue;
				long ret = SYS3(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
				if (ret < 0 && ret != -EBADF) {
					SYS1(SYS_close, dir);
					return ret;
				}
			}
		}
		SYS1(SYS_close, dir);
		return 0;
	}
	struct rlimit lim;
	long ret = SYS4(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &lim);
	if (ret < 0)
		return ret;
	for (unsigned long fd = (unsigned long)first; fd < lim.rlim_cur && fd < (1UL << 30); fd++) {
		ret = SYS3(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
		if (ret < 0 && ret != -EBADF)
			return ret;
	}
	return 0;
}

/* Exec like execvp: try every candidate; remember EACCES; on ENOEXEC let
 * /bin/sh run it. Returns only on failure, with the errno execvp would give. */
static long se_exec(struct se_req *r, int *which)
{
	long err = -ENOENT, ret;
	int eacces = -1;
	for (int i = 0; i < r->npaths; i++) {
		*which = i;
		ret = SYS3(SYS_execve, r->paths[i], r->argv, r->envp);
		if (ret == -ENOEXEC && r->sh_fallback) {
			r->sh_argv[1] = r->paths[i];
			ret = SYS3(SYS_execve, "/bin/sh", r->sh_argv, r->envp);
			return ret;
		}
		switch (ret) {
		case -EACCES:
			if (eacces < 0)
				eacces = i;
			/* fallthrough */
		case -ENOENT:
		case -ENOTDIR:
		case -ESTALE:
		case -ENODEV:
		case -ETIMEDOUT:
			err = ret;
			continue;
		default:
			return ret;
		}
	}
	if (eacces >= 0) {
		*which = eacces;
		return -EACCES;
	}
	return err;
}

/* se_send_fd sends fd over the unix socket sock with SCM_RIGHTS. */
static long se_send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	char byte = 'F';
	struct iovec iov = {&byte, 1};
	struct msghdr msg;
	memset(&msg, 0, sizeof msg);
	memset(cbuf, 0, sizeof cbuf);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return SYS3(SYS_sendmsg, sock, &msg, 0);
}

/* se_op_lo_up sets IFF_UP on "lo" in the current network namespace. */
static long se_op_lo_up(struct se_req *r, const struct se_op *op)
{
	(void)r, (void)op;
	struct ifreq ifr;
	long s = SYS3(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;
	if (s < 0)
		return s;
	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, "lo", 3);
	ret = SYS3(SYS_ioctl, s, SIOCGIFFLAGS, &ifr);
	if (ret >= 0) {
		ifr.ifr_flags |= IFF_UP;
		ret = SYS3(SYS_ioctl, s, SIOCSIFFLAGS, &ifr);
	}
	SYS1(SYS_close, s);
	return ret;
}

/* se_op_listen_send makes a listening TCP socket on the address, port and
 * backlog Go chose (both in network order) in the current network
 * namespace (a socket keeps the namespace it was made in) and sends it to
 * the supervisor over the unix socket fd. */
static long se_op_listen_send(struct se_req *r, const struct se_op *op)
{
	(void)r;
	struct sockaddr_in sin;
	int one = 1;
	long s = SYS3(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;
	if (s < 0)
		return s;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	memcpy(&sin.sin_port, op->port, sizeof sin.sin_port);
	memcpy(&sin.sin_addr, op->addr, sizeof sin.sin_addr);
	ret = SYS5(SYS_setsockopt, s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ret >= 0)
		ret = SYS3(SYS_bind, s, &sin, sizeof sin);
	if (ret >= 0)
		ret = SYS2(SYS_listen, s, op->backlog);
	if (ret >= 0)
		ret = se_send_fd(op->fd, (int)s);
	SYS1(SYS_close, s);
	return ret;
}

/* se_drop_caps leaves the process no capability it could use or regain:
 * securebits first (setting them needs CAP_SETPCAP), then the ambient and
 * bounding sets, then the effective, permitted and inheritable sets. */
static long se_drop_caps(int *which)
{
	struct {
		uint32_t version;
		int pid;
	} hdr = {SE_LINUX_CAPABILITY_VERSION_3, 0};
	struct {
		uint32_t effective, permitted, inheritable;
	} data[2];
	*which = 0;
	long ret = SYS2(SYS_prctl, SE_PR_SET_SECUREBITS, SE_SECUREBITS_LOCKED_DOWN);
	/* A process whose uids are all non-zero and that may not change its
	 * securebits (no CAP_SETPCAP: a user's, outside any user namespace)
	 * cannot change its bounding set either, and needs neither: it has
	 * no root to lose, and under no_new_privs no exec gives it a
	 * capability. It still empties the sets it holds. */
	int unprivileged = 0;
	if (ret == -EPERM) {
		unsigned int ruid = 0, euid = 0, suid = 0;
		if (SYS3(SYS_getresuid, &ruid, &euid, &suid) == 0 && ruid && euid && suid)
			unprivileged = 1;
	}
	if (ret < 0 && !unprivileged)
		return ret;
	*which = 1;
	ret = SYS5(SYS_prctl, SE_PR_CAP_AMBIENT, SE_PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (ret < 0 && ret != -EINVAL) /* EINVAL: no ambient set (before 4.3) */
		return ret;
	*which = 2;
	for (int cap = 0; cap < 64 && !unprivileged; cap++) {
		ret = SYS2(SYS_prctl, SE_PR_CAPBSET_DROP, cap);
		if (ret == -EINVAL)
			break; /* past the kernel's last capability */
		if (ret < 0)
			return ret;
	}
	*which = 3;
	memset(data, 0, sizeof data);
	return SYS2(SYS_capset, &hdr, data);
}

#define SE_MOUNT_ATTR_RDONLY 0x1
#define SE_MS_RDONLY 0x1
#define SE_MS_NOSUID 0x2
#define SE_MS_NODEV 0x4
#define SE_MS_NOEXEC 0x8
#define SE_MS_REMOUNT 0x20
#define SE_MS_REC 0x4000
#define SE_MS_NOATIME 0x400
#define SE_MS_NODIRATIME 0x800
#define SE_MS_BIND 0x1000
#define SE_MS_RELATIME 0x200000
#define SE_MS_STRICTATIME 0x1000000

/* se_beneath: path p is top or (recursive) beneath it. */
static int se_beneath(const char *p, const char *top, int recursive)
{
	size_t n = strlen(top);
	if (strcmp(p, top) == 0)
		return 1;
	if (!recursive)
		return 0;
	if (n == 1 && top[0] == '/')
		return 1;
	return strncmp(p, top, n) == 0 && p[n] == '/';
}

/* se_read_all reads the file path into buf (cap bytes, NUL-terminated).
 * Returns its length or -errno; -E2BIG when it does not fit. */
static long se_read_all(const char *path, char *buf, size_t cap)
{
	long ret = SYS4(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (ret < 0)
		return ret;
	long fd = ret;
	size_t len = 0;
	while ((ret = SYS3(SYS_read, fd, buf + len, cap - 1 - len)) > 0) {
		len += (size_t)ret;
		if (len == cap - 1) {
			ret = -E2BIG;
			break;
		}
	}
	SYS1(SYS_close, fd);
	buf[len] = 0;
	return ret < 0 ? ret : (long)len;
}

/* se_unescape undoes mountinfo's octal escapes (\040 for a space) in place. */
static void se_unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; w++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w = *r++;
		}
	}
	*w = 0;
}

/* se_remount_flags are the flags that remount a mount with mountinfo
 * options opts read-only and keep its nosuid, nodev, noexec and atime
 * flags. */
static unsigned long se_remount_flags(const char *opts)
{
	static const struct {
		const char *name;
		unsigned long flag;
		int atime;
	} known[] = {
		{"nosuid", SE_MS_NOSUID, 0}, {"nodev", SE_MS_NODEV, 0}, {"noexec", SE_MS_NOEXEC, 0},
		{"noatime", SE_MS_NOATIME, 1}, {"nodiratime", SE_MS_NODIRATIME, 0}, {"relatime", SE_MS_RELATIME, 1},
	};
	unsigned long flags = SE_MS_BIND | SE_MS_REMOUNT | SE_MS_RDONLY;
	int atime = 0; /* mountinfo shows no atime option for strictatime */
	for (const char *o = opts; *o;) {
		const char *comma = strchr(o, ',');
		size_t n = comma ? (size_t)(comma - o) : strlen(o);
		for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
			if (strlen(known[k].name) == n && !strncmp(o, known[k].name, n)) {
				flags |= known[k].flag;
				atime |= known[k].atime;
			}
		}
		o += n + (comma ? 1 : 0);
	}
	/* A remount without an atime flag means relatime, which a user
	 * namespace may not set on a strictatime mount (locked). */
	return atime ? flags : flags | SE_MS_STRICTATIME;
}

/* se_remount_line remounts read-only the mount of one mountinfo line (id
 * parent major:minor root mountpoint options ...) when it is top or
 * (recursive) beneath it. Returns 0 or -errno. */
static long se_remount_line(char *line, const char *top, int recursive)
{
	char *f[6] = {0};
	char *c = line;
	for (int i = 0; i < 6 && *c; i++) {
		f[i] = c;
		while (*c && *c != ' ')
			c++;
		if (*c)
			*c++ = 0;
	}
	if (!f[5])
		return 0;
	se_unescape(f[4]);
	if (!se_beneath(f[4], top, recursive))
		return 0;
	long ret = SYS5(SYS_mount, 0, f[4], 0, se_remount_flags(f[5]), 0);
	/* A mount point another mount hides, or one gone since mountinfo was
	 * read, cannot be reached by its path: what is there (the mount on
	 * top) is remounted by its own line. One beneath a directory this uid
	 * may not search (EACCES: a root-owned 0700 directory, for an
	 * unprivileged user) cannot be reached by the program either, which
	 * runs as the same uid with no capability and cannot change that
	 * directory's mode. */
	return ret == -ENOENT || ret == -EACCES ? 0 : ret;
}

/* se_remount_ro makes the mount at top (and, recursive, every mount beneath
 * it) read-only where mount_setattr is missing (before 5.12): each mount of
 * /proc/self/mountinfo there is remounted MS_BIND|MS_REMOUNT|MS_RDONLY with
 * its own nosuid, nodev, noexec and atime flags, which a user namespace
 * may not clear (they are locked). Returns 0 or -errno. */
static long se_remount_ro(const char *top, int recursive)
{
	const size_t cap = 4 << 20;
	char *buf = (char *)se_sys(SYS_mmap, 0, (long)cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((long)buf < 0 && (long)buf > -4096)
		return (long)buf;
	long ret = se_read_all("/proc/self/mountinfo", buf, cap);
	for (char *line = buf; ret >= 0 && *line;) {
		char *end = strchr(line, '\n');
		if (end)
			*end = 0;
		char *next = end ? end + 1 : line + strlen(line);
		ret = se_remount_line(line, top, recursive);
		line = next;
	}
	SYS2(SYS_munmap, buf, cap);
	return ret < 0 ? ret : 0;
}

/*
 * The operations, one small function per kind (enum se_op_kind), each
 * returning 0 or -errno.
 */

/* se_open_path opens path (O_PATH) without following any symbolic link on
 * its way and checks it is the file id says; it returns the descriptor or
 * -errno (-ESTALE for another file than the one decided). Before openat2
 * (5.6) only the last component is kept from being a link; the identity is
 * checked all the same. */
static long se_open_path(const char *path, const struct se_ident *id, int flags)
{
	struct {
		uint64_t flags, mode, resolve;
	} how = {(uint64_t)(O_PATH | O_CLOEXEC | O_NOFOLLOW | flags), 0, SE_RESOLVE_NO_SYMLINKS | SE_RESOLVE_NO_MAGICLINKS};
	long fd = SYS4(SE_NR_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd == -ENOSYS)
		fd = SYS4(SYS_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC | O_NOFOLLOW | flags, 0);
	if (fd < 0 || id->kind == SE_ID_ANY)
		return fd;
	struct stat st;
	long ret = SYS4(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH);
	if (ret == 0 && (id->kind == SE_ID_PLACEHOLDER && id->ino == 0))
		ret = -ESTALE; /* the runner made no such placeholder */
	if (ret == 0 && ((uint64_t)st.st_dev != id->dev || (uint64_t)st.st_ino != id->ino))
		ret = -ESTALE;
	if (ret < 0) {
		SYS1(SYS_close, fd);
		return ret;
	}
	return fd;
}

/* se_fd_path writes "/proc/self/fd/N" into buf: the path of a descriptor
 * for the calls that take none (mount(2), an overlay's lowerdir). The
 * stage's mounts are made while /proc is still the host's. */
static char *se_fd_path(char *buf, long fd)
{
	static const char prefix[] = "/proc/self/fd/";
	char digits[24];
	int n = 0;
	do {
		digits[n++] = (char)('0' + fd % 10);
		fd /= 10;
	} while (fd > 0 && n < (int)sizeof digits);
	memcpy(buf, prefix, sizeof prefix - 1);
	int k = (int)sizeof prefix - 1;
	while (n > 0)
		buf[k++] = digits[--n];
	buf[k] = 0;
	return buf;
}

/* se_bind clones the tree at op->a (with its submounts if MS_REC) onto
 * op->b, both taken by descriptor. */
static long se_bind(const struct se_op *op)
{
	long src = se_open_path(op->a, &op->ida, 0);
	if (src < 0)
		return src;
	long tree = SYS3(SE_NR_open_tree, src, "",
			 SE_OPEN_TREE_CLONE | AT_EMPTY_PATH | O_CLOEXEC | ((op->flags & SE_MS_REC) ? SE_AT_RECURSIVE : 0));
	SYS1(SYS_close, src);
	if (tree < 0)
		return tree;
	long dst = se_open_path(op->b, &op->idb, 0), ret = dst;
	if (dst >= 0) {
		ret = SYS5(SE_NR_move_mount, tree, "", dst, "", SE_MOVE_MOUNT_F_EMPTY_PATH | SE_MOVE_MOUNT_T_EMPTY_PATH);
		SYS1(SYS_close, dst);
	}
	SYS1(SYS_close, tree);
	return ret;
}

/* se_overlay_options writes an overlay's options with its lower directory
 * given as target's descriptor: "lowerdir=/proc/self/fd/N," then op->d. */
static long se_overlay_options(char *buf, size_t size, long target, const char *rest)
{
	static const char key[] = "lowerdir=";
	char fdp[40];
	se_fd_path(fdp, target);
	size_t need = sizeof key - 1 + strlen(fdp) + 1 + (rest ? strlen(rest) : 0) + 1;
	if (need > size)
		return -ENAMETOOLONG;
	size_t k = 0;
	memcpy(buf + k, key, sizeof key - 1);
	k += sizeof key - 1;
	memcpy(buf + k, fdp, strlen(fdp));
	k += strlen(fdp);
	if (rest && *rest) {
		buf[k++] = ',';
		memcpy(buf + k, rest, strlen(rest));
		k += strlen(rest);
	}
	buf[k] = 0;
	return 0;
}

static long se_op_mount(struct se_req *r, const struct se_op *op)
{
	(void)r;
	if ((op->flags & SE_MS_BIND) && !(op->flags & SE_MS_REMOUNT))
		return se_bind(op);
	if (op->idb.kind == SE_ID_NONE) /* "/" made private, or a mount of the stage's own */
		return SYS5(SYS_mount, op->a, op->b, op->c, op->flags, op->d);
	long target = se_open_path(op->b, &op->idb, 0);
	if (target < 0)
		return target;
	char path[40], opts[4096];
	const char *data = op->d;
	long ret = 0;
	if (op->lower_is_target) {
		ret = se_overlay_options(opts, sizeof opts, target, op->d);
		data = opts;
	}
	if (ret == 0)
		ret = SYS5(SYS_mount, op->a, se_fd_path(path, target), op->c, op->flags, data);
	SYS1(SYS_close, target);
	return ret;
}

static long se_op_write(struct se_req *r, const struct se_op *op)
{
	(void)r;
	long fd = SYS4(SYS_openat, AT_FDCWD, op->a, O_WRONLY | O_CLOEXEC, 0), ret = fd;
	if (fd < 0)
		return fd;
	size_t len = op->b ? strlen(op->b) : 0;
	ret = SYS3(SYS_write, fd, op->b, len);
	if (ret >= 0 && (size_t)ret != len)
		ret = -EIO;
	SYS1(SYS_close, fd);
	return ret;
}

static long se_op_chdir(struct se_req *r, const struct se_op *op)
{
	(void)r;
	if (op->ida.kind == SE_ID_NONE)
		return SYS1(SYS_chdir, op->a);
	long fd = se_open_path(op->a, &op->ida, O_DIRECTORY);
	if (fd < 0)
		return fd;
	long ret = SYS1(SYS_fchdir, fd);
	SYS1(SYS_close, fd);
	return ret;
}

static long se_op_setattr(struct se_req *r, const struct se_op *op)
{
	(void)r;
	struct se_mount_attr ma = {0};
	ma.attr_set = op->flags;
	long fd = AT_FDCWD, ret;
	const char *path = op->a;
	if (op->ida.kind != SE_ID_NONE) {
		if ((fd = se_open_path(op->a, &op->ida, 0)) < 0)
			return fd;
		path = "";
	}
	ret = SYS5(SE_NR_mount_setattr, fd, path, (op->fd ? SE_AT_RECURSIVE : 0) | (fd != AT_FDCWD ? AT_EMPTY_PATH : 0), &ma,
		   sizeof ma);
	if (fd != AT_FDCWD)
		SYS1(SYS_close, fd);
	if (ret == -ENOSYS && op->flags == SE_MOUNT_ATTR_RDONLY)
		ret = se_remount_ro(op->a, op->fd); /* before 5.12: by path, its identity checked above */
	return ret;
}

static long se_op_open_tree(struct se_req *r, const struct se_op *op)
{
	if (op->fd < 0 || op->fd >= SE_MAX_SLOTS)
		return -EINVAL;
	long fd = AT_FDCWD, ret;
	const char *path = op->a;
	if (op->ida.kind != SE_ID_NONE) {
		if ((fd = se_open_path(op->a, &op->ida, 0)) < 0)
			return fd;
		path = "";
	}
	ret = SYS3(SE_NR_open_tree, fd, path, SE_OPEN_TREE_CLONE | SE_AT_RECURSIVE | O_CLOEXEC | (fd != AT_FDCWD ? AT_EMPTY_PATH : 0));
	if (fd != AT_FDCWD)
		SYS1(SYS_close, fd);
	if (ret >= 0)
		r->slots[op->fd] = (int)ret;
	return ret;
}

static long se_op_move_mount(struct se_req *r, const struct se_op *op)
{
	if (op->fd < 0 || op->fd >= SE_MAX_SLOTS)
		return -EINVAL;
	if (op->ida.kind == SE_ID_NONE)
		return SYS5(SE_NR_move_mount, r->slots[op->fd], "", AT_FDCWD, op->a, SE_MOVE_MOUNT_F_EMPTY_PATH);
	long fd = se_open_path(op->a, &op->ida, 0);
	if (fd < 0)
		return fd;
	long ret = SYS5(SE_NR_move_mount, r->slots[op->fd], "", fd, "", SE_MOVE_MOUNT_F_EMPTY_PATH | SE_MOVE_MOUNT_T_EMPTY_PATH);
	SYS1(SYS_close, fd);
	return ret;
}

static long se_op_mkdir(struct se_req *r, const struct se_op *op)
{
	(void)r;
	return SYS3(SYS_mkdirat, AT_FDCWD, op->a, op->flags);
}

static long se_op_create(struct se_req *r, const struct se_op *op)
{
	(void)r;
	long ret = SYS4(SYS_openat, AT_FDCWD, op->a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, op->flags);
	return ret < 0 ? ret : SYS1(SYS_close, ret);
}

static long se_op_symlink(struct se_req *r, const struct se_op *op)
{
	(void)r;
	return SYS3(SYS_symlinkat, op->a, AT_FDCWD, op->b);
}

static long se_op_landlock_rule(struct se_req *r, const struct se_op *op)
{
	struct __attribute__((packed)) {
		uint64_t allowed_access;
		int32_t parent_fd;
	} attr;
	long fd = se_open_path(op->a, &op->ida, O_DIRECTORY);
	if (fd == -ENOENT || fd == -ENOTDIR)
		return 0; /* not granting is the safe side */
	if (fd < 0)
		return fd;
	attr.allowed_access = op->flags;
	attr.parent_fd = (int32_t)fd;
	long ret = SYS4(SE_NR_landlock_add_rule, r->ruleset_fd, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &attr, 0);
	SYS1(SYS_close, fd);
	return ret;
}

/* se_op_open_send opens the directory a, as it is in the child's view
 * when the operation runs, and sends it to the supervisor over the unix
 * socket fd: a mount made there stays reachable through it after the
 * child's namespace is gone (the scratch caches' layers, which
 * --persist-cache writes back once the program has ended). */
static long se_op_open_send(struct se_req *r, const struct se_op *op)
{
	(void)r;
	long fd = SYS4(SYS_openat, AT_FDCWD, op->a, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	long ret = se_send_fd(op->fd, (int)fd);
	SYS1(SYS_close, fd);
	return ret;
}

static long (*const se_ops[])(struct se_req *, const struct se_op *) = {
	[SE_OP_MOUNT] = se_op_mount,
	[SE_OP_WRITE] = se_op_write,
	[SE_OP_CHDIR] = se_op_chdir,
	[SE_OP_SETATTR] = se_op_setattr,
	[SE_OP_OPEN_TREE] = se_op_open_tree,
	[SE_OP_MOVE_MOUNT] = se_op_move_mount,
	[SE_OP_LO_UP] = se_op_lo_up,
	[SE_OP_LISTEN_SEND] = se_op_listen_send,
	[SE_OP_MKDIR] = se_op_mkdir,
	[SE_OP_CREATE] = se_op_create,
	[SE_OP_SYMLINK] = se_op_symlink,
	[SE_OP_LANDLOCK_RULE] = se_op_landlock_rule,
	[SE_OP_OPEN_SEND] = se_op_open_send,
};

static long se_clone_call(long nr, long a, long b, long c, long d, long e,
			  int (*fn)(void *), void *arg);

/* se_clone clones with clone3 and args; where clone3 is missing (ENOSYS:
 * an old kernel, or a container's seccomp filter) and Go allowed it
 * (fallback), with the legacy clone and the same flags but those clone3
 * alone has (the child then resets its signal handlers itself). Argument
 * order of clone: flags, stack, parent_tid, then child_tid and tls on
 * x86_64 but tls and child_tid on aarch64; both last two are 0 here, so
 * one call serves both. *clone3 says which call made the child; it is
 * written before the call, for the child (which shares this memory)
 * reads it. */
static long se_clone(struct se_clone_args *args, int fallback, int (*fn)(void *), void *arg, int *clone3)
{
	*clone3 = 1;
	long pid = se_clone_call(SE_NR_clone3, (long)args, sizeof *args, 0, 0, 0, fn, arg);
	if (pid != -ENOSYS || !fallback)
		return pid;
	*clone3 = 0;
	long flags = (long)(args->flags & 0xffffffffULL & ~SE_CLONE_PIDFD) | (long)args->exit_signal;
	long stack = (long)(args->stack + args->stack_size);
	/* The legacy clone's last two arguments differ: x86_64 takes the
	 * child's tid address before tls, aarch64 after it. */
#if defined(__x86_64__)
	return se_clone_call(SYS_clone, flags, stack, (long)args->parent_tid, (long)args->child_tid, 0, fn, arg);
#else
	return se_clone_call(SYS_clone, flags, stack, (long)args->parent_tid, 0, (long)args->child_tid, fn, arg);
#endif
}

/*
 * The steps. Each applies one part of what Go decided, in the child, and
 * ends the child through se_fail when it cannot; the lists at the end
 * (se_direct, se_init_steps, se_under_init) run them in the containment
 * order.
 */
typedef void se_step_fn(struct se_req *r);

/* Placement first: nothing may run or fork outside the cgroups. The v2
 * cgroup is joined through cgroup.procs only where the clone did not put
 * the program there (no clone3 under an init). */
static void se_join_cgroups(struct se_req *r)
{
	long ret;
	if (r->procs_fd >= 0 && !(r->prog_clone3 && r->cgroup_fd >= 0)) {
		ret = SYS3(SYS_write, r->procs_fd, "0", 1);
		if (ret < 0)
			se_fail(r, SE_STEP_CGROUP, -1, ret);
	}
	for (int i = 0; i < r->njoin; i++) {
		ret = SYS3(SYS_write, r->join_fds[i], "0", 1);
		if (ret < 0)
			se_fail(r, SE_STEP_CGROUP, i, ret);
	}
}

/* The late namespaces: a cgroup namespace is rooted where the process is
 * when it is made. */
static void se_unshare_late(struct se_req *r)
{
	long ret = r->unshare_flags ? SYS1(SYS_unshare, r->unshare_flags) : 0;
	if (ret < 0)
		se_fail(r, SE_STEP_UNSHARE, 0, ret);
}

static void se_run_ops(struct se_req *r)
{
	for (int i = 0; i < r->nops; i++) {
		const struct se_op *op = &r->ops[i];
		long ret = -EINVAL;
		if (op->kind > 0 && op->kind < (int)(sizeof se_ops / sizeof se_ops[0]) && se_ops[op->kind])
			ret = se_ops[op->kind](r, op);
		if (ret < 0)
			se_fail(r, SE_STEP_OP, i, ret);
	}
}

static void se_set_rlimits(struct se_req *r)
{
	for (int i = 0; i < r->nrlimits; i++) {
		const struct se_rlimit *l = &r->rlimits[i];
		uint64_t v[2] = {l->cur, l->max}, had[2];
		long ret = SYS4(SYS_prlimit64, 0, l->resource, v, 0);
		if (ret == -EPERM && SYS4(SYS_prlimit64, 0, l->resource, 0, had) == 0 && had[1] < v[1]) {
			/* Only a privileged process raises a hard limit: where the
			 * caller's is lower than the policy's, it is the stricter
			 * one, and it stays. */
			v[1] = had[1];
			if (v[0] > v[1])
				v[0] = v[1];
			ret = SYS4(SYS_prlimit64, 0, l->resource, v, 0);
		}
		if (ret < 0)
			se_fail(r, SE_STEP_RLIMIT, i, ret);
	}
}

static void se_end_trial(struct se_req *r)
{
	if (r->trial)
		se_exit(0);
}

/* The parent-death signal; the supervisor may have died before it took
 * effect. An init learns that when it cannot write its ready byte. */
static void se_set_pdeathsig(struct se_req *r)
{
	if (!r->pdeathsig)
		return;
	long ret = SYS2(SYS_prctl, SE_PR_SET_PDEATHSIG, r->pdeathsig);
	if (ret < 0)
		se_fail(r, SE_STEP_PDEATHSIG, 0, ret);
	if (!r->init && SYS0(SYS_getppid) != r->parent_pid)
		se_fail(r, SE_STEP_PDEATHSIG, 1, -ESRCH);
}

/* This process shares the supervisor's memory: nothing in the namespace
 * may read it through /proc (after the id maps, which a non-dumpable
 * process can no longer write). Dumpability belongs to the memory, so the
 * supervisor loses it too: an init does this only once it has its go, just
 * before the program (nothing else is ever in the namespace), and an init
 * let go before that leaves the supervisor as it was (its later children
 * write their own id maps). */
static void se_undumpable(struct se_req *r)
{
	(void)r;
	SYS2(SYS_prctl, SE_PR_SET_DUMPABLE, 0);
}

/* Where the program goes among the caller's process groups and sessions.
 * Where the caller's group has the terminal on the program's stdio (fg_tty),
 * the program leads a group of its own and takes the terminal's foreground,
 * as a job-control shell gives each job a group: a shell the program runs
 * can then name the group it found and give the terminal back to it when
 * it is done (the caller's group has no number in the program's PID
 * namespace: dash, for one, fails its exit on that). Its stops are the
 * supervisor's to follow (se_init.say_stops). Otherwise, when one of its
 * standard descriptors is the caller's controlling terminal (TIOCGPGRP
 * answers only on that one), it stays in the caller's group, whose job
 * control is then the kernel's, as a plain exec's. Otherwise it leads a
 * session of its own, which has no controlling terminal: /dev/tty cannot
 * reach the caller's (ENXIO). In its own group the init signals the whole
 * group (prog_group), the processes the caller's group would have held. */
static void se_place_program(struct se_req *r)
{
	int pgrp;
	long ret;
	if (r->fg_tty >= 0) {
		pgrp = (int)SYS0(SYS_getpid);
		ret = SYS2(SYS_setpgid, 0, 0);
		if (ret >= 0)
			ret = SYS3(SYS_ioctl, r->fg_tty, TIOCSPGRP, &pgrp);
	} else {
		for (int fd = 0; fd < 3; fd++)
			if (SYS3(SYS_ioctl, fd, TIOCGPGRP, &pgrp) == 0)
				return;
		ret = SYS0(SYS_setsid);
	}
	if (ret < 0)
		se_fail(r, SE_STEP_SIGNALS, -2, ret);
	r->init->prog_group = 1;
}

/* Where the caller's group is orphaned and the program took the terminal
 * in a group of its own, it runs nothing of its own until the init has
 * left the caller's session (se_start_program): in the meantime the init
 * there would keep the program's group from being orphaned, and a Ctrl-Z
 * typed then would stop what the kernel discards for a plain exec. Every
 * signal is still blocked here (the init's mask, until se_restore_signals):
 * one sent meanwhile is taken, or discarded, after the wait. */
static void se_wait_init(struct se_req *r)
{
	struct se_init *g = r->init;
	if (r->fg_tty < 0 || r->fg_linked)
		return;
	while (!g->left)
		SYS4(SYS_futex, &g->left, SE_FUTEX_WAIT, 0, 0);
}

/* Every fd above 2 closes at exec, except the ones kept on purpose: an fd
 * opened before Landlock is not restricted by it. */
static void se_close_fds(struct se_req *r)
{
	long ret = SYS3(SE_NR_close_range, 3, ~0U, SE_CLOSE_RANGE_CLOEXEC);
	if (ret == -EINVAL || ret == -ENOSYS)
		ret = se_cloexec_from(3); /* before 5.11 */
	if (ret < 0)
		se_fail(r, SE_STEP_FDS, -1, ret);
	for (int i = 0; i < r->nkeep; i++) {
		ret = SYS3(SYS_fcntl, r->keep_fds[i], F_SETFD, 0);
		if (ret < 0)
			se_fail(r, SE_STEP_FDS, i, ret);
	}
}

static void se_drop_capabilities(struct se_req *r)
{
	int which;
	long ret = r->drop_caps ? se_drop_caps(&which) : 0;
	if (ret < 0)
		se_fail(r, SE_STEP_CAPS, which, ret);
}

static void se_no_new_privs(struct se_req *r)
{
	long ret = SYS5(SYS_prctl, SE_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (ret < 0)
		se_fail(r, SE_STEP_NNP, 0, ret);
}

/* se_audit_mark names the process audit_comm and says its pid (the
 * kernel attaches it, as the receiver sees it: SO_PASSCRED) just before
 * the Landlock domain is made, whose audit record keeps both. Nothing here
 * confines: a failure only leaves the run's file denials unattributed,
 * which Go reports. */
static void se_audit_mark(struct se_req *r)
{
	if (r->audit_sock < 0 || r->ruleset_fd < 0)
		return;
	char byte = 'A';
	SYS5(SYS_prctl, SE_PR_SET_NAME, (long)r->audit_comm, 0, 0, 0);
	SYS4(SYS_sendto, r->audit_sock, &byte, 1, 0);
}

static void se_restrict_landlock(struct se_req *r)
{
	long ret = r->ruleset_fd >= 0 ? SYS2(SE_NR_landlock_restrict_self, r->ruleset_fd, r->ruleset_flags) : 0;
	if (ret < 0)
		se_fail(r, SE_STEP_LANDLOCK, 0, ret);
}

/* se_load_filter loads the seccomp filter; it returns the listener when it
 * makes one, 0 or -errno. */
static long se_load_filter(struct se_req *r)
{
	struct se_sock_fprog prog = {r->bpf_len, r->bpf};
	unsigned int flags = r->notify_sock >= 0 ? SE_SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	if (r->notify_sock >= 0 && r->notify_killable) {
		long ret = SYS3(SYS_seccomp, SE_SECCOMP_SET_MODE_FILTER, flags | SE_SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
		if (ret != -EINVAL) /* EINVAL: before 5.19 */
			return ret;
	}
	return SYS3(SYS_seccomp, SE_SECCOMP_SET_MODE_FILTER, flags, &prog);
}

/* The filter, and its listener sent to the supervisor. Under an init the
 * listener stays, close-on-exec, in the file table shared with the init,
 * which sends the copy it keeps (se_pass_listener). */
static void se_load_seccomp(struct se_req *r)
{
	if (r->bpf_len == 0)
		return;
	long ret = se_load_filter(r);
	if (ret < 0)
		se_fail(r, SE_STEP_SECCOMP, 0, ret);
	if (r->notify_sock >= 0 && r->init) {
		r->listener_fd = (int)ret;
	} else if (r->notify_sock >= 0) {
		long listener = ret;
		ret = se_send_fd(r->notify_sock, (int)listener);
		SYS1(SYS_close, listener);
		if (ret < 0)
			se_fail(r, SE_STEP_SECCOMP, 1, ret);
	}
}

/* Signal dispositions and mask as the helper found them. clone3 cleared
 * every handler; the legacy clone did not, so they are reset here. */
static void se_restore_signals(struct se_req *r)
{
	long ret;
	if (!(r->init ? r->prog_clone3 : r->used_clone3)) {
		struct se_kernel_sigaction dfl = {0};
		for (int s = 1; s <= 64; s++)
			if (s != SIGKILL && s != SIGSTOP)
				SYS4(SYS_rt_sigaction, s, &dfl, 0, 8);
	}
	for (int i = 0; i < r->nignored; i++) {
		struct se_kernel_sigaction ign = {.handler = (unsigned long)SIG_IGN};
		ret = SYS4(SYS_rt_sigaction, r->ignored[i], &ign, 0, 8);
		if (ret < 0)
			se_fail(r, SE_STEP_SIGNALS, i, ret);
	}
	ret = SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &r->mask, 0, 8);
	if (ret < 0)
		se_fail(r, SE_STEP_SIGNALS, -1, ret);
}

static void se_exec_program(struct se_req *r)
{
	int which = 0;
	long ret = se_exec(r, &which);
	se_fail(r, SE_STEP_EXEC, which, ret);
}

#define SE_RUN(r, steps)                                                 \
	for (size_t se_i = 0; se_i < sizeof(steps) / sizeof(steps)[0]; se_i++) \
		(steps)[se_i](r)

/* A program the supervisor starts itself, in the containment order. */
static se_step_fn *const se_direct[] = {
	se_join_cgroups, se_unshare_late, se_run_ops, se_set_rlimits, se_end_trial, se_set_pdeathsig,
	se_close_fds, se_drop_capabilities, se_no_new_privs, se_audit_mark, se_restrict_landlock, se_load_seccomp,
	se_restore_signals, se_exec_program,
};

/* The program under an init (PID 2): it joins its cgroups (born into the v2
 * one where clone3 could do that), makes the late namespaces, drops every
 * capability, and goes on as any program. */
static se_step_fn *const se_under_init[] = {
	se_join_cgroups, se_unshare_late, se_drop_capabilities, se_place_program, se_wait_init, se_close_fds,
	se_no_new_privs, se_audit_mark, se_restrict_landlock, se_load_seccomp, se_restore_signals, se_exec_program,
};

static int se_program_main(void *arg)
{
	SE_RUN((struct se_req *)arg, se_under_init);
	return 0; /* not reached: se_exec_program ends the process */
}

/*
 * The init's steps (PID 1 of the program's PID namespace: see struct
 * se_init).
 */

/* Out of the caller's process group, which the program may stay in: a
 * signal sent to the group (a terminal's Ctrl-C, the caller's killpg)
 * reaches the program once, not again through this process. Where the
 * program took the terminal in a group of its own (fg_tty) and the
 * caller's group is a job-control shell's job (fg_linked), this process
 * leads another group of the caller's session, so that the program's group
 * is not orphaned either: its stops are delivered, and the supervisor
 * follows them (the job stops, the shell takes its terminal back). Where
 * the caller's group is orphaned (VT Code's PTY session leader's is), or
 * the program stays in it, this process leaves the caller's session: in
 * another session it does not count for the orphaned-group rule, and the
 * kernel discards the program's tty stops exactly where it would a plain
 * exec's. */
static void se_leave_group(struct se_req *r)
{
	if (r->fg_tty >= 0 && r->fg_linked)
		SYS2(SYS_setpgid, 0, 0);
	else
		SYS0(SYS_setsid);
}

/* The program, as PID 2, on the request's stack, born into the run's
 * cgroup: the init stays in the supervisor's, so that an OOM kill in the
 * run's group never picks it (the kernel kills every process sharing a
 * victim's memory, and this one shares the supervisor's). The init leaves
 * the caller's group (se_leave_group) while the program's steps run, then
 * waits until the program has execed or failed: the kernel clears and
 * wakes prog_tid when the program's memory is released, at its exec or its
 * exit (CLONE_CHILD_CLEARTID, the wait of vfork without the suspension,
 * which would keep the init in the caller's group until the exec). With a
 * seccomp listener to pass on, the program shares the init's file table
 * until its exec (which unshares it), so that the listener it makes stays
 * here. */
static void se_start_program(struct se_req *r)
{
	uintptr_t top = ((uintptr_t)r->stack + r->stack_size) & ~(uintptr_t)15;
	struct se_clone_args args;
	struct se_init *g = r->init;
	memset(&args, 0, sizeof args);
	r->listener_fd = -1;
	g->prog_group = 0; /* set by the program's se_place_program */
	g->left = 0;
	g->prog_tid = -1;
	args.flags = CLONE_VM | CLONE_CHILD_CLEARTID | SE_CLONE_CLEAR_SIGHAND | (r->notify_sock >= 0 ? CLONE_FILES : 0);
	args.child_tid = (uint64_t)(uintptr_t)&g->prog_tid;
	args.exit_signal = SIGCHLD;
	args.stack = (uint64_t)(uintptr_t)r->stack;
	args.stack_size = (uint64_t)(top - (uintptr_t)r->stack);
	if (r->cgroup_fd >= 0) {
		args.flags |= SE_CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)r->cgroup_fd;
	}
	long pid = se_clone(&args, r->prog_clone_fallback, se_program_main, r, &r->prog_clone3);
	if (pid < 0)
		se_fail(r, SE_STEP_INIT, 0, pid);
	se_leave_group(r);
	g->left = 1;
	SYS3(SYS_futex, &g->left, SE_FUTEX_WAKE, 1);
	for (int tid; (tid = g->prog_tid) != 0;)
		SYS4(SYS_futex, &g->prog_tid, SE_FUTEX_WAIT, tid, 0);
	if (r->fail_step != SE_STEP_NONE) /* the program's steps failed; it has exited */
		se_exit(se_exit_code(r, SE_STEP_INIT, 0));
	g->prog_pid = (int)pid;
}

/* The namespaces of ns_flags the clone did not make (SE_INIT_CLONE_NS):
 * made here, in the init, while the caller goes on. A failure is the
 * clone's, as it was when the clone made them all. */
static void se_init_unshare(struct se_req *r)
{
	unsigned long flags = r->ns_flags & ~(unsigned long)SE_INIT_CLONE_NS;
	long ret = flags ? SYS1(SYS_unshare, flags) : 0;
	if (ret < 0)
		se_fail(r, SE_STEP_CLONE, 1, ret);
}

/* The init's copy of the caller's end of the go socket goes first, so
 * that its reads of go_r see EOF once the caller's copy goes. */
static void se_close_go_w(struct se_req *r)
{
	SYS1(SYS_close, r->go_w);
}

/* The init waits here, its namespaces made, until what its mounts need is
 * in place (se_spawn_ops_go); anything else (the caller gone, or refusing)
 * ends it. Then it takes back the caller's CPU affinity. */
static void se_wait_ops(struct se_req *r)
{
	char c = 0;
	long n;
	do
		n = SYS3(SYS_read, r->go_r, &c, 1);
	while (n == -EINTR);
	if (n != 1 || c != 'O')
		se_fail(r, SE_STEP_INIT, 1, n < 0 ? n : -ECANCELED);
	/* The caller's mask again (se_nudge_init), before anything else: an
	 * init that cannot have it ends, rather than start the program on
	 * fewer CPUs than the caller gave. */
	if (r->init->nudged) {
		n = SYS3(SYS_sched_setaffinity, 0, r->init->affinity_len, r->init->affinity);
		if (n < 0)
			se_fail(r, SE_STEP_INIT, 1, n);
	}
}

/* se_recv_go reads the init's go and the caller's cgroup fds with it,
 * and points the request at this table's copies: exactly those of
 * cgroup_fd, procs_fd and join_fds that the caller set (it set them before
 * it sent the go), or -EPROTO. Returns the bytes read, or -errno. */
static long se_recv_go(struct se_req *r, char *c)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * SE_MAX_PASSED)];
	} u;
	struct iovec iov = {c, 1};
	struct msghdr m;
	memset(&m, 0, sizeof m);
	memset(&u, 0, sizeof u);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof u.buf;
	long n;
	do
		n = SYS3(SYS_recvmsg, r->go_r, &m, MSG_CMSG_CLOEXEC);
	while (n == -EINTR);
	if (n != 1)
		return n;
	int want = (r->cgroup_fd >= 0) + (r->procs_fd >= 0) + r->njoin, got = 0;
	struct cmsghdr *h = m.msg_controllen >= sizeof(struct cmsghdr) ? CMSG_FIRSTHDR(&m) : NULL;
	if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len >= CMSG_LEN(0))
		got = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
	if ((m.msg_flags & MSG_CTRUNC) || got != want || got > SE_MAX_PASSED)
		return -EPROTO; /* what did come is closed as the init exits */
	struct se_init *g = r->init;
	if (got)
		memcpy(g->passed, CMSG_DATA(h), sizeof(int) * (size_t)got);
	int k = 0;
	if (r->cgroup_fd >= 0)
		r->cgroup_fd = g->passed[k++];
	if (r->procs_fd >= 0)
		r->procs_fd = g->passed[k++];
	if (r->njoin)
		r->join_fds = &g->passed[k];
	return n;
}

/* The init waits here, its namespaces and mounts made, for the caller's go
 * (se_spawn_finish); anything else (the caller gone, or refusing) ends it
 * before the program starts. */
static void se_hold(struct se_req *r)
{
	char c = 0;
	long n = se_recv_go(r, &c);
	SYS1(SYS_close, r->go_r);
	if (n != 1 || c != 'G')
		se_fail(r, SE_STEP_INIT, 1, n < 0 ? n : -ECANCELED);
}

/* The init's own capabilities go once the program has its own. */
static void se_init_drop_caps(struct se_req *r)
{
	int which;
	long ret = r->drop_caps ? se_drop_caps(&which) : 0;
	if (ret < 0) {
		SYS2(SYS_kill, r->init->prog_pid, SIGKILL);
		se_fail(r, SE_STEP_CAPS, which, ret);
	}
}

/* Sent before the ready byte, so the supervisor finds it as soon as
 * se_spawn returns. Should this fail, the supervisor finds nothing and
 * ends the run. */
static void se_pass_listener(struct se_req *r)
{
	r->init->listener_left = -1;
	if (r->notify_sock >= 0 && r->listener_fd >= 0 && se_send_fd(r->notify_sock, r->listener_fd) < 0)
		r->init->listener_left = r->listener_fd;
}

/* The ready byte, written once the program runs. From here on the request
 * is freed: only the init's struct and its stack remain, and nothing of the
 * supervisor's stays open here but, with say_done or say_stops, the ready
 * pipe's write end. */
static void se_say_ready(struct se_req *r)
{
	struct se_init *g = r->init;
	char c = 'R';
	/* r is the caller's to free once the byte is written. */
	int hold = g->listener_left >= 0 ? r->notify_sock : -1;
	if (SYS3(SYS_write, g->ready_fd, &c, 1) != 1)
		se_exit(se_exit_code(r, SE_STEP_INIT, 0)); /* the supervisor is gone */
	/* A listener left here stays until the caller has taken it and says
	 * so (one byte on the socket). */
	if (hold >= 0) {
		long n;
		do
			n = SYS3(SYS_read, hold, &c, 1);
		while (n == -EINTR);
	}
	unsigned int keep = (unsigned int)g->ready_fd;
	if (!g->say_done && !g->say_stops) {
		SYS3(SE_NR_close_range, 0, ~0U, 0);
		return;
	}
	if (keep > 0)
		SYS3(SE_NR_close_range, 0, keep - 1, 0);
	SYS3(SE_NR_close_range, keep + 1, ~0U, 0);
}

/* se_say_done, once the program has exited: what else has exited is
 * reaped, and when no child is left the tree is gone: 'D' says so. Every
 * process of the namespace descends from the program, and one whose parent
 * is gone becomes a child of this one or of a subreaper that still lives
 * (itself below a child of this one), its new parent set before the old
 * one is a zombie: so no child left means no process left. None can come
 * in but through setns from outside, which takes CAP_SYS_ADMIN over the
 * namespace (the caller's side, not the program's). Otherwise nothing is
 * said: the namespace's end, as this process exits, kills what is left,
 * and the caller waits for that. */
static void se_say_done(struct se_init *g)
{
	if (!g->say_done)
		return;
	long w;
	int st;
	while ((w = SYS4(SYS_wait4, -1, &st, WNOHANG | __WALL, 0)) > 0)
		;
	if (w == -ECHILD) {
		char c = 'D';
		SYS3(SYS_write, g->ready_fd, &c, 1); /* EPIPE (no SIGPIPE here): Go took the run over */
	}
}

/* se_reap reaps every child that has exited; when the program is one of
 * them the init records its status and exits as it did. With say_stops, a
 * stop of the program is said on the ready pipe: the signal's number, one
 * byte (below 32: never 'R' or 'D'). */
static void se_reap(struct se_init *g)
{
	for (;;) {
		int st = 0;
		long w = SYS4(SYS_wait4, -1, &st, WNOHANG | __WALL | (g->say_stops ? WUNTRACED : 0), 0);
		if (w <= 0)
			return;
		if (WIFSTOPPED(st)) {
			char c = (char)WSTOPSIG(st);
			if (w == g->prog_pid)
				SYS3(SYS_write, g->ready_fd, &c, 1); /* EPIPE (no SIGPIPE here): nobody follows */
			continue;
		}
		if (w == g->prog_pid) {
			g->prog_status = st;
			g->done = 1;
			se_say_done(g);
			se_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		}
	}
}

/* se_forward_until_done is the init's life once the program runs: it
 * passes on what the supervisor (outside the namespace, so si_pid 0; sent
 * with kill, so si_code SI_USER) sends and reaps orphans until the program
 * is gone. A terminal's signals (SI_KERNEL), which reach this process only
 * while it is still in the caller's process group, reached the program
 * themselves. */
static __attribute__((noreturn)) void se_forward_until_done(struct se_init *g)
{
	uint64_t all = ~0ULL;
	for (;;) {
		siginfo_t si;
		long sig = SYS4(SYS_rt_sigtimedwait, &all, &si, 0, 8);
		if (sig == SIGCHLD)
			se_reap(g);
		else if (sig > 0 && si.si_pid == 0 && si.si_code <= 0)
			SYS2(SYS_kill, g->prog_group ? -g->prog_pid : g->prog_pid, sig);
	}
}

/* The init: tied to the supervisor's creating thread (should the
 * supervisor die, the init dies, and with it the whole namespace; one that
 * died before that took effect is seen when the ready byte cannot be
 * written), it prepares the namespace and starts the program. */
static se_step_fn *const se_init_steps[] = {
	se_set_pdeathsig, se_close_go_w, se_init_unshare, se_wait_ops, se_run_ops, se_set_rlimits,
	se_hold, se_undumpable, se_start_program, se_init_drop_caps, se_pass_listener,
	se_say_ready,
};

static int se_child(void *arg)
{
	struct se_req *r = arg;
	struct se_init *g = r->init; /* r is freed once the init is ready */
	if (g) {
		SE_RUN(r, se_init_steps);
		se_forward_until_done(g);
	}
	SE_RUN(r, se_direct);
	return 0; /* not reached: se_exec_program ends the process */
}

/*
 * clone3/clone with a child that starts in fn(arg) on its own stack and
 * exits with its return value. The kernel has already switched the child to
 * the new stack (16-byte aligned by the callers), so the call leaves it
 * aligned as both ABIs want. fn and arg travel in registers the compiler
 * picked among those the child keeps (the asm touches no register it did
 * not declare).
 *
 * x86_64: the child's registers are the parent's but for rax, rcx and r11,
 * so fn and arg may be in any other one, rbp included.
 *
 * aarch64: the child's registers are the parent's but for x0 (0 in the
 * child); x0 is an output, so neither fn nor arg can be there. The child
 * branches with blr (x30 is the child's to lose: it never comes back), and
 * the parent skips straight to the end with every register intact.
 */
#if defined(__x86_64__)
static long se_clone_call(long nr, long a, long b, long c, long d, long e,
			  int (*fn)(void *), void *arg)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	long ret;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov %[arg], %%rdi\n\t"
			 "call *%[fn]\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov %[nr_exit], %%eax\n\t"
			 "syscall\n\t"
			 "hlt\n\t"
			 "1:\n\t"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
			   [fn] "r"(fn), [arg] "r"(arg), [nr_exit] "i"(SYS_exit)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static long se_clone_call(long nr, long a, long b, long c, long d, long e,
			  int (*fn)(void *), void *arg)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	__asm__ volatile("svc #0\n\t"
			 "cbnz x0, 1f\n\t"
			 "mov x0, %[arg]\n\t"
			 "blr %[fn]\n\t"
			 "mov x8, %[nr_exit]\n\t"
			 "svc #0\n\t"
			 "brk #0x3e8\n\t"
			 "1:\n\t"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4),
			   [fn] "r"(fn), [arg] "r"(arg), [nr_exit] "i"(SYS_exit)
			 : "memory", "cc");
	return x0;
}
#endif

/* se_clone_quietly clones with every signal blocked in this thread (the
 * child inherits the mask): no signal may reach a child that still shares
 * our handlers and memory; clone3 clears the handlers in it. */
static long se_clone_quietly(struct se_clone_args *args, int fallback, int (*fn)(void *), void *arg, int *clone3)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	long pid = se_clone(args, fallback, fn, arg, clone3);
	pthread_sigmask(SIG_SETMASK, &old, 0);
	return pid;
}

/* se_save_affinity keeps, for an init, the CPU affinity it is about to be
 * cloned with (the caller's) when that allows more than one CPU: the
 * mask se_nudge_init narrows and the init restores. Anything the kernel
 * will not give (a mask over 1024 CPUs, say) leaves the init as cloned. */
static void se_save_affinity(struct se_req *r)
{
	if (!r->init)
		return;
	struct se_init *g = r->init;
	g->affinity_len = 0;
	g->nudged = 0;
	long n = SYS3(SYS_sched_getaffinity, 0, sizeof g->affinity, g->affinity);
	int cpus = 0;
	for (long i = 0; n > 0 && i < n / (long)sizeof g->affinity[0]; i++)
		cpus += __builtin_popcountl(g->affinity[i]);
	if (cpus > 1)
		g->affinity_len = n;
}

/* se_nudge_init narrows a just-cloned init's affinity to the CPUs
 * other than the one this thread runs on, so that it starts on another CPU
 * at once, making its namespaces while this thread makes the rest. A
 * scheduler may place a new child on its parent's CPU even with another
 * idle (one that packs tasks onto few vCPUs, as a Firecracker guest's did
 * here); the init then waited for this thread to block before it ran at
 * all, half a millisecond and more. The init restores the mask it was
 * cloned with at its first go (se_wait_ops), which this thread sends only
 * after this: the program and the init's later steps have the caller's
 * mask. A failure here changes nothing and is not an error. */
static void se_nudge_init(struct se_req *r, long pid)
{
	struct se_init *g = r->init;
	if (!g || g->affinity_len <= 0)
		return;
	unsigned cpu = 0;
	if (SYS3(SYS_getcpu, &cpu, 0, 0) != 0 || cpu >= 8 * (unsigned)g->affinity_len)
		return;
	unsigned long others[sizeof g->affinity / sizeof g->affinity[0]];
	memcpy(others, g->affinity, sizeof others);
	const unsigned bits = 8 * sizeof others[0];
	others[cpu / bits] &= ~(1UL << (cpu % bits));
	if (SYS3(SYS_sched_setaffinity, pid, g->affinity_len, others) == 0)
		g->nudged = 1;
}

/* se_child_args are the clone arguments of the child: on the init's stack
 * (an init lives on after se_spawn and says with a pipe, not CLONE_VFORK,
 * when the program runs), into the v2 cgroup unless an init's program is
 * born there instead, and telling a guardian its pid. */
static void se_child_args(struct se_req *r, struct se_clone_args *args, int *pidfd)
{
	void *stack = r->init ? r->init->stack : r->stack;
	size_t stack_size = r->init ? r->init->stack_size : r->stack_size;
	uintptr_t top = ((uintptr_t)stack + stack_size) & ~(uintptr_t)15;
	memset(args, 0, sizeof *args);
	args->flags = CLONE_VM | (r->init ? 0 : CLONE_VFORK) | SE_CLONE_CLEAR_SIGHAND | SE_CLONE_PIDFD |
		      (r->init ? r->ns_flags & SE_INIT_CLONE_NS : r->ns_flags);
	args->pidfd = (uint64_t)(uintptr_t)pidfd;
	args->exit_signal = SIGCHLD;
	args->stack = (uint64_t)(uintptr_t)stack;
	args->stack_size = (uint64_t)(top - (uintptr_t)stack);
	if (r->cgroup_fd >= 0 && !r->init) {
		args->flags |= SE_CLONE_INTO_CGROUP;
		args->cgroup = (uint64_t)r->cgroup_fd;
	}
	if (r->parent_tid) {
		args->flags |= CLONE_PARENT_SETTID;
		args->parent_tid = (uint64_t)(uintptr_t)r->parent_tid;
	}
}

long se_spawn_start(struct se_req *r)
{
	int ready[2] = {-1, -1}, go[2] = {-1, -1};
	struct se_clone_args args;

	r->fail_step = SE_STEP_NONE;
	r->fail_index = 0;
	r->fail_errno = 0;
	r->parent_pid = getpid();
	r->pidfd = -1;
	r->go_r = r->go_w = r->ready_r = -1;
	if (r->init) {
		if (pipe2(ready, O_CLOEXEC) < 0)
			return -errno;
		/* A socket, not a pipe: a go sent to an init that already
		 * exited (a failed mount, say) is EPIPE without a SIGPIPE. */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0) {
			int e = errno;
			close(ready[0]);
			close(ready[1]);
			return -e;
		}
		r->init->ready_fd = ready[1];
		r->init->say_stops = r->fg_tty >= 0;
		r->go_r = go[0];
		r->go_w = go[1];
	}
	se_child_args(r, &args, &r->pidfd);
	se_save_affinity(r);
	long pid = se_clone_quietly(&args, r->clone_fallback, se_child, r, &r->used_clone3);
	if (pid > 0)
		se_nudge_init(r, pid);
	if (r->init) {
		close(ready[1]);
		r->ready_r = ready[0];
		if (go[0] >= 0)
			close(go[0]);
	}
	return pid;
}

/* se_send_go sends the go, with the init's cgroup fds (se_recv_go).
 * An error is EPIPE (no SIGPIPE): the init exited, after a failed step. */
static void se_send_go(struct se_req *r)
{
	char c = 'G';
	struct iovec iov = {&c, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * SE_MAX_PASSED)];
	} u;
	struct msghdr m;
	memset(&m, 0, sizeof m);
	memset(&u, 0, sizeof u);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	int fds[SE_MAX_PASSED], n = 0;
	if (r->cgroup_fd >= 0)
		fds[n++] = r->cgroup_fd;
	if (r->procs_fd >= 0)
		fds[n++] = r->procs_fd;
	for (int i = 0; i < r->njoin; i++) {
		if (n == SE_MAX_PASSED)
			return; /* not reached (the runner's SE_MAX_CG): the init fails at EOF */
		fds[n++] = r->join_fds[i];
	}
	if (n) {
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		u.h.cmsg_level = SOL_SOCKET;
		u.h.cmsg_type = SCM_RIGHTS;
		u.h.cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(&u.h), fds, sizeof(int) * (size_t)n);
	}
	while (sendmsg(r->go_w, &m, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

int se_spawn_ops_go(struct se_req *r)
{
	char c = 'O';
	ssize_t n;
	while ((n = send(r->go_w, &c, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n == 1;
}

void se_spawn_finish(struct se_req *r, long pid, int go)
{
	if (r->go_w >= 0) {
		if (go && pid > 0)
			se_send_go(r);
		close(r->go_w); /* not set to -1: the init reads the number */
	}
	if (r->ready_r >= 0) {
		char c = 0;
		ssize_t n = 0;
		if (pid > 0)
			while ((n = read(r->ready_r, &c, 1)) < 0 && errno == EINTR)
				;
		/* The program runs under an init that says when it is done or
		 * stopped: the read end stays open, the caller's to close. */
		if (n == 1 && c == 'R' && r->init && (r->init->say_done || r->init->say_stops))
			return;
		close(r->ready_r);
		r->ready_r = -1;
	}
}

long se_spawn(struct se_req *r)
{
	long pid = se_spawn_start(r);
	se_spawn_finish(r, pid, 1);
	return pid;
}

/* se_init_status reports the program's wait status as the init recorded
 * it; 0 when it has none (the init itself was killed). */
int se_init_status(struct se_init *g, int *status)
{
	if (!g->done)
		return 0;
	*status = g->prog_status;
	return 1;
}

/*
 * The process's state before the Go runtime changes it: Go raises
 * RLIMIT_NOFILE and installs its own signal handlers and mask, and the
 * program must get what the helper got. A constructor runs before the
 * runtime starts (Go links cgo programs externally, through the C start-up).
 * Its priority, 101, runs it before every other constructor of the helper:
 * the recipe key's (recipekey.c, 102) hashes the RLIMIT_NOFILE it records.
 */
static sigset_t se_init_mask;
static int se_init_ignored[64];
static int se_init_nignored;
static struct rlimit se_init_nofile;

/* se_ignored_from_status reads the signals this process ignores (their
 * handler is SIG_IGN) from the SigIgn line of /proc/self/status, which the
 * kernel makes from the same handlers, 32 and 33 included: three system
 * calls instead of one rt_sigaction per signal. 0 when /proc cannot tell
 * (not mounted, say): the caller then asks for each signal. */
static char se_init_status_buf[16 * 1024];
static size_t se_init_status_len;

static int se_ignored_from_status(uint64_t *ign)
{
	char *buf = se_init_status_buf;
	long fd = SYS4(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	long n = SYS3(SYS_read, fd, buf, sizeof se_init_status_buf - 1);
	SYS1(SYS_close, fd);
	if (n <= 0 || n >= (long)sizeof se_init_status_buf - 1)
		return 0;
	buf[n] = 0;
	se_init_status_len = (size_t)n; /* whole: a read that did not fill the buffer */
	const char *p = strstr(buf, "\nSigIgn:\t");
	if (!p)
		return 0;
	p += 9;
	uint64_t v = 0;
	int digits = 0;
	for (; digits < 16; digits++, p++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else
			break;
		v = v << 4 | (uint64_t)d;
	}
	if (digits != 16 || *p != '\n')
		return 0;
	*ign = v;
	return 1;
}

__attribute__((constructor(101))) static void se_capture_initial_state(void)
{
	se_phases_begin();
	sigprocmask(SIG_SETMASK, 0, &se_init_mask);
	uint64_t ign;
	if (se_ignored_from_status(&ign)) {
		for (int s = 1; s < 65; s++)
			if (s != SIGKILL && s != SIGSTOP && (ign >> (s - 1) & 1))
				se_init_ignored[se_init_nignored++] = s;
	} else {
		for (int s = 1; s < 65; s++) {
			if (s == SIGKILL || s == SIGSTOP)
				continue;
			/* The raw call: glibc's sigaction refuses 32 and 33, which
			 * it keeps for itself, and a caller may have ignored them. */
			struct se_kernel_sigaction sa;
			if (SYS4(SYS_rt_sigaction, s, 0, &sa, 8) == 0 && sa.handler == (unsigned long)SIG_IGN && se_init_nignored < 64)
				se_init_ignored[se_init_nignored++] = s;
		}
	}
	getrlimit(RLIMIT_NOFILE, &se_init_nofile);
}

const char *se_initial_status(size_t *len)
{
	*len = se_init_status_len;
	return se_init_status_len ? se_init_status_buf : NULL;
}

void se_initial_state(sigset_t *mask, int *ignored, int max, int *nignored,
		      uint64_t *nofile_cur, uint64_t *nofile_max)
{
	*mask = se_init_mask;
	int n = se_init_nignored < max ? se_init_nignored : max;
	for (int i = 0; i < n; i++)
		ignored[i] = se_init_ignored[i];
	*nignored = n;
	*nofile_cur = se_init_nofile.rlim_cur;
	*nofile_max = se_init_nofile.rlim_max;
}

void se_set_initial_nofile(uint64_t cur, uint64_t max)
{
	se_init_nofile.rlim_cur = (rlim_t)cur;
	se_init_nofile.rlim_max = (rlim_t)max;
}

/*
 * The guardian. It shares the supervisor's memory (CLONE_VM, so starting it
 * costs no page-table copy) but not its file table, leaves the caller's
 * process group and session (a killpg aimed at the supervisor must not take
 * it along), blocks every signal, and waits on a pipe whose write end only
 * the supervisor holds. A 'D' means the run ended cleanly; EOF without it
 * means the supervisor is gone, and the guardian kills what is left in the
 * cgroup and removes it, waits for the supervisor's child to be gone, then
 * removes the placeholders of each lock it can take exclusively and the
 * private temp dir with whatever the program left in it, closes
 * everything, and asks the next run for a sweep of whatever it could not
 * remove. It only applies what
 * Go decided. It touches only its own stack and struct se_guard, both in
 * memory mapped for it and never unmapped, so it may keep running after the
 * supervisor's exit.
 */
static void se_sleep_ms(long ms)
{
	struct { long sec, nsec; } ts = {0, ms * 1000000L};
	SYS2(SYS_nanosleep, &ts, 0);
}

/* signal_pid sends sig to pid, a number read from a cgroup.procs file, and
 * says whether it did. A 0 there is a process of a PID namespace this one
 * cannot see (the kernel lists what it cannot name as 0): no number reaches
 * it, and kill(0) would signal this process's own group, the caller's
 * included. */
static int signal_pid(long pid, int sig)
{
	if (pid <= 0 || pid > INT_MAX)
		return 0;
	SYS2(SYS_kill, pid, sig);
	return 1;
}

/* se_signal_listed sends sig to every pid a cgroup.procs file lists and
 * returns how many it signalled. */
int se_signal_listed(const char *procs, int sig)
{
	char buf[4096];
	long fd = SYS4(SYS_openat, AT_FDCWD, procs, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int found = 0;
	long pid = -1, n; /* -1: no digit since the last number */
	while ((n = SYS3(SYS_read, fd, buf, sizeof buf)) > 0) {
		for (long i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				if (pid < 0)
					pid = 0;
				if (pid <= INT_MAX) /* past it: no pid, and no overflow */
					pid = pid * 10 + (buf[i] - '0');
			} else {
				found += signal_pid(pid, sig);
				pid = -1;
			}
		}
	}
	found += signal_pid(pid, sig);
	SYS1(SYS_close, fd);
	return found;
}

/* se_gone waits until pid has exited, for ms milliseconds at most; it
 * reports whether it has. A pid that no longer exists has. */
static int se_gone(int pid, long ms)
{
	struct pollfd p;
	long fd = SYS2(SE_NR_pidfd_open, pid, 0), n;
	if (fd == -ESRCH)
		return 1;
	if (fd < 0)
		return 0;
	p.fd = (int)fd;
	p.events = POLLIN;
	p.revents = 0;
	struct { long sec, nsec; } limit = {ms / 1000, (ms % 1000) * 1000000L};
	do
		n = SYS5(SYS_ppoll, &p, 1, &limit, 0, 8);
	while (n == -EINTR);
	SYS1(SYS_close, fd);
	return n == 1;
}

/* rmdir and unlink, through unlinkat: aarch64 has no rmdir nor unlink. */
static long se_rmdir(const char *path)
{
	return SYS3(SYS_unlinkat, AT_FDCWD, path, AT_REMOVEDIR);
}

static long se_unlink(const char *path)
{
	return SYS3(SYS_unlinkat, AT_FDCWD, path, 0);
}

int se_ph_matches(const struct se_ph_id *id, const struct stat *st)
{
	return S_ISDIR(st->st_mode) && (uint64_t)st->st_dev == id->dev && (uint64_t)st->st_ino == id->ino &&
	       (int64_t)st->st_ctim.tv_sec == id->ctime_sec && (int64_t)st->st_ctim.tv_nsec == id->ctime_nsec;
}

/* By its one name in the directory the claim took: never by a path, which
 * a program in another run could lead elsewhere meanwhile. System calls
 * only, for the guardian (no libc there). */
void se_remove_placeholder(int dir, const struct se_guard_ph *ph)
{
	struct stat st;
	long ret = SYS4(SYS_newfstatat, dir, ph->name, &st, AT_SYMLINK_NOFOLLOW);
	if (ret < 0 && ret != -ENOENT)
		return;
	if (ret == 0 && se_ph_matches(&ph->id, &st)) {
		ret = SYS3(SYS_unlinkat, dir, ph->name, AT_REMOVEDIR);
		if (ret < 0 && ret != -ENOENT && ret != -ENOTEMPTY)
			return;
	}
	se_unlink(ph->record);
}

/* se_kill_tree ends the cgroup the way Go chose: cgroup.kill when it named
 * one, then SIGKILL for whatever the cgroup.procs files list, every
 * kill_interval_ms for kill_rounds rounds at most (one round when once is
 * set: the runner calls again). It reports whether the cgroups were seen
 * empty. The runner and the guardian both end a tree with it. */
int se_kill_tree(const struct se_guard *g, int once)
{
	int empty = 0;
	if (g->kill_file) {
		long fd = SYS4(SYS_openat, AT_FDCWD, g->kill_file, O_WRONLY | O_CLOEXEC, 0);
		if (fd >= 0) {
			SYS3(SYS_write, fd, "1", 1);
			SYS1(SYS_close, fd);
		}
	}
	int rounds = once ? 1 : g->kill_rounds;
	for (int round = 0; round < rounds && !empty; round++) {
		int found = 0;
		for (int i = 0; i < g->nprocs; i++)
			found += se_signal_listed(g->procs[i], SIGKILL);
		empty = !found;
		if (!empty && !once)
			se_sleep_ms(g->kill_interval_ms);
	}
	return empty || g->nprocs == 0;
}

/* se_guard_kill_tree ends the cgroup and removes its directories. */
static int se_guard_kill_tree(const struct se_guard *g)
{
	int empty = se_kill_tree(g, 0);
	for (int i = 0; i < g->ndirs; i++)
		se_rmdir(g->dirs[i]);
	return empty;
}

/* se_remove_tree removes everything beneath the directory open at top (see
 * se_remove_tmp), depth first without recursion: lv[0] is top, lv[i+1] the
 * subdirectory of lv[i] named lv[i].name. A directory's entries are read
 * again from its start after a pass that removed something (an offset
 * may move when entries go, on a filesystem that numbers them), at most a
 * few times: what a live process keeps making is left. */
static long se_remove_tree(int top, struct se_rm_level *lv)
{
	char buf[2048] __attribute__((aligned(8)));
	struct stat st;
	long err = 0, r;
	if ((r = SYS4(SYS_newfstatat, top, "", &st, AT_EMPTY_PATH)) < 0)
		return r;
	unsigned long long dev = st.st_dev;
	int sp = 0;
	memset(&lv[0], 0, sizeof lv[0]);
	lv[0].fd = top;
	for (;;) {
		struct se_rm_level *l = &lv[sp];
		int down = 0;
		long n = SYS3(SYS_lseek, l->fd, l->resume, SEEK_SET);
		while (n >= 0 && !down && (n = SYS3(SYS_getdents64, l->fd, buf, sizeof buf)) > 0) {
			for (long off = 0; off < n && !down;) {
				/* struct linux_dirent64: ino, off, reclen, type, name */
				long long next;
				unsigned short reclen;
				memcpy(&next, buf + off + 8, sizeof next);
				memcpy(&reclen, buf + off + 16, sizeof reclen);
				const char *name = buf + off + 19;
				off += reclen;
				if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
					continue;
				l->resume = next;
				r = SYS3(SYS_unlinkat, l->fd, name, 0);
				if (r == -EACCES && !l->chmodded) {
					/* A directory of the program's it cannot write in. */
					l->chmodded = 1;
					if (SYS2(SYS_fchmod, l->fd, 0700) == 0)
						r = SYS3(SYS_unlinkat, l->fd, name, 0);
				}
				if (r == -EISDIR) {
					r = SYS3(SYS_unlinkat, l->fd, name, AT_REMOVEDIR);
					if ((r == -ENOTEMPTY || r == -EEXIST) && sp + 1 < SE_RM_DEPTH && strlen(name) < sizeof l->name) {
						long fd = SYS4(SYS_openat, l->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
						if (fd >= 0 && SYS4(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH) == 0 && st.st_dev == dev) {
							strcpy(l->name, name);
							sp++;
							memset(&lv[sp], 0, sizeof lv[sp]);
							lv[sp].fd = (int)fd;
							down = 1;
							continue;
						}
						if (fd >= 0)
							SYS1(SYS_close, fd);
						r = fd < 0 ? fd : -EXDEV;
					}
				}
				if (r == 0)
					l->removed = 1;
				else
					err = r;
			}
		}
		if (down)
			continue;
		if (n < 0)
			err = n;
		if (l->removed && l->passes < 4) {
			l->resume = 0;
			l->removed = 0;
			l->passes++;
			continue;
		}
		if (sp == 0)
			return err;
		SYS1(SYS_close, l->fd);
		l = &lv[--sp];
		r = SYS3(SYS_unlinkat, l->fd, l->name, AT_REMOVEDIR);
		if (r == 0)
			l->removed = 1;
		else
			err = r;
	}
}

long se_remove_tmp(const char *path, int fd, const char *record, struct se_rm_level *levels)
{
	struct stat a, b;
	long ret = se_remove_tree(fd, levels);
	if (ret < 0)
		return ret;
	/* The directory itself, by its path: only while the path still
	 * names the directory the descriptor holds. */
	if ((ret = SYS4(SYS_newfstatat, fd, "", &a, AT_EMPTY_PATH)) < 0)
		return ret;
	ret = SYS4(SYS_newfstatat, AT_FDCWD, path, &b, AT_SYMLINK_NOFOLLOW);
	if (ret == 0 && (a.st_dev != b.st_dev || a.st_ino != b.st_ino))
		return -ESTALE;
	if (ret == 0)
		ret = se_rmdir(path);
	if ((ret == 0 || ret == -ENOENT) && record)
		se_unlink(record);
	return ret == -ENOENT ? 0 : ret;
}

/* se_guard_flock_wait takes the flock on fd exclusively, waiting as long
 * as the runner's lock_wait does; it reports whether it did. */
static int se_guard_flock_wait(int fd)
{
	for (int waited = 0; waited < SE_LOCK_WAIT_MS; waited += 5) {
		long ret = SYS2(SYS_flock, fd, LOCK_EX | LOCK_NB);
		if (ret != -EWOULDBLOCK && ret != -EINTR)
			return ret == 0;
		se_sleep_ms(5);
	}
	return 0;
}

/* se_guard_release removes the placeholders of each lock it can take
 * exclusively (another run still using them leaves them to its own last
 * user), holding the group's decide lock as every removal does (a
 * decision reads a record and its directory under it), and the private
 * temp dirs, with what the program left in them. */
static void se_guard_release(const struct se_guard *g)
{
	for (int i = 0; i < g->nlocks; i++) {
		const struct se_guard_lock *l = &g->locks[i];
		if (SYS2(SYS_flock, l->fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		if (l->nph > 0 && !se_guard_flock_wait(l->decide_fd))
			continue; /* left to the sweep */
		for (int j = 0; j < l->nph; j++)
			se_remove_placeholder(l->parent_fd, &l->ph[j]);
	}
	for (int i = 0; i < g->ntmp_dirs; i++)
		se_remove_tmp(g->tmp_dirs[i].path, g->tmp_dirs[i].fd, g->tmp_dirs[i].record, g->rm_levels);
}

/* se_guard_ask_sweep closes everything (nothing of the run is held from
 * here on, so the sweep finds what is left unlocked) and makes the sweep
 * request. */
static void se_guard_ask_sweep(const struct se_guard *g)
{
	SYS3(SE_NR_close_range, 0, ~0U, 0);
	if (g->sweep_request) {
		long fd = SYS4(SYS_openat, AT_FDCWD, g->sweep_request, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			SYS1(SYS_close, fd);
	}
}

static int se_guard_main(void *arg)
{
	struct se_guard *g = arg;
	char c = 0;
	long n;

	SYS0(SYS_setsid);
	do
		n = SYS3(SYS_read, g->pipe_fd, &c, 1);
	while (n == -EINTR);
	if (n == 1 && c == 'D')
		return 0;
	int gone = se_guard_kill_tree(g);
	/* The program's mounts cover the placeholders for as long as anything
	 * of it runs (it dies with its init, which dies with the supervisor):
	 * nothing is removed before the init is gone, and the locks stay held
	 * until then. */
	if (gone && g->child_pid > 0)
		gone = se_gone(g->child_pid, g->child_wait_ms);
	if (gone)
		se_guard_release(g);
	se_guard_ask_sweep(g);
	return 0;
}

/* The guardian is the caller's child, cloned once, with no exit signal: a
 * "clone" child, which wait4 without __WALL or __WCLONE never waits for, so
 * the supervisor (a child subreaper that knows its tree is gone when it has
 * no child left to reap) does not count it. Should the supervisor die, the
 * kernel reparents it to the caller's reaper (or init) with SIGCHLD as its
 * exit signal, and that reaper reaps it. It first closes every fd but the
 * pipe and the locks (not the caller's stdio, whose readers wait for every
 * copy to close, nor anything else) and says so in g->ready, which the
 * supervisor waits for before it lets go (se_guard_wait_ready), so no copy
 * outlives the run, however late the guardian gets a CPU. */
static int se_guard_start(void *arg)
{
	struct se_guard *g = arg;
	unsigned int next = 0;
	for (int i = 0; i < g->nkeep; i++) {
		unsigned int k = (unsigned int)g->keep_fds[i];
		if (k > next)
			SYS3(SE_NR_close_range, next, k - 1, 0);
		next = k + 1;
	}
	SYS3(SE_NR_close_range, next, ~0U, 0);
	__atomic_store_n(&g->ready, 1, __ATOMIC_RELEASE);
	SYS3(SYS_futex, &g->ready, SE_FUTEX_WAKE, 1);
	return se_guard_main(g);
}

long se_guardian(struct se_guard *g, void *stack, size_t stack_size)
{
	uintptr_t top = ((uintptr_t)stack + stack_size) & ~(uintptr_t)15;
	struct se_clone_args args;
	int clone3;

	memset(&args, 0, sizeof args);
	args.flags = CLONE_VM | SE_CLONE_CLEAR_SIGHAND;
	args.exit_signal = 0;
	args.stack = (uint64_t)(uintptr_t)stack;
	args.stack_size = (uint64_t)(top - (uintptr_t)stack);
	return se_clone_quietly(&args, g->clone_fallback, se_guard_start, g, &clone3);
}

/* se_guard_wait_ready waits, for ready_wait_ms at most, until the guardian
 * has closed the fds it does not keep; it reports whether it has. */
int se_guard_wait_ready(struct se_guard *g)
{
	for (int i = 0; i < g->ready_wait_ms; i++) {
		if (__atomic_load_n(&g->ready, __ATOMIC_ACQUIRE))
			return 1;
		struct { long sec, nsec; } ts = {0, 1000000L};
		SYS4(SYS_futex, &g->ready, SE_FUTEX_WAIT, 0, &ts);
	}
	return __atomic_load_n(&g->ready, __ATOMIC_ACQUIRE) != 0;
}

void *se_guard_alloc(size_t size)
{
	void *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? 0 : p;
}

