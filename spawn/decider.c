/*
 * A run asking the resident decider (see decider.h). Plain C with the C
 * library: it runs in the warm path's constructor, before the Go runtime,
 * with the forwarded signals blocked.
 */
#define _GNU_SOURCE
#include "decider.h"
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

struct se_out {
	unsigned char *p; /* NULL: only count */
	size_t n, cap;
};

static void se_out_u32(struct se_out *o, uint32_t v)
{
	if (o->p && o->n + 4 <= o->cap)
		for (int i = 0; i < 4; i++)
			o->p[o->n + (size_t)i] = (unsigned char)(v >> (8 * i));
	o->n += 4;
}

static void se_out_u64(struct se_out *o, uint64_t v)
{
	se_out_u32(o, (uint32_t)v);
	se_out_u32(o, (uint32_t)(v >> 32));
}

static void se_out_str(struct se_out *o, const char *s)
{
	size_t len = strlen(s);
	se_out_u32(o, (uint32_t)len);
	if (o->p && o->n + len <= o->cap)
		memcpy(o->p + o->n, s, len);
	o->n += len;
}

size_t se_decider_request(int argc, char **argv, char **envp, uint64_t nofile_cur, uint64_t nofile_max,
			  unsigned char *buf, size_t cap)
{
	struct se_out o = {buf, 0, cap};
	uint32_t envc = 0;
	for (char **e = envp; e && *e; e++)
		envc++;
	se_out_u32(&o, SE_DECIDER_MAGIC);
	se_out_u32(&o, SE_DECIDER_VERSION);
	se_out_u32(&o, 0); /* the size, below */
	se_out_u32(&o, 0);
	se_out_u64(&o, nofile_cur);
	se_out_u64(&o, nofile_max);
	se_out_u32(&o, (uint32_t)argc);
	for (int i = 0; i < argc; i++)
		se_out_str(&o, argv[i]);
	se_out_u32(&o, envc);
	for (uint32_t i = 0; i < envc; i++)
		se_out_str(&o, envp[i]);
	if (o.n > SE_DECIDER_MAX_REQUEST || (buf && o.n > cap))
		return 0;
	if (buf) {
		struct se_out size = {buf + 8, 0, 4};
		se_out_u32(&size, (uint32_t)o.n);
	}
	return o.n;
}

/* se_send_all sends buf[0..len), the descriptors fds[0..nfds) with its
 * first byte. */
static int se_send_all(int sock, const unsigned char *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} control;
	size_t off = 0;
	while (off < len) {
		struct iovec iov = {(void *)(buf + off), len - off};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
		if (off == 0) {
			memset(&control, 0, sizeof control);
			m.msg_control = control.buf;
			m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
			memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
		}
		ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);
		if (n <= 0)
			return 0;
		off += (size_t)n;
	}
	return 1;
}

int se_ask_decider(const char *path, int argc, char **argv, char **envp)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof addr.sun_path)
		return -1;
	strcpy(addr.sun_path, path);

	sigset_t mask;
	int ignored[64], nignored;
	uint64_t cur, max;
	se_initial_state(&mask, ignored, 64, &nignored, &cur, &max);
	size_t len = se_decider_request(argc, argv, envp, cur, max, NULL, 0);
	if (len == 0)
		return -1;
	unsigned char *buf = malloc(len);
	if (!buf)
		return -1;
	len = se_decider_request(argc, argv, envp, cur, max, buf, len);

	int ok = -1, cwd = -1;
	/* Non-blocking to connect: a decider whose backlog is full is one the
	 * run does not wait for. */
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof addr) != 0)
		goto out;
	struct timeval wait = {SE_DECIDER_WAIT_SECONDS, 0};
	if (fcntl(sock, F_SETFL, 0) != 0 || setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait) != 0 ||
	    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait) != 0)
		goto out;
	cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0)
		goto out;
	int fds[4] = {cwd, 0, 1, 2};
	if (!se_send_all(sock, buf, len, fds, 4))
		goto out;
	unsigned char answer = 0;
	if (read(sock, &answer, 1) == 1)
		ok = answer == 'S';
out:
	if (cwd >= 0)
		close(cwd);
	if (sock >= 0)
		close(sock);
	free(buf);
	return ok;
}
