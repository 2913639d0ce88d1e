/*
 * The recipe key (see recipekey.h for what it covers and its encoding).
 * It runs in a constructor on every start of the helper, before the Go
 * runtime, so it is plain C with the C library and as few system calls as
 * the inputs allow: none at all without a "--", about twenty with one.
 */
#define _GNU_SOURCE
#include "recipekey.h"
#include "sha256.h"
#include "stage.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define SE_KEY_DOMAIN "sandbox-executable recipe key v1"

enum {
	SE_KEY_BINARY = 1,
	SE_KEY_ARGS,
	SE_KEY_ENV,
	SE_KEY_CWD,
	SE_KEY_STATUS,
	SE_KEY_SECUREBITS,
	SE_KEY_TTYS,
	SE_KEY_NOFILE,
	SE_KEY_CGROUP,
	SE_KEY_NS,
	SE_KEY_BOOT,
};

enum { SE_BINARY_BUILD_ID = 1, SE_BINARY_EXE_STAT = 2 };

static int se_key_argc;
static char **se_key_argv;
static char **se_key_envp;
static int se_key_ok;
static int se_key_prog;
static unsigned char se_key[SE_RECIPE_KEY_SIZE];

/* Room for the /proc files read whole: /proc/self/status (about 1.5 KiB,
 * more with many groups) and /proc/self/cgroup. In .bss: only the pages a
 * read touches cost anything. */
static char se_key_buf[64 * 1024];

static void se_put_u32(struct se_sha256 *h, uint32_t v)
{
	unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
	se_sha256_update(h, b, sizeof b);
}

static void se_put_u64(struct se_sha256 *h, uint64_t v)
{
	se_put_u32(h, (uint32_t)v);
	se_put_u32(h, (uint32_t)(v >> 32));
}

static void se_put_tag(struct se_sha256 *h, unsigned char tag)
{
	se_sha256_update(h, &tag, 1);
}

static void se_put_str(struct se_sha256 *h, const void *s, size_t len)
{
	se_put_u32(h, (uint32_t)len);
	se_sha256_update(h, s, len);
}

/* se_read_proc reads the /proc file at path whole into se_key_buf and
 * returns its length, or -1. One read: procfs makes a file of this kind
 * (seq_file single_open, sysctl) whole at its first read and returns all
 * of it that fits, so a read that does not fill the buffer read all of it;
 * one that fills it is a file too large to vouch for. */
static ssize_t se_read_proc(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, se_key_buf, sizeof se_key_buf);
	close(fd);
	if (n < 0 || (size_t)n >= sizeof se_key_buf)
		return -1;
	return n;
}

/* se_put_link hashes str(readlink(path)), or fails (0). */
static int se_put_link(struct se_sha256 *h, const char *path)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(path, buf, sizeof buf);
	if (n < 0 || (size_t)n >= sizeof buf)
		return 0;
	se_put_str(h, buf, (size_t)n);
	return 1;
}

struct se_build_id {
	const unsigned char *id;
	size_t len;
};

/* se_find_build_id looks through the PT_NOTE segments of the first object
 * dl_iterate_phdr reports, the executable, for an NT_GNU_BUILD_ID note. */
static int se_find_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	struct se_build_id *b = data;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		/* Notes are padded to 4 bytes, or 8 in a segment aligned so. */
		size_t align = ph->p_align == 8 ? 8 : 4;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		size_t left = ph->p_memsz;
		while (left >= sizeof(ElfW(Nhdr))) {
			ElfW(Nhdr) nh;
			memcpy(&nh, p, sizeof nh);
			size_t name = (nh.n_namesz + align - 1) & ~(align - 1);
			size_t desc = (nh.n_descsz + align - 1) & ~(align - 1);
			if (name > left - sizeof nh || desc > left - sizeof nh - name)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p + sizeof nh, "GNU", 4) == 0 && nh.n_descsz > 0) {
				b->id = p + sizeof nh + name;
				b->len = nh.n_descsz;
				return 1;
			}
			p += sizeof nh + name + desc;
			left -= sizeof nh + name + desc;
		}
	}
	return 1; /* the executable only */
}

static int se_put_binary(struct se_sha256 *h)
{
	struct se_build_id b = {0};
	dl_iterate_phdr(se_find_build_id, &b);
	se_put_tag(h, SE_KEY_BINARY);
	if (b.id) {
		se_put_tag(h, SE_BINARY_BUILD_ID);
		se_put_str(h, b.id, b.len);
		return 1;
	}
	int fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int ret = fstat(fd, &st);
	close(fd);
	if (ret < 0)
		return 0;
	se_put_tag(h, SE_BINARY_EXE_STAT);
	se_put_u32(h, 40);
	se_put_u64(h, (uint64_t)st.st_dev);
	se_put_u64(h, (uint64_t)st.st_ino);
	se_put_u64(h, (uint64_t)st.st_size);
	se_put_u64(h, (uint64_t)st.st_mtim.tv_sec);
	se_put_u64(h, (uint64_t)st.st_mtim.tv_nsec);
	return 1;
}

size_t se_status_line(const char *status, size_t n, const char *name, const char **line)
{
	size_t nl = strlen(name);
	for (const char *p = status, *end = status + n; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		if ((size_t)(eol - p) >= nl && memcmp(p, name, nl) == 0) {
			*line = p;
			return (size_t)(eol - p);
		}
		p = eol + 1;
	}
	*line = NULL;
	return 0;
}

/* se_put_status_lines hashes the lines of a /proc status file the key
 * covers. */
static void se_put_status_lines(struct se_sha256 *h, const char *status, size_t n)
{
	static const char *const names[] = {
		"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:",
		"NoNewPrivs:", "Seccomp:", "Seccomp_filters:",
	};
	se_put_tag(h, SE_KEY_STATUS);
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		const char *line;
		size_t len = se_status_line(status, n, names[k], &line);
		se_put_str(h, line ? line : "", len);
	}
}

/* se_put_status hashes the lines of /proc/self/status the key covers. */
static int se_put_status(struct se_sha256 *h)
{
	/* The first constructor's read (nothing has changed the process
	 * since), else a read of our own. */
	size_t have;
	const char *status = se_initial_status(&have);
	ssize_t n = (ssize_t)have;
	if (!status) {
		n = se_read_proc("/proc/self/status");
		if (n < 0)
			return 0;
		status = se_key_buf;
	}
	se_put_status_lines(h, status, (size_t)n);
	return 1;
}

void se_status_digest(const char *status, size_t n, unsigned char out[SE_RECIPE_KEY_SIZE])
{
	struct se_sha256 h;
	se_sha256_init(&h);
	se_put_status_lines(&h, status, n);
	se_sha256_final(&h, out);
}

static int se_put_ttys(struct se_sha256 *h)
{
	static const char *const links[] = {"/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2"};
	se_put_tag(h, SE_KEY_TTYS);
	for (int fd = 0; fd < 3; fd++) {
		struct termios t;
		if (ioctl(fd, TCGETS, &t) < 0) {
			se_put_u32(h, errno ? (uint32_t)errno : 0xffffffffu);
			continue;
		}
		se_put_u32(h, 0);
		if (!se_put_link(h, links[fd]))
			return 0;
	}
	return 1;
}

/* se_compute_key hashes the inputs in the order recipekey.h gives, the
 * arguments argv[1..helper_args] and the environment envp given, the rest
 * this process's own; it returns 0 when one cannot be read. */
static int se_compute_key(char **argv, int helper_args, char **envp, unsigned char out[SE_RECIPE_KEY_SIZE])
{
	struct se_sha256 h;
	ssize_t n;

	se_sha256_init(&h);
	se_put_str(&h, SE_KEY_DOMAIN, sizeof SE_KEY_DOMAIN - 1);
	if (!se_put_binary(&h))
		return 0;

	se_put_tag(&h, SE_KEY_ARGS);
	se_put_u32(&h, (uint32_t)helper_args);
	for (int i = 1; i <= helper_args; i++)
		se_put_str(&h, argv[i], strlen(argv[i]));

	uint32_t nenv = 0;
	for (char **e = envp; e && *e; e++)
		nenv++;
	se_put_tag(&h, SE_KEY_ENV);
	se_put_u32(&h, nenv);
	for (uint32_t i = 0; i < nenv; i++)
		se_put_str(&h, envp[i], strlen(envp[i]));

	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return 0;
	se_put_tag(&h, SE_KEY_CWD);
	se_put_str(&h, cwd, strlen(cwd));

	if (!se_put_status(&h))
		return 0;

	int sb = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (sb < 0)
		return 0;
	se_put_tag(&h, SE_KEY_SECUREBITS);
	se_put_u32(&h, (uint32_t)sb);

	if (!se_put_ttys(&h))
		return 0;

	sigset_t mask;
	int ignored[64], nignored;
	uint64_t cur, max;
	se_initial_state(&mask, ignored, 64, &nignored, &cur, &max);
	se_put_tag(&h, SE_KEY_NOFILE);
	se_put_u64(&h, cur);
	se_put_u64(&h, max);

	if ((n = se_read_proc("/proc/self/cgroup")) < 0)
		return 0;
	se_put_tag(&h, SE_KEY_CGROUP);
	se_put_str(&h, se_key_buf, (size_t)n);

	se_put_tag(&h, SE_KEY_NS);
	if (!se_put_link(&h, "/proc/self/ns/mnt") || !se_put_link(&h, "/proc/self/ns/user") ||
	    !se_put_link(&h, "/proc/self/ns/pid"))
		return 0;

	if ((n = se_read_proc("/proc/sys/kernel/random/boot_id")) < 0)
		return 0;
	se_put_tag(&h, SE_KEY_BOOT);
	se_put_str(&h, se_key_buf, (size_t)n);

	se_sha256_final(&h, out);
	return 1;
}

int se_recipe_key_of(int argc, char **argv, char **envp, unsigned char out[SE_RECIPE_KEY_SIZE], int *prog_index)
{
	if (argc < 1 || !argv)
		return 0;
	int sep = 0;
	for (int i = 1; i < argc && argv[i]; i++) {
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	}
	if (sep == 0 || sep + 1 >= argc || !argv[sep + 1] || !se_compute_key(argv, sep - 1, envp, out))
		return 0;
	*prog_index = sep + 1;
	return 1;
}

/* After se_capture_initial_state (101), whose RLIMIT_NOFILE it uses. */
__attribute__((constructor(102))) static void se_recipe_key_init(int argc, char **argv, char **envp)
{
	int saved = errno;

	se_key_argc = argc;
	se_key_argv = argv;
	se_key_envp = envp;
	se_key_ok = se_recipe_key_of(argc, argv, envp, se_key, &se_key_prog);
	errno = saved;
}

int se_recipe_key(unsigned char out[SE_RECIPE_KEY_SIZE], int *prog_index)
{
	if (!se_key_ok)
		return 0;
	memcpy(out, se_key, SE_RECIPE_KEY_SIZE);
	*prog_index = se_key_prog;
	return 1;
}

int se_recipe_argc(void)
{
	return se_key_argc;
}

char **se_recipe_argv(void)
{
	return se_key_argv;
}

char **se_recipe_envp(void)
{
	return se_key_envp;
}
