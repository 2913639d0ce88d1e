/*
 * Asking the resident decider (sandbox-executable decider SOCKET) for the
 * decision of an invocation that has no stored recipe yet. A run whose
 * environment names the decider's socket (SANDBOX_EXECUTABLE_DECIDER)
 * asks it on a miss, before the Go runtime starts: the decider takes on
 * the run's working directory, standard descriptors, environment and
 * RLIMIT_NOFILE, decides as the run would, stores the entry under the key
 * it computes itself, and answers; the run then looks its own key up again.
 * The answer only makes the run look again: an entry is used only when the
 * lookup finds it under the run's own key and its tag and dependencies
 * hold, whoever answered. A decider in another context (credentials,
 * namespaces, cgroup, build) stores under another key, and the run decides
 * itself.
 *
 * The request, on a SOCK_STREAM unix socket, little endian:
 *
 *   u32 magic      0x51444553 ("SEDQ")
 *   u32 version    1
 *   u32 size       of the whole request, header included (at most
 *                  SE_DECIDER_MAX_REQUEST)
 *   u32 reserved   0
 *   u64 nofile_cur, u64 nofile_max   RLIMIT_NOFILE as the run started
 *   u32 argc, then argc strings      the run's argv, argv[0] included
 *   u32 envc, then envc strings      its environment, in order
 *   string: u32 length, then the bytes (no NUL among them)
 *
 * The first byte carries four descriptors (SCM_RIGHTS): the working
 * directory (O_PATH), then descriptors 0, 1 and 2. The answer is one byte:
 * 'S' when an entry was stored, 'N' when none was.
 */
#ifndef SE_DECIDER_H
#define SE_DECIDER_H

#include <stddef.h>
#include <stdint.h>

/* The environment variable that names the decider's socket. */
#define SE_DECIDER_ENV "SANDBOX_EXECUTABLE_DECIDER"

#define SE_DECIDER_MAGIC 0x51444553u
#define SE_DECIDER_VERSION 1
/* The header's size: magic to nofile_max. */
#define SE_DECIDER_HEADER_SIZE 32
#define SE_DECIDER_MAX_REQUEST (4u << 20)
/* How long a run waits for the answer before it decides itself: a
 * decision takes milliseconds, a queue of them on a loaded machine less
 * than this; a decider stuck on a filesystem that hangs must not hold up
 * every first run for long (it ends itself: decider.go). */
#define SE_DECIDER_WAIT_SECONDS 2

/* se_decider_request encodes the request for argv[0..argc) and envp into
 * buf[0..cap); its length, or 0 when it does not fit (or exceeds
 * SE_DECIDER_MAX_REQUEST). With buf NULL it returns the length it needs. */
size_t se_decider_request(int argc, char **argv, char **envp, uint64_t nofile_cur, uint64_t nofile_max,
			  unsigned char *buf, size_t cap);

/* se_ask_decider sends this process's request to the decider listening at
 * path and waits for its answer: 1 when it stored an entry, 0 when it
 * answered that it stored none, -1 when it did not answer (none there, a
 * full queue, no answer in time). */
int se_ask_decider(const char *path, int argc, char **argv, char **envp);

#endif
