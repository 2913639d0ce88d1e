/*
 * Confinement for the harnesses whose code under test touches the
 * filesystem: the dependency check makes the calls its records name
 * (stat, open and read of any path), and the store lookup reads its state
 * directory. A fuzzer makes up those paths, so they must reach nothing of
 * the host's that an open or a read could disturb (a device node, a FIFO
 * another process writes, /proc/kmsg).
 */
#ifndef SE_FUZZ_CONFINE_H
#define SE_FUZZ_CONFINE_H

/* se_fuzz_confine moves the harness into a mount and a PID namespace of
 * its own (and a user namespace when it is not root). The run goes on in
 * a child, the PID namespace's first process; this process waits for it
 * and exits as it did. The child's root is an empty tmpfs (nodev, nosuid,
 * noexec) that goes with it, holding only what libFuzzer and the
 * sanitizers need: read-only binds of /usr, /bin, /lib and /lib64, the
 * PID namespace's /proc, /dev/null, and the working directory and the
 * directories argv names (the corpus, the artifacts) bound read-write at
 * their own paths; fixture, when not NULL, then makes the harness's own
 * files under the new root, whose path it is given. The working directory
 * stays. Any failure ends the process with a message: a harness never
 * runs unconfined. A process that a confined harness starts (libFuzzer's
 * -merge) finds itself in the root already and stays as it is. */
void se_fuzz_confine(int argc, char **argv, void (*fixture)(const char *root));

#endif
