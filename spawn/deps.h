/*
 * The dependency verifier: checks that what a decision read from the
 * filesystem (recorded by package fsdeps, in the format below) is still as
 * it was, by making each call again. It runs in a constructor before the Go
 * runtime starts, so it uses plain libc calls only: no allocation, no
 * stdio, nothing printed. One system call per dependency where possible (a
 * directory listing is checked by one stat of the directory, a regular
 * file's read by one stat); a kernel file's content takes an open, its
 * reads and a close.
 *
 * Format (fsdeps/encode.go says the same). Little-endian, unaligned.
 *
 *   header, 16 bytes:
 *     u32 magic     0x50444553 ("SEDP")
 *     u16 version   1
 *     u16 reserved  0
 *     u32 count     number of records
 *     u32 size      size of the whole encoding, header included (== len)
 *   record:
 *     u8  kind      SE_DEP_*
 *     u8  flags     SE_DEP_NOFOLLOW (file reads), SE_DEP_CTIME (lstat); no other bit
 *     u16 reserved  0
 *     i32 errno     0: the call succeeded; else 1..4095, and no result follows
 *     u32 path_len  0..4095
 *     path          path_len bytes, no NUL
 *     result        when errno is 0, by kind:
 *       LSTAT, STAT   u32 mode, u32 uid, u32 gid, u64 dev, u64 ino, u64 rdev
 *                     [SE_DEP_CTIME: i64 ctime_sec, i64 ctime_nsec]
 *       READLINK      u32 len (1..4095), target
 *       READDIR       u64 dev, u64 ino, i64 mtime_sec, i64 mtime_nsec
 *       FILE_META     u64 dev, u64 ino, i64 size, i64 mtime_sec, i64 mtime_nsec,
 *                     i64 ctime_sec, i64 ctime_nsec
 *       FILE_CONTENT  u32 len (0..16 MiB), content
 *       STATFS        i64 f_type
 *
 * How each is checked again:
 *   LSTAT, STAT    lstat/stat: the same errno, else the same st_mode (type
 *                  and permission bits), dev, ino, uid, gid, rdev (and ctime);
 *   READLINK       readlink: the same errno, else the same target;
 *   READDIR        failed: open(O_RDONLY|O_DIRECTORY) fails the same way;
 *                  else stat: a directory with the same dev, ino and mtime;
 *   FILE_META      failed: open(O_RDONLY|O_NONBLOCK|O_NOCTTY[|O_NOFOLLOW])
 *                  fails the same way; else stat (lstat with NOFOLLOW): a
 *                  regular file with the same dev, ino, size, mtime, ctime;
 *   FILE_CONTENT   open as above: the same errno, else the same bytes to EOF;
 *   STATFS         statfs: the same errno, else the same f_type.
 */
#ifndef SE_DEPS_H
#define SE_DEPS_H

#include <stddef.h>
#include <stdint.h>

#define SE_DEPS_MAGIC 0x50444553u
#define SE_DEPS_VERSION 1

enum se_dep_kind {
	SE_DEP_LSTAT = 1,
	SE_DEP_STAT = 2,
	SE_DEP_READLINK = 3,
	SE_DEP_READDIR = 4,
	SE_DEP_FILE_META = 5,
	SE_DEP_FILE_CONTENT = 6,
	SE_DEP_STATFS = 7,
};

#define SE_DEP_NOFOLLOW 1u
#define SE_DEP_CTIME 2u

/* Why a check failed (se_deps_check_ex). */
enum se_deps_reason {
	SE_DEPS_OK = 0,
	SE_DEPS_MALFORMED = 1, /* the encoding is not one fsdeps makes */
	SE_DEPS_ERRNO = 2,     /* the call failed where it succeeded, or otherwise */
	SE_DEPS_CHANGED = 3,   /* the call succeeded with another answer */
	SE_DEPS_IO = 4,        /* a content read failed */
};

/*
 * se_deps_check returns 1 when every dependency in buf[0..len) still holds,
 * 0 on the first that does not or when buf is malformed (everything is
 * bounds-checked, however authenticated buf is).
 */
int se_deps_check(const unsigned char *buf, size_t len);

/*
 * se_deps_check_ex is se_deps_check that says, when it returns 0, which
 * record failed (*index, -1 for the header or for bytes after the last
 * record) and why (*reason, an se_deps_reason); either pointer may be NULL.
 */
int se_deps_check_ex(const unsigned char *buf, size_t len, long *index, int *reason);

#endif
