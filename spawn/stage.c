/*
 * The spawn stage. See stage.h for the rules this code lives by.
 */
#define _GNU_SOURCE
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
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
#define SE_PR_SET_DUMPABLE 4
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

static __attribute__((noreturn)) void se_fail(struct se_req *r, int step, int index, long err)
{
	r->fail_index = index;
	r->fail_errno = (int)-err;
	r->fail_step = step;
	se_exit(step == SE_STEP_EXEC ? (err == -ENOENT || err == -ENOTDIR ? 127 : 126) : 125);
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

/* se_lo_up sets IFF_UP on "lo" in the current network namespace. */
static long se_lo_up(void)
{
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

/* se_listen_send makes a listening TCP socket on 127.0.0.1:port in the
 * current network namespace (a socket keeps the namespace it was made in)
 * and sends it to the supervisor over the unix socket fd. */
static long se_listen_send(int fd, unsigned short port)
{
	struct sockaddr_in sin;
	int one = 1;
	long s = SYS3(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;
	if (s < 0)
		return s;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = (unsigned short)((port << 8) | (port >> 8));
	sin.sin_addr.s_addr = 0x0100007f; /* 127.0.0.1, network order on little-endian */
	ret = SYS5(SYS_setsockopt, s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ret >= 0)
		ret = SYS3(SYS_bind, s, &sin, sizeof sin);
	if (ret >= 0)
		ret = SYS2(SYS_listen, s, 512);
	if (ret >= 0)
		ret = se_send_fd(fd, (int)s);
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

/* se_place puts the process in its cgroups (the v1 joins, and the v2 one
 * when it was not born there) and then makes the late namespaces (a cgroup
 * namespace is rooted where the process is when it is made). */
static void se_place(struct se_req *r, int join_v2)
{
	long ret;
	if (join_v2) {
		ret = SYS3(SYS_write, r->procs_fd, "0", 1);
		if (ret < 0)
			se_fail(r, SE_STEP_CGROUP, -1, ret);
	}
	for (int i = 0; i < r->njoin; i++) {
		ret = SYS3(SYS_write, r->join_fds[i], "0", 1);
		if (ret < 0)
			se_fail(r, SE_STEP_CGROUP, i, ret);
	}
	if (r->unshare_flags) {
		ret = SYS1(SYS_unshare, r->unshare_flags);
		if (ret < 0)
			se_fail(r, SE_STEP_UNSHARE, 0, ret);
	}
}

#define SE_MOUNT_ATTR_RDONLY 0x1
#define SE_MS_RDONLY 0x1
#define SE_MS_NOSUID 0x2
#define SE_MS_NODEV 0x4
#define SE_MS_NOEXEC 0x8
#define SE_MS_REMOUNT 0x20
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
	long ret = SYS4(SYS_openat, AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC, 0);
	if (ret < 0)
		goto out;
	long fd = ret;
	size_t len = 0;
	for (;;) {
		ret = SYS3(SYS_read, fd, buf + len, cap - 1 - len);
		if (ret <= 0)
			break;
		len += (size_t)ret;
		if (len == cap - 1) {
			ret = -E2BIG;
			break;
		}
	}
	SYS1(SYS_close, fd);
	if (ret < 0)
		goto out;
	buf[len] = 0;
	for (char *line = buf; *line;) {
		char *end = strchr(line, '\n');
		if (end)
			*end = 0;
		/* id parent major:minor root mountpoint options ... */
		char *f[6] = {0};
		char *c = line;
		for (int i = 0; i < 6 && *c; i++) {
			f[i] = c;
			while (*c && *c != ' ')
				c++;
			if (*c)
				*c++ = 0;
		}
		line = end ? end + 1 : line + strlen(line);
		if (!f[5])
			continue;
		/* Undo mountinfo's octal escapes (\040 for a space). */
		char *w = f[4];
		for (char *r = f[4]; *r; w++) {
			if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
				*w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
				r += 4;
			} else {
				*w = *r++;
			}
		}
		*w = 0;
		if (!se_beneath(f[4], top, recursive))
			continue;
		unsigned long flags = SE_MS_BIND | SE_MS_REMOUNT | SE_MS_RDONLY;
		int atime = 0; /* mountinfo shows no atime option for strictatime */
		for (char *o = f[5]; *o;) {
			char *comma = strchr(o, ',');
			size_t n = comma ? (size_t)(comma - o) : strlen(o);
			if (n == 6 && !strncmp(o, "nosuid", n))
				flags |= SE_MS_NOSUID;
			else if (n == 5 && !strncmp(o, "nodev", n))
				flags |= SE_MS_NODEV;
			else if (n == 6 && !strncmp(o, "noexec", n))
				flags |= SE_MS_NOEXEC;
			else if (n == 7 && !strncmp(o, "noatime", n))
				flags |= SE_MS_NOATIME, atime = 1;
			else if (n == 10 && !strncmp(o, "nodiratime", n))
				flags |= SE_MS_NODIRATIME;
			else if (n == 8 && !strncmp(o, "relatime", n))
				flags |= SE_MS_RELATIME, atime = 1;
			o += n + (comma ? 1 : 0);
		}
		/* A remount without an atime flag means relatime, which a user
		 * namespace may not set on a strictatime mount (locked). */
		if (!atime)
			flags |= SE_MS_STRICTATIME;
		ret = SYS5(SYS_mount, 0, f[4], 0, flags, 0);
		/* A mount point another mount hides, or one gone since
		 * mountinfo was read, cannot be reached by its path: what is
		 * there (the mount on top) is remounted by its own line. One
		 * beneath a directory this uid may not search (EACCES: a
		 * root-owned 0700 directory, for an unprivileged user) cannot
		 * be reached by the program either, which runs as the same uid
		 * with no capability and cannot change that directory's mode. */
		if (ret == -ENOENT || ret == -EACCES)
			ret = 0;
		if (ret < 0)
			goto out;
	}
	ret = 0;
out:
	if (!((long)buf < 0 && (long)buf > -4096))
		SYS2(SYS_munmap, buf, cap);
	return ret;
}

/* se_setup runs the namespace and mount operations and sets the rlimits. */
static void se_setup(struct se_req *r)
{
	long ret;
	int i;

	for (i = 0; i < r->nops; i++) {
		const struct se_op *op = &r->ops[i];
		switch (op->kind) {
		case SE_OP_MOUNT:
			ret = SYS5(SYS_mount, op->a, op->b, op->c, op->flags, op->d);
			break;
		case SE_OP_WRITE: {
			long fd = SYS4(SYS_openat, AT_FDCWD, op->a, O_WRONLY | O_CLOEXEC, 0);
			ret = fd;
			if (fd >= 0) {
				size_t len = op->b ? strlen(op->b) : 0;
				ret = SYS3(SYS_write, fd, op->b, len);
				if (ret >= 0 && (size_t)ret != len)
					ret = -EIO;
				SYS1(SYS_close, fd);
			}
			break;
		}
		case SE_OP_CHDIR:
			ret = SYS1(SYS_chdir, op->a);
			break;
		case SE_OP_SETATTR: {
			struct se_mount_attr ma = {0};
			ma.attr_set = op->flags;
			ret = SYS5(SE_NR_mount_setattr, AT_FDCWD, op->a, op->fd ? SE_AT_RECURSIVE : 0, &ma, sizeof ma);
			if (ret == -ENOSYS && op->flags == SE_MOUNT_ATTR_RDONLY)
				ret = se_remount_ro(op->a, op->fd); /* before 5.12 */
			break;
		}
		case SE_OP_OPEN_TREE:
			ret = -EINVAL;
			if (op->fd >= 0 && op->fd < SE_MAX_SLOTS) {
				ret = SYS3(SE_NR_open_tree, AT_FDCWD, op->a, SE_OPEN_TREE_CLONE | SE_AT_RECURSIVE | O_CLOEXEC);
				if (ret >= 0)
					r->slots[op->fd] = (int)ret;
			}
			break;
		case SE_OP_MOVE_MOUNT:
			ret = -EINVAL;
			if (op->fd >= 0 && op->fd < SE_MAX_SLOTS)
				ret = SYS5(SE_NR_move_mount, r->slots[op->fd], "", AT_FDCWD, op->a, SE_MOVE_MOUNT_F_EMPTY_PATH);
			break;
		case SE_OP_LO_UP:
			ret = se_lo_up();
			break;
		case SE_OP_LISTEN_SEND:
			ret = se_listen_send(op->fd, (unsigned short)op->flags);
			break;
		case SE_OP_MKDIR:
			ret = SYS3(SYS_mkdirat, AT_FDCWD, op->a, op->flags);
			break;
		case SE_OP_CREATE:
			ret = SYS4(SYS_openat, AT_FDCWD, op->a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, op->flags);
			if (ret >= 0)
				ret = SYS1(SYS_close, ret);
			break;
		case SE_OP_SYMLINK:
			ret = SYS3(SYS_symlinkat, op->a, AT_FDCWD, op->b);
			break;
		case SE_OP_LANDLOCK_RULE: {
			struct __attribute__((packed)) {
				uint64_t allowed_access;
				int32_t parent_fd;
			} attr;
			long fd = SYS4(SYS_openat, AT_FDCWD, op->a, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
			ret = fd;
			if (fd == -ENOENT || fd == -ENOTDIR) {
				ret = 0; /* not granting is the safe side */
			} else if (fd >= 0) {
				attr.allowed_access = op->flags;
				attr.parent_fd = (int32_t)fd;
				ret = SYS4(SE_NR_landlock_add_rule, r->ruleset_fd, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &attr, 0);
				SYS1(SYS_close, fd);
			}
			break;
		}
		default:
			ret = -EINVAL;
		}
		if (ret < 0)
			se_fail(r, SE_STEP_OP, i, ret);
	}

	for (i = 0; i < r->nrlimits; i++) {
		const struct se_rlimit *l = &r->rlimits[i];
		uint64_t v[2] = {l->cur, l->max};
		ret = SYS4(SYS_prlimit64, 0, l->resource, v, 0);
		if (ret < 0)
			se_fail(r, SE_STEP_RLIMIT, i, ret);
	}
}

/* se_program runs the program's own steps and execs it: fds, capabilities
 * (unless an init dropped them already), no_new_privs, Landlock, seccomp,
 * the signal state. clone3 says whether the clone that made this process
 * cleared the signal handlers. */
static __attribute__((noreturn)) void se_program(struct se_req *r, int clone3, int drop_caps)
{
	long ret;
	int i;

	if (r->init && r->fg_tty >= 0) {
		int pgrp = (int)SYS0(SYS_getpid);
		ret = SYS2(SYS_setpgid, 0, 0);
		if (ret >= 0)
			ret = SYS3(SYS_ioctl, r->fg_tty, TIOCSPGRP, &pgrp);
		if (ret < 0)
			se_fail(r, SE_STEP_SIGNALS, -2, ret);
	}

	/* Every fd above 2 closes at exec, except the ones kept on purpose: an
	 * fd opened before Landlock is not restricted by it. */
	ret = SYS3(SE_NR_close_range, 3, ~0U, SE_CLOSE_RANGE_CLOEXEC);
	if (ret == -EINVAL || ret == -ENOSYS)
		ret = se_cloexec_from(3); /* before 5.11 */
	if (ret < 0)
		se_fail(r, SE_STEP_FDS, -1, ret);
	for (i = 0; i < r->nkeep; i++) {
		ret = SYS3(SYS_fcntl, r->keep_fds[i], F_SETFD, 0);
		if (ret < 0)
			se_fail(r, SE_STEP_FDS, i, ret);
	}

	if (drop_caps) {
		int which;
		ret = se_drop_caps(&which);
		if (ret < 0)
			se_fail(r, SE_STEP_CAPS, which, ret);
	}

	ret = SYS5(SYS_prctl, SE_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (ret < 0)
		se_fail(r, SE_STEP_NNP, 0, ret);

	if (r->ruleset_fd >= 0) {
		ret = SYS2(SE_NR_landlock_restrict_self, r->ruleset_fd, r->ruleset_flags);
		if (ret < 0)
			se_fail(r, SE_STEP_LANDLOCK, 0, ret);
	}

	if (r->bpf_len > 0) {
		struct se_sock_fprog prog = {r->bpf_len, r->bpf};
		unsigned int flags = 0;
		if (r->notify_sock >= 0)
			flags |= SE_SECCOMP_FILTER_FLAG_NEW_LISTENER;
		if (r->notify_sock >= 0 && r->notify_killable) {
			ret = SYS3(SYS_seccomp, SE_SECCOMP_SET_MODE_FILTER, flags | SE_SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
			if (ret == -EINVAL) /* before 5.19 */
				ret = SYS3(SYS_seccomp, SE_SECCOMP_SET_MODE_FILTER, flags, &prog);
		} else {
			ret = SYS3(SYS_seccomp, SE_SECCOMP_SET_MODE_FILTER, flags, &prog);
		}
		if (ret < 0)
			se_fail(r, SE_STEP_SECCOMP, 0, ret);
		if (r->notify_sock >= 0 && r->init) {
			/* Close-on-exec: gone from the program's own table at its
			 * exec; the init sends the copy it keeps (se_init_main). */
			r->listener_fd = (int)ret;
		} else if (r->notify_sock >= 0) {
			long listener = ret;
			ret = se_send_fd(r->notify_sock, (int)listener);
			SYS1(SYS_close, listener);
			if (ret < 0)
				se_fail(r, SE_STEP_SECCOMP, 1, ret);
		}
	}

	/* Signal dispositions as the helper found them. clone3 cleared every
	 * handler; the legacy clone did not, so reset them here. */
	if (!clone3) {
		struct se_kernel_sigaction dfl = {0};
		for (int s = 1; s <= 64; s++)
			if (s != SIGKILL && s != SIGSTOP)
				SYS4(SYS_rt_sigaction, s, &dfl, 0, 8);
	}
	for (i = 0; i < r->nignored; i++) {
		struct se_kernel_sigaction ign = {.handler = (unsigned long)SIG_IGN};
		ret = SYS4(SYS_rt_sigaction, r->ignored[i], &ign, 0, 8);
		if (ret < 0)
			se_fail(r, SE_STEP_SIGNALS, i, ret);
	}
	ret = SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &r->mask, 0, 8);
	if (ret < 0)
		se_fail(r, SE_STEP_SIGNALS, -1, ret);

	int which = 0;
	ret = se_exec(r, &which);
	se_fail(r, SE_STEP_EXEC, which, ret);
}

static long se_clone_call(long nr, long a, long b, long c, long d, long e,
			  int (*fn)(void *), void *arg);

/* se_program_main is the program's process under an init: it joins its
 * cgroups (born into the v2 one where clone3 could do that), makes the
 * late namespaces, drops every capability, and goes on as any program. */
static int se_program_main(void *arg)
{
	struct se_req *r = arg;
	long ret;
	int which;

	se_place(r, r->procs_fd >= 0 && !(r->prog_clone3 && r->cgroup_fd >= 0));
	if (r->drop_caps) {
		ret = se_drop_caps(&which);
		if (ret < 0)
			se_fail(r, SE_STEP_CAPS, which, ret);
	}
	se_program(r, r->prog_clone3, 0);
}

/* se_init_main is PID 1 of the program's PID namespace: see struct
 * se_init. */
static int se_init_main(struct se_req *r)
{
	struct se_init *g = r->init;
	long ret, pid;

	/* Tied to the supervisor's creating thread: should the supervisor die,
	 * the init dies, and with it the whole namespace. A supervisor that
	 * died before this took effect is seen below: the write to the ready
	 * pipe, whose only reader it is, fails. */
	ret = SYS2(SYS_prctl, SE_PR_SET_PDEATHSIG, SIGKILL);
	if (ret < 0)
		se_fail(r, SE_STEP_PDEATHSIG, 0, ret);
	se_setup(r);
	/* This process shares the supervisor's memory: nothing in the
	 * namespace may read it through /proc (after the id maps, which a
	 * non-dumpable process can no longer write). */
	SYS2(SYS_prctl, SE_PR_SET_DUMPABLE, 0);

	/* The program, as PID 2, on the request's stack, born into the run's
	 * cgroup: this process stays in the supervisor's, so that an OOM kill
	 * in the run's group never picks it (the kernel kills every process
	 * sharing a victim's memory, and this one shares the supervisor's).
	 * It waits (CLONE_VFORK) until the program has execed or failed. With
	 * a seccomp listener to pass on, the program shares this process's
	 * file table until its exec (which unshares it), so that the listener
	 * it makes stays here. */
	uintptr_t top = ((uintptr_t)r->stack + r->stack_size) & ~(uintptr_t)15;
	unsigned long files = r->notify_sock >= 0 ? CLONE_FILES : 0;
	struct se_clone_args args;
	memset(&args, 0, sizeof args);
	r->listener_fd = -1;
	args.flags = CLONE_VM | CLONE_VFORK | SE_CLONE_CLEAR_SIGHAND | files;
	args.exit_signal = SIGCHLD;
	args.stack = (uint64_t)(uintptr_t)r->stack;
	args.stack_size = (uint64_t)(top - (uintptr_t)r->stack);
	if (r->cgroup_fd >= 0) {
		args.flags |= SE_CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)r->cgroup_fd;
	}
	r->prog_clone3 = 1;
	pid = se_clone_call(SE_NR_clone3, (long)&args, sizeof args, 0, 0, 0, se_program_main, r);
	if (pid == -ENOSYS && (r->cgroup_fd < 0 || r->procs_fd >= 0)) {
		/* No clone3: the program joins through cgroup.procs. */
		r->prog_clone3 = 0;
		pid = se_clone_call(SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD | files, (long)top, 0, 0, 0, se_program_main, r);
	}
	if (pid < 0)
		se_fail(r, SE_STEP_INIT, 0, pid);
	if (r->fail_step != SE_STEP_NONE)
		se_exit(125); /* the program's steps failed; it has exited */
	if (r->drop_caps) {
		int which;
		ret = se_drop_caps(&which);
		if (ret < 0) {
			SYS2(SYS_kill, pid, SIGKILL);
			se_fail(r, SE_STEP_CAPS, which, ret);
		}
	}
	if (r->notify_sock >= 0) {
		/* Sent before the ready byte, so the supervisor finds it as
		 * soon as se_spawn returns. Should this fail, the supervisor
		 * finds nothing and ends the run. */
		if (r->listener_fd >= 0)
			se_send_fd(r->notify_sock, r->listener_fd);
	}
	g->prog_pid = (int)pid;
	g->prog_group = r->fg_tty >= 0;
	/* Out of the caller's process group, which the program stays in: a
	 * signal sent to the group (a terminal's Ctrl-C, the caller's killpg)
	 * reaches the program once, not again through this process. */
	SYS2(SYS_setpgid, 0, 0);

	char c = 'R';
	int fd = g->ready_fd;
	ret = SYS3(SYS_write, fd, &c, 1);
	if (ret != 1)
		se_exit(125); /* the supervisor is gone */
	/* From here on the request is freed: only g and this stack. Nothing
	 * of the supervisor's stays open here. */
	SYS3(SE_NR_close_range, 0, ~0U, 0);

	uint64_t all = ~0ULL;
	for (;;) {
		siginfo_t si;
		long sig = SYS4(SYS_rt_sigtimedwait, &all, &si, 0, 8);
		if (sig < 0)
			continue;
		if (sig == SIGCHLD) {
			for (;;) {
				int st = 0;
				long w = SYS4(SYS_wait4, -1, &st, WNOHANG | __WALL, 0);
				if (w <= 0)
					break;
				if (w == g->prog_pid) {
					g->prog_status = st;
					g->done = 1;
					se_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
				}
			}
			continue;
		}
		/* Only what the supervisor (outside the namespace, so si_pid 0)
		 * sends is passed on. */
		if (si.si_pid == 0)
			SYS2(SYS_kill, g->prog_group ? -g->prog_pid : g->prog_pid, sig);
	}
}

static int se_child(void *arg)
{
	struct se_req *r = arg;
	long ret;

	if (r->init)
		return se_init_main(r);

	/* Placement first: nothing may run or fork outside the cgroups. */
	se_place(r, 0);
	se_setup(r);
	if (r->trial)
		se_exit(0);
	if (r->pdeathsig) {
		ret = SYS2(SYS_prctl, SE_PR_SET_PDEATHSIG, r->pdeathsig);
		if (ret < 0)
			se_fail(r, SE_STEP_PDEATHSIG, 0, ret);
		/* The supervisor may have died before the prctl took effect. */
		if (SYS0(SYS_getppid) != r->parent_pid)
			se_fail(r, SE_STEP_PDEATHSIG, 1, -ESRCH);
	}
	se_program(r, r->used_clone3, r->drop_caps);
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

long se_spawn(struct se_req *r)
{
	sigset_t all, old;
	long pid;
	int pidfd = -1;
	int ready[2] = {-1, -1};
	void *stack = r->stack;
	size_t stack_size = r->stack_size;
	uint64_t wait_flag = CLONE_VFORK;

	r->fail_step = SE_STEP_NONE;
	r->fail_index = 0;
	r->fail_errno = 0;
	r->parent_pid = getpid();
	if (r->init) {
		/* The init lives on after this call, on its own stack; a pipe
		 * instead of CLONE_VFORK says when the program runs. */
		if (pipe2(ready, O_CLOEXEC) < 0)
			return -errno;
		r->init->ready_fd = ready[1];
		stack = r->init->stack;
		stack_size = r->init->stack_size;
		wait_flag = 0;
	}
	uintptr_t top = ((uintptr_t)stack + stack_size) & ~(uintptr_t)15;

	/* No signal may reach the child while it still shares our handlers
	 * and memory: block everything in this thread (the child inherits the
	 * mask) and clear the handlers in the child. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);

	struct se_clone_args args;
	memset(&args, 0, sizeof args);
	args.flags = CLONE_VM | wait_flag | SE_CLONE_CLEAR_SIGHAND | SE_CLONE_PIDFD | r->ns_flags;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	args.exit_signal = SIGCHLD;
	args.stack = (uint64_t)(uintptr_t)stack;
	args.stack_size = (uint64_t)(top - (uintptr_t)stack);
	if (r->cgroup_fd >= 0 && !r->init) { /* an init's program is born there */
		args.flags |= SE_CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)r->cgroup_fd;
	}
	unsigned long settid = 0;
	if (r->parent_tid) {
		settid = CLONE_PARENT_SETTID;
		args.flags |= CLONE_PARENT_SETTID;
		args.parent_tid = (uint64_t)(uintptr_t)r->parent_tid;
	}
	r->used_clone3 = 1;
	pid = se_clone_call(SE_NR_clone3, (long)&args, sizeof args, 0, 0, 0, se_child, r);
	if (pid == -ENOSYS && (r->cgroup_fd < 0 || r->init)) {
		/* No clone3 (an old kernel, or a container's seccomp filter):
		 * the legacy call, with the handlers reset by the child.
		 * Argument order: flags, stack, parent_tid, then child_tid and
		 * tls on x86_64 but tls and child_tid on aarch64; both last two
		 * are 0 here, so one call serves both. */
		r->used_clone3 = 0;
		pid = se_clone_call(SYS_clone, CLONE_VM | (long)wait_flag | SIGCHLD | (long)r->ns_flags | (long)settid,
				    (long)top, (long)r->parent_tid, 0, 0, se_child, r);
	}
	pthread_sigmask(SIG_SETMASK, &old, 0);
	if (r->init) {
		close(ready[1]);
		if (pid > 0) {
			/* 'R' once the program runs; EOF when the init exited
			 * first, after a failed step. */
			char c;
			while (read(ready[0], &c, 1) < 0 && errno == EINTR)
				;
		}
		close(ready[0]);
	}
	r->pidfd = pidfd;
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
 */
static sigset_t se_init_mask;
static int se_init_ignored[64];
static int se_init_nignored;
static struct rlimit se_init_nofile;

__attribute__((constructor)) static void se_capture_initial_state(void)
{
	sigprocmask(SIG_SETMASK, 0, &se_init_mask);
	for (int s = 1; s < 65; s++) {
		if (s == SIGKILL || s == SIGSTOP)
			continue;
		/* The raw call: glibc's sigaction refuses 32 and 33, which it
		 * keeps for itself, and a caller may have ignored them. */
		struct se_kernel_sigaction sa;
		if (SYS4(SYS_rt_sigaction, s, 0, &sa, 8) == 0 && sa.handler == (unsigned long)SIG_IGN && se_init_nignored < 64)
			se_init_ignored[se_init_nignored++] = s;
	}
	getrlimit(RLIMIT_NOFILE, &se_init_nofile);
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

/*
 * The guardian. It shares the supervisor's memory (CLONE_VM, so starting it
 * costs no page-table copy) but not its file table, leaves the caller's
 * process group and session (a killpg aimed at the supervisor must not take
 * it along), blocks every signal, and waits on a pipe whose write end only
 * the supervisor holds. A 'D' means the run ended cleanly; EOF without it
 * means the supervisor is gone, and the guardian kills what is left in the
 * cgroup and removes it, waits for the supervisor's child to be gone, then
 * removes the placeholders of each lock it can take exclusively and the
 * empty private temp dir, closes everything, and asks the next run for a
 * sweep of whatever it could not remove. It only applies what
 * Go decided. It touches only its own stack and struct se_guard, both in
 * memory mapped for it and never unmapped, so it may keep running after the
 * supervisor's exit.
 */
static void se_sleep_ms(long ms)
{
	struct { long sec, nsec; } ts = {0, ms * 1000000L};
	SYS2(SYS_nanosleep, &ts, 0);
}

/* se_kill_listed SIGKILLs every pid in a cgroup.procs file; returns how
 * many it found. */
static int se_kill_listed(const char *procs)
{
	char buf[4096];
	long fd = SYS4(SYS_openat, AT_FDCWD, procs, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int found = 0;
	long pid = 0, n;
	int have = 0;
	while ((n = SYS3(SYS_read, fd, buf, sizeof buf)) > 0) {
		for (long i = 0; i < n; i++) {
			char c = buf[i];
			if (c >= '0' && c <= '9') {
				pid = pid * 10 + (c - '0');
				have = 1;
			} else if (have) {
				SYS2(SYS_kill, pid, SIGKILL);
				found++;
				pid = 0;
				have = 0;
			}
		}
	}
	if (have) {
		SYS2(SYS_kill, pid, SIGKILL);
		found++;
	}
	SYS1(SYS_close, fd);
	return found;
}

/* se_gone waits until pid has exited, for ten seconds at most; it reports
 * whether it has. A pid that no longer exists has. */
static int se_gone(int pid)
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
	struct { long sec, nsec; } limit = {10, 0};
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

/* se_remove_placeholder removes ph if it is still the directory recorded,
 * and drops its record unless the directory is still there and ours. */
static void se_remove_placeholder(const struct se_guard_ph *ph)
{
	struct stat st;
	long ret = SYS4(SYS_newfstatat, AT_FDCWD, ph->path, &st, AT_SYMLINK_NOFOLLOW);
	if (ret < 0 && ret != -ENOENT)
		return;
	if (ret == 0 && S_ISDIR(st.st_mode) && st.st_dev == ph->dev && st.st_ino == ph->ino &&
	    st.st_ctim.tv_sec == ph->ctime_sec && st.st_ctim.tv_nsec == ph->ctime_nsec) {
		ret = se_rmdir(ph->path);
		if (ret < 0 && ret != -ENOENT && ret != -ENOTEMPTY)
			return;
	}
	se_unlink(ph->record);
}

static int se_guard_main(void *arg)
{
	struct se_guard *g = arg;
	char c = 0;
	long n;
	int gone = 1;

	SYS0(SYS_setsid);
	do
		n = SYS3(SYS_read, g->pipe_fd, &c, 1);
	while (n == -EINTR);
	if (n == 1 && c == 'D')
		return 0;

	if (g->kill_file) {
		long fd = SYS4(SYS_openat, AT_FDCWD, g->kill_file, O_WRONLY | O_CLOEXEC, 0);
		if (fd >= 0) {
			SYS3(SYS_write, fd, "1", 1);
			SYS1(SYS_close, fd);
		}
	}
	/* Until every cgroup is empty, for ten seconds at most. */
	for (int round = 0; round < 500; round++) {
		int found = 0;
		for (int i = 0; i < g->nprocs; i++)
			found += se_kill_listed(g->procs[i]);
		if (!found)
			break;
		if (round == 499)
			gone = 0;
		se_sleep_ms(20);
	}
	for (int i = 0; i < g->ndirs; i++)
		se_rmdir(g->dirs[i]);

	/* The program's mounts cover the placeholders for as long as anything
	 * of it runs (it dies with its init, which dies with the supervisor):
	 * nothing is removed before the init is gone, and the locks stay held
	 * until then. */
	if (gone && g->child_pid > 0)
		gone = se_gone(g->child_pid);
	if (gone) {
		for (int i = 0; i < g->nlocks; i++) {
			const struct se_guard_lock *l = &g->locks[i];
			if (SYS2(SYS_flock, l->fd, LOCK_EX | LOCK_NB) < 0)
				continue; /* another run still uses them: its last user removes them */
			for (int j = 0; j < l->nph; j++)
				se_remove_placeholder(&l->ph[j]);
		}
		for (int i = 0; i < g->nempty_dirs; i++) {
			long ret = se_rmdir(g->empty_dirs[i].path);
			if ((ret == 0 || ret == -ENOENT) && g->empty_dirs[i].record)
				se_unlink(g->empty_dirs[i].record);
		}
	}
	/* Nothing of the run is held from here on, so the sweep asked for
	 * finds what is left unlocked. */
	SYS3(SE_NR_close_range, 0, ~0U, 0);
	if (g->sweep_request) {
		long fd = SYS4(SYS_openat, AT_FDCWD, g->sweep_request, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			SYS1(SYS_close, fd);
	}
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
	sigset_t all, old;
	uintptr_t top = ((uintptr_t)stack + stack_size) & ~(uintptr_t)15;
	struct se_clone_args args;
	long pid;

	/* No signal may reach it while it shares our handlers. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	memset(&args, 0, sizeof args);
	args.flags = CLONE_VM | SE_CLONE_CLEAR_SIGHAND;
	args.exit_signal = 0;
	args.stack = (uint64_t)(uintptr_t)stack;
	args.stack_size = (uint64_t)(top - (uintptr_t)stack);
	pid = se_clone_call(SE_NR_clone3, (long)&args, sizeof args, 0, 0, 0, se_guard_start, g);
	if (pid == -ENOSYS)
		pid = se_clone_call(SYS_clone, CLONE_VM, (long)top, 0, 0, 0, se_guard_start, g);
	pthread_sigmask(SIG_SETMASK, &old, 0);
	return pid;
}

/* se_guard_wait_ready waits, for timeout_ms at most, until the guardian
 * has closed the fds it does not keep; it reports whether it has. */
int se_guard_wait_ready(struct se_guard *g, int timeout_ms)
{
	for (int i = 0; i < timeout_ms; i++) {
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

