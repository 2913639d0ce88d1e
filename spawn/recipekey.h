/*
 * The recipe key: a digest of everything a run's decision depends on that
 * the process itself carries, computed once per process by a constructor
 * before the Go runtime starts. A later run of the same invocation (same
 * key) may carry out the recipe Go decided and stored for it without
 * starting Go (see recipestore.h); a process without a key never does.
 *
 * The key is SHA-256 over the bytes E below. All integers are little
 * endian; str(s) is u32(length of s) followed by the bytes of s (no NUL);
 * every field starts with a one-byte tag, and each part's length is known
 * from what precedes it, so no two different inputs encode alike.
 *
 *   E = str("sandbox-executable recipe key v1")
 *       01 u8(kind) str(id)     the binary: kind 1, id = the descriptor of
 *                               its NT_GNU_BUILD_ID note (found through
 *                               dl_iterate_phdr); without one, kind 2 and
 *                               id = u64 st_dev, u64 st_ino, u64 st_size,
 *                               i64 st_mtim.tv_sec, i64 st_mtim.tv_nsec of
 *                               /proc/self/exe (fstat of an O_PATH open),
 *                               40 bytes
 *       02 u32(n) str(argv[1]) ... str(argv[n])
 *                               the helper's own arguments: argv[i] is the
 *                               first element equal to "--", n = i - 1
 *                               (the program's argv, after "--", is not
 *                               in the key)
 *       03 u32(m) str(envp[0]) ... str(envp[m-1])
 *                               the whole environment, in order
 *       04 str(cwd)             getcwd
 *       05 str(line) x 11       from one read of /proc/self/status, the
 *                               lines Uid: Gid: Groups: CapInh: CapPrm:
 *                               CapEff: CapBnd: CapAmb: NoNewPrivs:
 *                               Seccomp: Seccomp_filters:, in that order,
 *                               each whole without its newline ("" when
 *                               missing)
 *       06 u32(securebits)      prctl(PR_GET_SECUREBITS)
 *       07 then for fd 0, 1, 2: u32(e), e = 0 when ioctl(fd, TCGETS)
 *                               succeeds, else its errno (ENOTTY, EBADF for
 *                               a closed fd, ...); when e = 0, followed by
 *                               str(readlink("/proc/self/fd/N"))
 *       08 u64(cur) u64(max)    RLIMIT_NOFILE as the process started (as
 *                               se_capture_initial_state saw it)
 *       09 str(/proc/self/cgroup's content)
 *       0a str(readlink /proc/self/ns/mnt) str(... ns/user) str(... ns/pid)
 *       0b str(/proc/sys/kernel/random/boot_id's content)
 *
 * There is no key (the warm path never applies) when argv has no "--",
 * when nothing follows the first "--", or when any input cannot be read
 * whole (getcwd, the /proc files, the links, prctl): an input that was not
 * seen cannot be vouched for.
 *
 * The first "--" is not always where the helper's own parser ends its
 * options (it may be an option's value: --sandbox-policy-cwd -- ...). Its
 * parse of argv[1..i] depends on those elements alone, so whether it agrees
 * is the same for every invocation with this key: Go must store a recipe
 * only when its own parse put the program at prog_index (spawn.RecipeKeyFor).
 */
#ifndef SE_RECIPEKEY_H
#define SE_RECIPEKEY_H

#include <stddef.h>

#define SE_RECIPE_KEY_SIZE 32

/* se_recipe_key copies the process's key to out and the index in argv of
 * the program's argv[0] (the element after the first "--") to *prog_index,
 * and returns 1; it returns 0 when the process has no key. */
int se_recipe_key(unsigned char out[SE_RECIPE_KEY_SIZE], int *prog_index);

/* se_recipe_key_of computes the key of an invocation with the arguments
 * argv[0..argc) and the environment envp (NULL-ended) in this process's
 * state otherwise (its working directory, descriptors, credentials, ...),
 * as the constructor computes the process's own: the resident decider
 * (sandbox-executable decider) computes so the key of a run it decides for
 * another process, once it has taken on that process's working directory,
 * standard descriptors and RLIMIT_NOFILE. It returns 0 where the process
 * has no key, as se_recipe_key. Not reentrant. */
int se_recipe_key_of(int argc, char **argv, char **envp, unsigned char out[SE_RECIPE_KEY_SIZE], int *prog_index);

/* se_status_digest is a SHA-256 of the lines of status[0..n) (a /proc
 * status file) the key covers (05 above): two processes with the same
 * digest have the same credentials, capabilities, no_new_privs and seccomp
 * filters, as far as the key is concerned. The resident decider decides
 * only for a process whose digest is its own. */
void se_status_digest(const char *status, size_t n, unsigned char out[SE_RECIPE_KEY_SIZE]);

/* se_status_line finds the first line of status[0..n) (a /proc status
 * file) that begins with name: its length without the newline, *line its
 * start; 0 and NULL when no line does. The key's lines (05 above) are
 * found so; it is here for the fuzzer (spawn/fuzz). */
size_t se_status_line(const char *status, size_t n, const char *name, const char **line);

/* The process's argc, argv and envp as the constructor received them (the
 * start-up's own arrays: envp is the environment before any setenv). */
int se_recipe_argc(void);
char **se_recipe_argv(void);
char **se_recipe_envp(void);

#endif
