/*
 * probe: one small static program the integration tests run inside the
 * sandbox to attempt exactly one operation and say what happened.
 *
 *   probe OP ARGS...
 *
 * It prints "ok" (and any result) or the errno name on stdout, and exits 0 on
 * success, 1 on failure, 2 on misuse. Each operation is one system call (or
 * the smallest sequence that has to go together), so a test sees the kernel's
 * answer, not a tool's interpretation of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <dirent.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char *errname(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EACCES: return "EACCES";
	case EEXIST: return "EEXIST";
	case EXDEV: return "EXDEV";
	case EROFS: return "EROFS";
	case ENOSYS: return "ENOSYS";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ENETUNREACH: return "ENETUNREACH";
	case EFBIG: return "EFBIG";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EBUSY: return "EBUSY";
	case ESRCH: return "ESRCH";
	case EAGAIN: return "EAGAIN";
	case ENOTTY: return "ENOTTY";
	case ENXIO: return "ENXIO";
	case EIO: return "EIO";
	}
	static char buf[32];
	snprintf(buf, sizeof buf, "errno%d", e);
	return buf;
}

static int result(long r)
{
	if (r < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

/* unix_addr fills sun with name (abstract when it starts with '@') and
 * returns the address length to pass. */
static socklen_t unix_addr(struct sockaddr_un *sun, const char *name)
{
	size_t n = strlen(name);
	if (n > sizeof sun->sun_path - 1)
		n = sizeof sun->sun_path - 1;
	memcpy(sun->sun_path, name, n);
	sun->sun_path[n] = 0;
	if (name[0] == '@') {
		sun->sun_path[0] = 0;
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	}
	return sizeof *sun;
}

static int usage(void)
{
	fprintf(stderr, "probe: bad arguments\n");
	return 2;
}

#if defined(__x86_64__)
/* i386 system call through int 0x80: getpid is 20 there. */
static long int80_getpid(void)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
	return ret;
}
#elif defined(__aarch64__)
/*
 * aarch64's foreign architecture is AArch32 (the kernel's compat mode): no
 * instruction reaches it from a 64-bit process, so the probe becomes one.
 * It execs, from a memfd, a 32-bit ARM ELF of eight instructions that
 * write(1, "returned compat32\n") and exit(0) through svc: each is a
 * system call of audit arch ARM. Exits 3 with "unsupported" when this CPU
 * or kernel cannot run AArch32 code at all (ENOEXEC), so a test can tell
 * "nothing to test" from "not killed".
 */
static int exec_compat32(void)
{
	static const char msg[] = "returned compat32\n";
	const uint32_t code[] = {
		0xe3a00001,                      /* mov r0, #1 */
		0xe28f1014,                      /* add r1, pc, #20 (msg) */
		0xe3a02000 | (sizeof msg - 1),   /* mov r2, #len */
		0xe3a07004,                      /* mov r7, #4 (write) */
		0xef000000,                      /* svc #0 */
		0xe3a00000,                      /* mov r0, #0 */
		0xe3a07001,                      /* mov r7, #1 (exit) */
		0xef000000,                      /* svc #0 */
	};
	unsigned char img[52 + 32 + sizeof code + sizeof msg];
	const uint32_t base = 0x10000, size = sizeof img;
	memset(img, 0, sizeof img);
	memcpy(img, "\x7f" "ELF\x01\x01\x01", 7); /* ELFCLASS32, little endian */
	uint16_t h16[] = {2 /* ET_EXEC */, 40 /* EM_ARM */};
	memcpy(img + 16, h16, sizeof h16);
	uint32_t h32[] = {1, base + 52 + 32 /* entry */, 52 /* phoff */, 0, 0x05000000 /* EABI 5 */};
	memcpy(img + 20, h32, sizeof h32);
	uint16_t t16[] = {52, 32, 1, 40, 0, 0}; /* ehsize, phentsize, phnum, shentsize, shnum, shstrndx */
	memcpy(img + 40, t16, sizeof t16);
	uint32_t ph[] = {1 /* PT_LOAD */, 0, base, base, size, size, 5 /* R+X */, 0x1000};
	memcpy(img + 52, ph, sizeof ph);
	memcpy(img + 84, code, sizeof code);
	memcpy(img + 84 + sizeof code, msg, sizeof msg);
	int fd = (int)syscall(SYS_memfd_create, "probe-compat32", 0);
	if (fd < 0 || write(fd, img, sizeof img) != (ssize_t)sizeof img)
		return result(-1);
	char *argv[] = {"compat32", NULL}, *envp[] = {NULL};
	syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	if (errno == ENOEXEC) {
		printf("unsupported\n");
		return 3;
	}
	return result(-1);
}
#endif

/* Run argv[0] as under a container's seccomp filter that answers ENOSYS to
 * clone3 (Docker's default profile without CAP_SYS_ADMIN). */
static int exec_without_clone3(char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return result(-1);
	execv(argv[0], argv);
	return result(-1);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	const char *op = argv[1];
	const char *a = argc > 2 ? argv[2] : NULL;
	const char *b = argc > 3 ? argv[3] : NULL;
	setvbuf(stdout, NULL, _IONBF, 0);

	if (!strcmp(op, "noclone3") && a)
		return exec_without_clone3(argv + 2);

	/* Files. */
	if (!strcmp(op, "create") && a)
		return result(open(a, O_WRONLY | O_CREAT | O_EXCL, 0644));
	if (!strcmp(op, "append") && a)
		return result(open(a, O_WRONLY | O_APPEND));
	if (!strcmp(op, "write") && a) {
		int fd = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return result(-1);
		const char *s = b ? b : "x";
		return result(write(fd, s, strlen(s)));
	}
	if (!strcmp(op, "read") && a) {
		int fd = open(a, O_RDONLY);
		if (fd < 0)
			return result(-1);
		char buf[4096];
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0)
			return result(-1);
		printf("ok ");
		fwrite(buf, 1, (size_t)n, stdout);
		printf("\n");
		return 0;
	}
	if (!strcmp(op, "opens") && a && b) {
		/* Make b new files in directory a as git makes its lock files,
		 * each open giving a new descriptor that writes that file: "ok",
		 * or what the first that did not got. */
		for (int i = 0; i < atoi(b); i++) {
			char path[4096];
			snprintf(path, sizeof path, "%s/opens-%d", a, i);
			int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0) {
				printf("open %d: %s\n", i, errname(errno));
				return 1;
			}
			struct stat byfd, bypath;
			if (fd <= 2 || fstat(fd, &byfd) || stat(path, &bypath) || byfd.st_ino != bypath.st_ino ||
			    byfd.st_dev != bypath.st_dev) {
				printf("open %d: descriptor %d is not the file\n", i, fd);
				return 1;
			}
			if (write(fd, "x", 1) != 1) {
				printf("write %d: %s\n", i, errname(errno));
				return 1;
			}
			close(fd);
			if (unlink(path) < 0) {
				printf("unlink %d: %s\n", i, errname(errno));
				return 1;
			}
		}
		printf("ok\n");
		return 0;
	}
	if (!strcmp(op, "tmpfile") && a) /* an unnamed file in directory a */
		return result(open(a, O_TMPFILE | O_WRONLY, 0600));
	if (!strcmp(op, "opendir") && a)
		return result(open(a, O_RDONLY | O_DIRECTORY));
	if (!strcmp(op, "truncate") && a)
		return result(truncate(a, 0));
	if (!strcmp(op, "otrunc") && a)
		return result(open(a, O_WRONLY | O_TRUNC));
	if (!strcmp(op, "rename") && a && b)
		return result(rename(a, b));
	if (!strcmp(op, "link") && a && b)
		return result(link(a, b));
	if (!strcmp(op, "symlink") && a && b)
		return result(symlink(a, b));
	if (!strcmp(op, "mkdir") && a)
		return result(mkdir(a, 0755));
	if (!strcmp(op, "rmdir") && a)
		return result(rmdir(a));
	if (!strcmp(op, "unlink") && a)
		return result(unlink(a));
	if (!strcmp(op, "chmod") && a)
		return result(chmod(a, 0600));
	if (!strcmp(op, "mknod") && a)
		return result(mknod(a, S_IFCHR | 0600, makedev(1, 3)));
	if (!strcmp(op, "mkfifo") && a)
		return result(mkfifo(a, 0600));
	if (!strcmp(op, "exec") && a) {
		execv(a, argv + 2);
		return result(-1);
	}

	/* File descriptors. */
	if (!strcmp(op, "fdopen") && a) {
		int fd = atoi(a);
		return result(fcntl(fd, F_GETFD));
	}

	/* System calls the sandbox blocks. */
	if (!strcmp(op, "ptrace"))
		return result(syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, getppid(), 0, 0));
	if (!strcmp(op, "mount"))
		return result(mount("none", "/tmp", "tmpfs", 0, NULL));
	if (!strcmp(op, "unshare-user"))
		return result(unshare(CLONE_NEWUSER));
	if (!strcmp(op, "unshare-ns"))
		return result(unshare(CLONE_NEWNS));
	if (!strcmp(op, "clone-newuser")) {
		long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid((pid_t)pid, NULL, 0);
		return result(pid);
	}
	if (!strcmp(op, "clone3")) {
		struct clone_args ca;
		memset(&ca, 0, sizeof ca);
		ca.exit_signal = SIGCHLD;
		long pid = syscall(SYS_clone3, &ca, sizeof ca);
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid((pid_t)pid, NULL, 0);
		return result(pid);
	}
	if (!strcmp(op, "fork")) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid((pid_t)pid, NULL, 0);
		return result(pid);
	}
	if (!strcmp(op, "bpf"))
		return result(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0));
	if (!strcmp(op, "keyctl"))
		return result(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
	if (!strcmp(op, "perf_event_open"))
		return result(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	if (!strcmp(op, "userfaultfd"))
		return result(syscall(SYS_userfaultfd, 0));
	if (!strcmp(op, "io_uring_setup")) {
		char params[120];
		memset(params, 0, sizeof params);
		return result(syscall(SYS_io_uring_setup, 1, params));
	}
	if (!strcmp(op, "process_vm_readv")) {
		char src[8] = "secret", dst[8];
		struct iovec l = {dst, sizeof dst}, r = {src, sizeof src};
		return result(syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0));
	}
	if (!strcmp(op, "open_by_handle_at"))
		return result(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, O_RDONLY));
	if (!strcmp(op, "personality"))
		return result(syscall(SYS_personality, 0xffffffff));
	if (!strcmp(op, "tiocsti")) {
		char c = 'x';
		return result(ioctl(0, TIOCSTI, &c));
	}
	/* The terminal on stdin: what a program may not do to the caller's. */
	if (!strcmp(op, "tiocsetd") && a) {
		int ldisc = atoi(a);
		return result(ioctl(0, TIOCSETD, &ldisc));
	}
	if (!strcmp(op, "tiocexcl"))
		return result(ioctl(0, TIOCEXCL));
	if (!strcmp(op, "nonblock"))
		return result(fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK));
	/* Opens a terminal to read it (what stealing keystrokes takes),
	 * without making it the controlling one or waiting on a modem line. */
	if (!strcmp(op, "ttyopen") && a)
		return result(open(a, O_RDONLY | O_NOCTTY | O_NONBLOCK));
	if (!strcmp(op, "tiocsti-high")) {
		/* Same request with garbage in the upper 32 bits. */
		char c = 'x';
		return result(syscall(SYS_ioctl, 0, 0xdead000000000000UL | TIOCSTI, &c));
	}
#if defined(__x86_64__)
	if (!strcmp(op, "int80")) {
		long r = int80_getpid();
		printf("returned %ld\n", r);
		return 0;
	}
	if (!strcmp(op, "x32")) {
		long r = syscall(0x40000000 | 39 /* getpid */);
		printf("returned %ld\n", r);
		return 0;
	}
#elif defined(__aarch64__)
	if (!strcmp(op, "compat32")) {
		fflush(stdout);
		return exec_compat32();
	}
#else
#error "the probe's foreign-architecture operations know x86_64 and aarch64 only"
#endif

	/* Network. */
	if (!strcmp(op, "socket") && a) {
		int fam = !strcmp(a, "inet") ? AF_INET : !strcmp(a, "inet6") ? AF_INET6 : !strcmp(a, "unix") ? AF_UNIX
			: !strcmp(a, "netlink") ? AF_NETLINK : !strcmp(a, "packet") ? AF_PACKET : !strcmp(a, "vsock") ? 40 : -1;
		int type = b && !strcmp(b, "raw") ? SOCK_RAW : b && !strcmp(b, "dgram") ? SOCK_DGRAM : SOCK_STREAM;
		int proto = 0;
		if (fam == AF_NETLINK)
			type = SOCK_RAW, proto = b ? atoi(b) : 0;
		return result(socket(fam, type, proto));
	}
	if (!strcmp(op, "connect") && a && b) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			return result(-1);
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(b))};
		inet_pton(AF_INET, a, &sin.sin_addr);
		return result(connect(s, (struct sockaddr *)&sin, sizeof sin));
	}
	if (!strcmp(op, "bind") && a) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			return result(-1);
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(a))};
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return result(bind(s, (struct sockaddr *)&sin, sizeof sin));
	}
	if (!strcmp(op, "socketpair")) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
			return result(-1);
		if (write(sv[0], "p", 1) != 1)
			return result(-1);
		char c;
		return result(read(sv[1], &c, 1) == 1 && c == 'p' ? 0 : -1);
	}

	if (!strcmp(op, "httpserve") && a && b) {
		/* Answer every connection on 0.0.0.0:A (with a fourth argument
		 * "6": [::]:A, IPv4 and IPv6) with an HTTP response whose body
		 * is B, after reading the request's head. */
		int six = argc > 4 && !strcmp(argv[4], "6");
		int s = socket(six ? AF_INET6 : AF_INET, SOCK_STREAM, 0), one = 1, zero = 0;
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(a))};
		struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)atoi(a))};
		if (six)
			setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
		if ((six ? bind(s, (struct sockaddr *)&sin6, sizeof sin6) : bind(s, (struct sockaddr *)&sin, sizeof sin)) < 0 ||
		    listen(s, 64) < 0)
			return result(-1);
		printf("listening\n");
		for (;;) {
			int c = accept(s, NULL, NULL);
			if (c < 0)
				continue;
			char req[4096];
			int n = 0;
			while (n < (int)sizeof req - 1) {
				ssize_t r = read(c, req + n, sizeof req - 1 - (size_t)n);
				if (r <= 0)
					break;
				n += (int)r;
				req[n] = 0;
				if (strstr(req, "\r\n\r\n"))
					break;
			}
			char resp[512];
			int len = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s", strlen(b), b);
			if (write(c, resp, (size_t)len) < 0)
				perror("write");
			close(c);
		}
	}
	if (!strcmp(op, "udprecv") && a && b) {
		/* Receive datagrams on port A, append each to file B. */
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(a))};
		if (bind(s, (struct sockaddr *)&sin, sizeof sin) < 0)
			return result(-1);
		printf("listening\n");
		for (;;) {
			char buf[512];
			ssize_t n = recv(s, buf, sizeof buf, 0);
			if (n <= 0)
				continue;
			int f = open(b, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (f >= 0) {
				if (write(f, buf, (size_t)n) < 0)
					perror("write");
				close(f);
			}
		}
	}
	if (!strcmp(op, "udpsend") && a && b) {
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		if (s < 0)
			return result(-1);
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(b))};
		inet_pton(AF_INET, a, &sin.sin_addr);
		return result(sendto(s, "datagram", 8, 0, (struct sockaddr *)&sin, sizeof sin));
	}
	if ((!strcmp(op, "unixserve") || !strcmp(op, "unixconnect")) && a) {
		/* A name starting with '@' is abstract. */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, a);
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (s < 0)
			return result(-1);
		if (!strcmp(op, "unixconnect"))
			return result(connect(s, (struct sockaddr *)&sun, len));
		if (bind(s, (struct sockaddr *)&sun, len) < 0 || listen(s, 4096) < 0)
			return result(-1);
		printf("listening\n");
		if (b) {
			/* Serve one client from inside, then report. */
			int c = accept(s, NULL, NULL);
			return result(c);
		}
		for (;;) {
			int c = accept(s, NULL, NULL);
			if (c >= 0)
				close(c);
		}
	}

	if (!strcmp(op, "dgramserve") && a && b) {
		/* A unix datagram socket at A: append every datagram to file B. */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, a);
		int s = socket(AF_UNIX, SOCK_DGRAM, 0);
		if (s < 0 || bind(s, (struct sockaddr *)&sun, len) < 0)
			return result(-1);
		printf("listening\n");
		for (;;) {
			char buf[512];
			ssize_t n = recv(s, buf, sizeof buf, 0);
			if (n <= 0)
				continue;
			int f = open(b, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (f >= 0) {
				if (write(f, buf, (size_t)n) < 0 || write(f, "\n", 1) < 0)
					perror("write");
				close(f);
			}
		}
	}
	if (!strcmp(op, "unixsend") && a && b) {
		/* Send the datagram "sent-by-A" to B by way A: sendto, sendmsg,
		 * sendmmsg, connect (then write), or pair (sendto from a
		 * socketpair's datagram socket). */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, b);
		char data[64];
		snprintf(data, sizeof data, "sent-by-%s", a);
		int s, sv[2];
		if (!strcmp(a, "pair")) {
			if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
				return result(-1);
			s = sv[0];
		} else if ((s = socket(AF_UNIX, SOCK_DGRAM, 0)) < 0) {
			return result(-1);
		}
		struct iovec iov = {data, strlen(data)};
		struct msghdr msg = {.msg_name = &sun, .msg_namelen = len, .msg_iov = &iov, .msg_iovlen = 1};
		if (!strcmp(a, "sendto") || !strcmp(a, "pair"))
			return result(sendto(s, data, strlen(data), 0, (struct sockaddr *)&sun, len));
		if (!strcmp(a, "sendmsg"))
			return result(sendmsg(s, &msg, 0));
		if (!strcmp(a, "sendmmsg")) {
			struct mmsghdr mm[2] = {{.msg_hdr = msg}, {.msg_hdr = msg}};
			int n = sendmmsg(s, mm, 2, 0);
			if (n >= 0 && (n != 2 || mm[0].msg_len != strlen(data) || mm[1].msg_len != strlen(data))) {
				printf("sent %d, lengths %u %u\n", n, mm[0].msg_len, mm[1].msg_len);
				return 1;
			}
			return result(n);
		}
		if (!strcmp(a, "connect")) {
			if (connect(s, (struct sockaddr *)&sun, len) < 0)
				return result(-1);
			return result(write(s, data, strlen(data)));
		}
		return usage();
	}
	if (!strcmp(op, "unixsendfd") && a && b) {
		/* Connect to the stream socket A and pass it an open fd of file B
		 * (SCM_RIGHTS), with one byte. */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, a);
		int s = socket(AF_UNIX, SOCK_STREAM, 0), f = open(b, O_RDONLY);
		if (s < 0 || f < 0 || connect(s, (struct sockaddr *)&sun, len) < 0)
			return result(-1);
		char cbuf[CMSG_SPACE(sizeof(int))] = {0}, byte = 'F';
		struct iovec iov = {&byte, 1};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &f, sizeof f);
		return result(sendmsg(s, &msg, 0));
	}
	if (!strcmp(op, "unixrecvfd") && a) {
		/* Serve one client at A: print what the fd it passes reads. */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, a);
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (s < 0 || bind(s, (struct sockaddr *)&sun, len) < 0 || listen(s, 4) < 0)
			return result(-1);
		printf("listening\n");
		int c = accept(s, NULL, NULL);
		char cbuf[CMSG_SPACE(sizeof(int))], byte;
		struct iovec iov = {&byte, 1};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		if (c < 0 || recvmsg(c, &msg, 0) != 1)
			return result(-1);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		int f;
		if (!cm || cm->cmsg_type != SCM_RIGHTS)
			return result(-1);
		memcpy(&f, CMSG_DATA(cm), sizeof f);
		char buf[256];
		ssize_t n = read(f, buf, sizeof buf - 1);
		if (n < 0)
			return result(-1);
		buf[n] = 0;
		printf("received: %s\n", buf);
		return 0;
	}
	if (!strcmp(op, "abstractsquat") && a && b && b[0] == '@') {
		/* Take the abstract name B (held by another socket type, or by
		 * nobody) for a socket of one type, then reach B with the other
		 * type: A "dgram" binds a datagram socket and connects a stream
		 * one; "stream" binds a listening stream socket and sends a
		 * datagram ("sent-by-squat"); "forge" binds a listening stream
		 * socket to a name holding a newline and, after it, a line in
		 * /proc/net/unix's format that lists this socket's inode under
		 * B, then connects a stream socket to B. */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, b);
		int own = socket(AF_UNIX, !strcmp(a, "dgram") ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (own < 0)
			return result(-1);
		if (!strcmp(a, "forge")) {
			struct stat st;
			if (fstat(own, &st) < 0)
				return result(-1);
			struct sockaddr_un fake = {.sun_family = AF_UNIX};
			int n = snprintf(fake.sun_path + 1, sizeof fake.sun_path - 1,
					 "f\n0000000000000000: 00000002 00000000 00010000 0001 01 %lu %s", (unsigned long)st.st_ino, b);
			if (n < 0 || n >= (int)sizeof fake.sun_path - 1)
				return usage();
			if (bind(own, (struct sockaddr *)&fake, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) < 0 || listen(own, 4) < 0)
				return result(-1);
		} else if (bind(own, (struct sockaddr *)&sun, len) < 0 || (!strcmp(a, "stream") && listen(own, 4) < 0)) {
			return result(-1);
		}
		if (!strcmp(a, "stream")) {
			int d = socket(AF_UNIX, SOCK_DGRAM, 0);
			return result(d < 0 ? -1 : sendto(d, "sent-by-squat", 13, 0, (struct sockaddr *)&sun, len));
		}
		int c = socket(AF_UNIX, SOCK_STREAM, 0);
		return result(c < 0 ? -1 : connect(c, (struct sockaddr *)&sun, len));
	}
	if (!strcmp(op, "nlserve") && a && b) {
		/* A NETLINK_ROUTE socket bound to port id A: append a line
		 * "received seq N" to file B for every message it receives. */
		int s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
		struct sockaddr_nl snl = {.nl_family = AF_NETLINK, .nl_pid = (unsigned)strtoul(a, NULL, 0)};
		if (s < 0 || bind(s, (struct sockaddr *)&snl, sizeof snl) < 0)
			return result(-1);
		printf("listening\n");
		for (;;) {
			struct nlmsghdr h;
			if (recv(s, &h, sizeof h, 0) < (ssize_t)sizeof h)
				continue;
			char line[64];
			int n = snprintf(line, sizeof line, "received seq %u\n", h.nlmsg_seq);
			int f = open(b, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (f >= 0) {
				if (write(f, line, (size_t)n) < 0)
					perror("write");
				close(f);
			}
		}
	}
	if (!strcmp(op, "nlsend") && a) {
		/* Send a NETLINK_ROUTE message (NLMSG_NOOP, sequence number B or
		 * 1) to port id A: a message to another process's netlink
		 * socket, which the kernel allows only with CAP_NET_ADMIN. */
		int s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
		struct sockaddr_nl to = {.nl_family = AF_NETLINK, .nl_pid = (unsigned)strtoul(a, NULL, 0)};
		struct nlmsghdr h = {.nlmsg_len = sizeof h, .nlmsg_type = NLMSG_NOOP, .nlmsg_seq = b ? (unsigned)atoi(b) : 1};
		if (s < 0)
			return result(-1);
		return result(sendto(s, &h, sizeof h, 0, (struct sockaddr *)&to, sizeof to));
	}
	if (!strcmp(op, "udpcmsg") && a && b && argc > 4) {
		/* sendmsg a UDP datagram "cmsg-A" to host B port argv[4] with
		 * the ancillary data A: none, mark (SO_MARK 42), prio7
		 * (SO_PRIORITY 7), tos (IP_TOS 2: ECT(0)), pktinfo (IP_PKTINFO,
		 * source 127.0.0.1), segment (UDP_SEGMENT 600 over two
		 * segments: two datagrams, each starting with the marker). */
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		if (s < 0)
			return result(-1);
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[4]))};
		inet_pton(AF_INET, b, &sin.sin_addr);
		static char data[1200];
		size_t n = 16;
		snprintf(data, 16, "cmsg-%s", a);
		union {
			char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
			struct cmsghdr align;
		} u;
		memset(&u, 0, sizeof u);
		struct iovec iov = {data, n};
		struct msghdr msg = {.msg_name = &sin, .msg_namelen = sizeof sin, .msg_iov = &iov, .msg_iovlen = 1};
		if (strcmp(a, "none")) {
			msg.msg_control = u.buf;
			msg.msg_controllen = sizeof u.buf;
			struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
			int v = 0;
			c->cmsg_len = CMSG_LEN(sizeof v);
			if (!strcmp(a, "mark")) {
				c->cmsg_level = SOL_SOCKET, c->cmsg_type = SO_MARK, v = 42;
			} else if (!strcmp(a, "prio7")) {
				c->cmsg_level = SOL_SOCKET, c->cmsg_type = SO_PRIORITY, v = 7;
			} else if (!strcmp(a, "tos")) {
				c->cmsg_level = IPPROTO_IP, c->cmsg_type = IP_TOS, v = 2;
			} else if (!strcmp(a, "segment")) {
				uint16_t gso = 600;
				c->cmsg_level = SOL_UDP, c->cmsg_type = UDP_SEGMENT, c->cmsg_len = CMSG_LEN(sizeof gso);
				memcpy(CMSG_DATA(c), &gso, sizeof gso);
				memcpy(data + 600, data, 16);
				iov.iov_len = 1200;
			} else if (!strcmp(a, "pktinfo")) {
				struct in_pktinfo pi = {0};
				inet_pton(AF_INET, "127.0.0.1", &pi.ipi_spec_dst);
				c->cmsg_level = IPPROTO_IP, c->cmsg_type = IP_PKTINFO, c->cmsg_len = CMSG_LEN(sizeof pi);
				memcpy(CMSG_DATA(c), &pi, sizeof pi);
			} else {
				return usage();
			}
			if (c->cmsg_len == CMSG_LEN(sizeof v))
				memcpy(CMSG_DATA(c), &v, sizeof v);
			msg.msg_controllen = CMSG_SPACE(c->cmsg_len - CMSG_LEN(0));
		}
		return result(sendmsg(s, &msg, 0));
	}
	if (!strcmp(op, "unixsendcred") && a && b) {
		/* Connect to the stream socket A and send one byte with
		 * SCM_CREDENTIALS: B "own" claims this process's pid, uid and
		 * gid; "other" claims pid 1's. */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, a);
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&sun, len) < 0)
			return result(-1);
		struct ucred cr = {.pid = !strcmp(b, "own") ? getpid() : 1, .uid = getuid(), .gid = getgid()};
		union {
			char buf[CMSG_SPACE(sizeof cr)];
			struct cmsghdr align;
		} u;
		memset(&u, 0, sizeof u);
		char byte = 'C';
		struct iovec iov = {&byte, 1};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_CREDENTIALS;
		c->cmsg_len = CMSG_LEN(sizeof cr);
		memcpy(CMSG_DATA(c), &cr, sizeof cr);
		return result(sendmsg(s, &msg, 0));
	}
	if (!strcmp(op, "unixrecvcred") && a) {
		/* Serve one client at A with SO_PASSCRED: print the credentials
		 * its first byte came with. */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, a);
		int s = socket(AF_UNIX, SOCK_STREAM, 0), one = 1;
		if (s < 0 || setsockopt(s, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0 || bind(s, (struct sockaddr *)&sun, len) < 0 ||
		    listen(s, 4) < 0)
			return result(-1);
		printf("listening\n");
		int c = accept(s, NULL, NULL);
		union {
			char buf[CMSG_SPACE(sizeof(struct ucred))];
			struct cmsghdr align;
		} u;
		char byte;
		struct iovec iov = {&byte, 1};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
		if (c < 0 || setsockopt(c, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0 || recvmsg(c, &msg, 0) != 1)
			return result(-1);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		if (!cm || cm->cmsg_type != SCM_CREDENTIALS)
			return result(-1);
		struct ucred cr;
		memcpy(&cr, CMSG_DATA(cm), sizeof cr);
		printf("creds pid %d uid %u gid %u\n", (int)cr.pid, (unsigned)cr.uid, (unsigned)cr.gid);
		return 0;
	}
	if (!strcmp(op, "raceaddr") && a && b && argc > 4) {
		/* Connect N (argv[4]) times to an address that another process
		 * flips between A and B in shared memory all along; print how
		 * many connections reached B's socket (getpeername) and A's. */
		struct sockaddr_un *sun = mmap(NULL, sizeof *sun, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		struct sockaddr_un sa = {.sun_family = AF_UNIX}, sb = {.sun_family = AF_UNIX};
		if (sun == MAP_FAILED)
			return result(-1);
		unix_addr(&sa, a);
		unix_addr(&sb, b);
		*sun = sa;
		pid_t flipper = fork();
		if (flipper == 0) {
			for (;;) {
				memcpy(sun->sun_path, sb.sun_path, sizeof sun->sun_path);
				for (volatile int k = 0; k < 2000; k++)
					;
				memcpy(sun->sun_path, sa.sun_path, sizeof sun->sun_path);
				for (volatile int k = 0; k < 20000; k++)
					;
			}
		}
		int n = atoi(argv[4]), toA = 0, toB = 0, failed = 0;
		for (int i = 0; i < n; i++) {
			int s = socket(AF_UNIX, SOCK_STREAM, 0);
			if (s < 0)
				return result(-1);
			if (connect(s, (struct sockaddr *)sun, sizeof *sun) < 0) {
				failed++;
			} else {
				struct sockaddr_un peer = {0};
				socklen_t pl = sizeof peer;
				getpeername(s, (struct sockaddr *)&peer, &pl);
				if (!strcmp(peer.sun_path, sb.sun_path))
					toB++;
				else if (!strcmp(peer.sun_path, sa.sun_path))
					toA++;
			}
			close(s);
		}
		kill(flipper, SIGKILL);
		waitpid(flipper, NULL, 0);
		printf("reached-a %d reached-b %d failed %d\n", toA, toB, failed);
		return 0;
	}
	if (!strcmp(op, "unixconnectloop") && a && b) {
		/* Connect B times to the stream socket A (a new socket each
		 * time, non-blocking with a fourth argument "nonblock"); print
		 * the mean time of one socket+connect+close. */
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = unix_addr(&sun, a);
		int n = atoi(b), nb = argc > 4 && !strcmp(argv[4], "nonblock") ? SOCK_NONBLOCK : 0;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < n; i++) {
			int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | nb, 0);
			if (s < 0 || connect(s, (struct sockaddr *)&sun, len) < 0)
				return result(-1);
			close(s);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
		printf("ok %.0f ns per connect\n", ns / n);
		return 0;
	}

	/* Processes and signals. */
	if (!strcmp(op, "sleep") && a) {
		/* argv[3...] may carry a tag for the tests to find. */
		sleep((unsigned)atoi(a));
		return result(0);
	}
	if (!strcmp(op, "kill") && a && b)
		return result(kill(atoi(a), atoi(b)));
	if (!strcmp(op, "ignore-term-sleep") && a) {
		signal(SIGTERM, SIG_IGN);
		sleep((unsigned)atoi(a));
		return result(0);
	}
	if (!strcmp(op, "sigign") && a) {
		struct sigaction sa;
		sigaction(atoi(a), NULL, &sa);
		printf("%s\n", sa.sa_handler == SIG_IGN ? "ignored" : "default");
		return 0;
	}
	if (!strcmp(op, "sigmask")) {
		sigset_t m;
		sigprocmask(SIG_SETMASK, NULL, &m);
		int blocked = 0;
		for (int s = 1; s < 32; s++)
			if (sigismember(&m, s))
				printf("%d ", s), blocked++;
		printf("%s\n", blocked ? "" : "none");
		return 0;
	}
	if (!strcmp(op, "daemon") && a) {
		/* setsid'd, double-forked grandchild sleeping with a tag. "ok"
		 * only once its exec succeeded: the close-on-exec pipe then
		 * reads EOF; a failed exec writes its errno first. */
		int pfd[2];
		if (pipe2(pfd, O_CLOEXEC) < 0)
			return result(-1);
		pid_t p = fork();
		if (p == 0) {
			close(pfd[0]);
			setsid();
			if (fork() == 0) {
				execl("/proc/self/exe", "probe", "sleep", a, b ? b : "tag", (char *)NULL);
				int e = errno;
				write(pfd[1], &e, sizeof e);
				_exit(1);
			}
			_exit(0);
		}
		close(pfd[1]);
		waitpid(p, NULL, 0);
		int e = 0;
		ssize_t n = read(pfd[0], &e, sizeof e);
		close(pfd[0]);
		if (n > 0) {
			errno = e;
			return result(-1);
		}
		return result(0);
	}
	if (!strcmp(op, "rlimit") && a) {
		int res = !strcmp(a, "core") ? 4 : !strcmp(a, "cpu") ? 0 : !strcmp(a, "fsize") ? 1 : !strcmp(a, "nofile") ? 7 : !strcmp(a, "nproc") ? 6 : -1;
		struct { unsigned long cur, max; } l;
		if (syscall(SYS_prlimit64, 0, res, NULL, &l) < 0)
			return result(-1);
		printf("%lu %lu\n", l.cur, l.max);
		return 0;
	}
	if (!strcmp(op, "nnp")) {
		printf("%d\n", (int)syscall(SYS_prctl, 39 /* PR_GET_NO_NEW_PRIVS */, 0, 0, 0, 0));
		return 0;
	}
	/* Resource limits. */
	if (!strcmp(op, "forkmax")) {
		/* Fork children that wait until fork fails; report how many. */
		static pid_t kids[100000];
		int n = 0;
		int cap = a ? atoi(a) : 100000;
		while (n < cap) {
			pid_t p = fork();
			if (p == 0) {
				pause();
				_exit(0);
			}
			if (p < 0)
				break;
			kids[n++] = p;
		}
		printf("%d\n", n);
		for (int i = 0; i < n; i++)
			kill(kids[i], SIGKILL);
		while (wait(NULL) > 0)
			;
		return 0;
	}
	if (!strcmp(op, "hog") && a) {
		/* Allocate and touch A megabytes, then report. */
		long mb = atol(a);
		for (long i = 0; i < mb; i++) {
			char *p = malloc(1 << 20);
			if (!p)
				return result(-1);
			memset(p, 1, 1 << 20);
		}
		printf("survived\n");
		return 0;
	}
	if (!strcmp(op, "hogs") && a && b) {
		/* A children, each touching B megabytes and then lingering; the
		 * parent reports how many the kernel killed. */
		int n = atoi(a);
		long mb = atol(b);
		for (int i = 0; i < n; i++) {
			if (fork() == 0) {
				for (long j = 0; j < mb; j++) {
					char *p = malloc(1 << 20);
					if (p)
						memset(p, 1, 1 << 20);
				}
				sleep(3);
				_exit(0);
			}
		}
		int killed = 0, st;
		pid_t w;
		while ((w = wait(&st)) > 0 || (w < 0 && errno == EINTR))
			if (w > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
				killed++;
		printf("killed %d\n", killed);
		return 0;
	}
	if (!strcmp(op, "spin") && a) {
		/* A processes (this one included) burning CPU until killed. */
		int n = atoi(a);
		for (int i = 1; i < n; i++)
			if (fork() == 0)
				break;
		for (volatile unsigned long x = 0;; x++)
			;
	}

	/* Benchmarks: the same work bare and sandboxed. */
	if (!strcmp(op, "bench-open") && a && b) {
		long n = atol(b);
		for (long i = 0; i < n; i++) {
			int fd = open(a, O_RDONLY);
			if (fd < 0)
				return result(-1);
			close(fd);
		}
		return 0;
	}
	if (!strcmp(op, "bench-stat") && a && b) {
		/* Walk a directory tree breadth-first with stat on every entry,
		 * starting over until n stats were made. */
		long n = atol(b), done = 0;
		static char queue[1 << 16][256];
		while (done < n) {
			int head = 0, tail = 0;
			snprintf(queue[tail++], 256, "%s", a);
			while (head < tail && done < n) {
				char *dir = queue[head++ % (1 << 16)];
				char path[256];
				DIR *d = opendir(dir);
				if (!d)
					continue;
				struct dirent *e;
				while ((e = readdir(d)) && done < n) {
					if (e->d_name[0] == '.')
						continue;
					struct stat st;
					if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
						continue;
					if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && tail - head < (1 << 16) - 1)
						memcpy(queue[tail++ % (1 << 16)], path, sizeof path);
					done++;
				}
				closedir(d);
			}
		}
		return 0;
	}
	return usage();
}
