package fsdeps

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// The binary format, which the C verifier reads (spawn/deps.c, the one
// reader; spawn/deps.h says the same). All
// integers are little-endian; nothing is aligned.
//
//	header, 16 bytes:
//	  u32 magic     0x50444553 ("SEDP")
//	  u16 version   1
//	  u16 reserved  0
//	  u32 count     number of records
//	  u32 size      size of the whole encoding, header included
//	record:
//	  u8  kind      Kind
//	  u8  flags     FlagNoFollow (file reads), FlagCtime (lstat); no other bit
//	  u16 reserved  0
//	  i32 errno     0: the call succeeded; else 1..4095, and no result follows
//	  u32 path_len  0..MaxPath
//	  path          path_len bytes, no NUL
//	  result        when errno is 0, by kind:
//	    lstat, stat    u32 mode, u32 uid, u32 gid, u64 dev, u64 ino, u64 rdev
//	                   [FlagCtime: i64 ctime_sec, i64 ctime_nsec]
//	    readlink       u32 len (1..MaxPath), target
//	    readdir        u64 dev, u64 ino, i64 mtime_sec, i64 mtime_nsec
//	    file meta      u64 dev, u64 ino, i64 size, i64 mtime_sec, i64 mtime_nsec,
//	                   i64 ctime_sec, i64 ctime_nsec
//	    file content   u32 len (0..MaxData), content
//	    statfs         i64 f_type
const (
	// Magic opens an encoding ("SEDP" in its bytes).
	Magic uint32 = 0x50444553
	// Version is the format's version; a verifier refuses any other.
	Version uint16 = 1
	// MaxPath bounds a path and a link's target (PATH_MAX less its NUL).
	MaxPath = 4095
	// MaxData bounds a recorded content.
	MaxData = 1 << 24
	// MaxErrno bounds a recorded errno.
	MaxErrno = 4095
)

const headerSize = 16

func itoa(n int) string { return strconv.Itoa(n) }

// Encode is deps in the binary format above. A dependency the format
// cannot hold (a path too long or with a NUL, which the recording calls
// never record) makes it fail.
func Encode(deps []Dep) ([]byte, error) {
	b := make([]byte, headerSize, 64*len(deps)+headerSize)
	for i := range deps {
		if err := valid(&deps[i]); err != nil {
			return nil, errors.New("fsdeps: dependency " + itoa(i) + " (" + deps[i].String() + "): " + err.Error())
		}
		b = encodeDep(b, &deps[i])
	}
	binary.LittleEndian.PutUint32(b[0:], Magic)
	binary.LittleEndian.PutUint16(b[4:], Version)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(deps)))
	binary.LittleEndian.PutUint32(b[12:], uint32(len(b)))
	return b, nil
}

func valid(d *Dep) error {
	switch {
	case d.Kind < KindLstat || d.Kind > KindStatfs:
		return errors.New("unknown kind")
	case d.Flags&^allowedFlags(d.Kind) != 0:
		return errors.New("flags not allowed for the kind")
	case len(d.Path) > MaxPath || hasNUL(d.Path):
		return errors.New("path too long or with a NUL byte")
	case d.Errno > MaxErrno:
		return errors.New("errno out of range")
	case d.Errno != 0:
		return nil
	case d.Kind == KindReadlink && (len(d.Data) == 0 || len(d.Data) > MaxPath):
		return errors.New("link target empty or too long")
	case d.Kind == KindFileContent && len(d.Data) > MaxData:
		return errors.New("content too long")
	}
	return nil
}

func allowedFlags(k Kind) uint8 {
	switch k {
	case KindLstat:
		return FlagCtime
	case KindFileMeta, KindFileContent:
		return FlagNoFollow
	}
	return 0
}

func hasNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// encodeDep appends one record.
func encodeDep(b []byte, d *Dep) []byte {
	le := binary.LittleEndian
	b = append(b, byte(d.Kind), d.Flags, 0, 0)
	b = le.AppendUint32(b, uint32(int32(d.Errno)))
	b = le.AppendUint32(b, uint32(len(d.Path)))
	b = append(b, d.Path...)
	if d.Errno != 0 {
		return b
	}
	i64 := func(v int64) { b = le.AppendUint64(b, uint64(v)) }
	switch d.Kind {
	case KindLstat, KindStat:
		b = le.AppendUint32(b, d.Mode)
		b = le.AppendUint32(b, d.UID)
		b = le.AppendUint32(b, d.GID)
		b = le.AppendUint64(b, d.Dev)
		b = le.AppendUint64(b, d.Ino)
		b = le.AppendUint64(b, d.Rdev)
		if d.Flags&FlagCtime != 0 {
			i64(d.Ctime.Sec)
			i64(d.Ctime.Nsec)
		}
	case KindReadlink, KindFileContent:
		b = le.AppendUint32(b, uint32(len(d.Data)))
		b = append(b, d.Data...)
	case KindReadDir:
		b = le.AppendUint64(b, d.Dev)
		b = le.AppendUint64(b, d.Ino)
		i64(d.Mtime.Sec)
		i64(d.Mtime.Nsec)
	case KindFileMeta:
		b = le.AppendUint64(b, d.Dev)
		b = le.AppendUint64(b, d.Ino)
		i64(d.Size)
		i64(d.Mtime.Sec)
		i64(d.Mtime.Nsec)
		i64(d.Ctime.Sec)
		i64(d.Ctime.Nsec)
	case KindStatfs:
		i64(d.FsType)
	}
	return b
}
