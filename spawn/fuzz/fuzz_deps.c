/*
 * The dependency check (se_deps_check_ex, deps.c): the warm path reads
 * back what a decision read from the filesystem and makes each call again
 * before the Go runtime starts. The encoding must be refused when it is
 * not one fsdeps makes, and no record may take the check past its bytes.
 *
 * The calls are real (stat, readlink, open and read of the paths the
 * records name), so the harness runs confined (confine.h): its root holds
 * the fixture below, the system's read-only directories, the process's own
 * /proc entry and the working tree; nothing a fuzzed path could disturb.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "confine.h"
#include "deps.h"

/* fixture makes a small tree of each kind of file a record can name:
 * /f a file, /e an empty one, /d a directory with /d/x, /l a link to f,
 * /dl a link to d, /n a dangling link, /p a FIFO (opened non-blocking, it
 * reads empty), /r a file no one may read. */
static void fixture(const char *root)
{
	char p[4096];
	int fd;
#define AT(name) (snprintf(p, sizeof p, "%s/%s", root, name), p)
	CHECK((fd = open(AT("f"), O_WRONLY | O_CREAT | O_EXCL, 0644)) >= 0);
	CHECK(write(fd, "sandbox-executable\n", 19) == 19);
	close(fd);
	CHECK((fd = open(AT("e"), O_WRONLY | O_CREAT | O_EXCL, 0644)) >= 0);
	close(fd);
	CHECK(mkdir(AT("d"), 0755) == 0);
	CHECK((fd = open(AT("d/x"), O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
	close(fd);
	CHECK(symlink("f", AT("l")) == 0);
	CHECK(symlink("d", AT("dl")) == 0);
	CHECK(symlink("nowhere", AT("n")) == 0);
	CHECK(mkfifo(AT("p"), 0644) == 0);
	CHECK((fd = open(AT("r"), O_WRONLY | O_CREAT | O_EXCL, 0)) >= 0);
	close(fd);
#undef AT
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	se_fuzz_confine(*argc, *argv, fixture);
	return 0;
}

/* count is the header's record count (the check has accepted the header). */
static long count(const uint8_t *d)
{
	return (long)((uint32_t)d[8] | (uint32_t)d[9] << 8 | (uint32_t)d[10] << 16 | (uint32_t)d[11] << 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	long index = -2;
	int reason = -1;
	int ok = se_deps_check_ex(data, size, &index, &reason);
	if (ok) {
		CHECK(ok == 1 && index == -1 && reason == SE_DEPS_OK);
		CHECK(size >= 16);
		return 0;
	}
	CHECK(ok == 0 && reason >= SE_DEPS_MALFORMED && reason <= SE_DEPS_IO);
	/* A call's answer differs only for a record of a well-formed
	 * encoding; -1 (the header, trailing bytes) is malformed. */
	CHECK(index >= -1);
	if (reason != SE_DEPS_MALFORMED)
		CHECK(index >= 0);
	if (index >= 0)
		CHECK(size >= 16 && index < count(data));
	return 0;
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

/* Half the time the mutator keeps the header's size (bytes 12..16) equal
 * to the input's length: most mutations change the length, and the check
 * refuses an encoding whose size disagrees before it reads any record. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	size = LLVMFuzzerMutate(data, size, max);
	if ((seed & 1) && size >= 16) {
		data[12] = (uint8_t)size;
		data[13] = (uint8_t)(size >> 8);
		data[14] = (uint8_t)(size >> 16);
		data[15] = (uint8_t)(size >> 24);
	}
	return size;
}
