package fsdeps

import (
	"encoding/binary"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// The binary format (spawn/deps.h says the same for the C verifier). All
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
//	  args          KindFaccessat only: u32 mode, i32 flags
//	  result        when errno is 0, by kind:
//	    lstat, stat    u32 mode, u32 uid, u32 gid, u64 dev, u64 ino, u64 rdev
//	                   [FlagCtime: i64 ctime_sec, i64 ctime_nsec]
//	    readlink       u32 len (1..MaxPath), target
//	    readdir        u64 dev, u64 ino, i64 mtime_sec, i64 mtime_nsec
//	    file meta      u64 dev, u64 ino, i64 size, i64 mtime_sec, i64 mtime_nsec,
//	                   i64 ctime_sec, i64 ctime_nsec
//	    file content   u32 len (0..MaxData), content
//	    statfs         i64 f_type
//	    faccessat      nothing
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
	case d.Kind < KindLstat || d.Kind > KindFaccessat:
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
	if d.Kind == KindFaccessat {
		b = le.AppendUint32(b, d.AccessMode)
		b = le.AppendUint32(b, uint32(d.AccessFlags))
	}
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

// errMalformed is Decode's answer to anything but an encoding of Encode's.
var errMalformed = errors.New("fsdeps: malformed dependency list")

// Decode parses an encoding of Encode's, as strictly as the C verifier.
func Decode(b []byte) ([]Dep, error) {
	le := binary.LittleEndian
	if len(b) < headerSize || le.Uint32(b[0:]) != Magic || le.Uint16(b[4:]) != Version || le.Uint16(b[6:]) != 0 ||
		int(le.Uint32(b[12:])) != len(b) {
		return nil, errMalformed
	}
	count := le.Uint32(b[8:])
	r := reader{b: b[headerSize:]}
	var out []Dep
	for i := uint32(0); i < count; i++ {
		var d Dep
		d.Kind = Kind(r.u8())
		d.Flags = r.u8()
		if r.u16() != 0 || d.Kind < KindLstat || d.Kind > KindFaccessat || d.Flags&^allowedFlags(d.Kind) != 0 {
			return nil, errMalformed
		}
		errno := int32(r.u32())
		if errno < 0 || errno > MaxErrno {
			return nil, errMalformed
		}
		d.Errno = unix.Errno(errno)
		n := r.u32()
		if n > MaxPath {
			return nil, errMalformed
		}
		d.Path = string(r.bytes(int(n)))
		if hasNUL(d.Path) {
			return nil, errMalformed
		}
		if d.Kind == KindFaccessat {
			d.AccessMode = r.u32()
			d.AccessFlags = int32(r.u32())
		}
		if d.Errno == 0 {
			switch d.Kind {
			case KindLstat, KindStat:
				d.Mode, d.UID, d.GID = r.u32(), r.u32(), r.u32()
				d.Dev, d.Ino, d.Rdev = r.u64(), r.u64(), r.u64()
				if d.Flags&FlagCtime != 0 {
					d.Ctime = Timespec{int64(r.u64()), int64(r.u64())}
				}
			case KindReadlink, KindFileContent:
				n := r.u32()
				if (d.Kind == KindReadlink && (n == 0 || n > MaxPath)) || n > MaxData {
					return nil, errMalformed
				}
				d.Data = string(r.bytes(int(n)))
			case KindReadDir:
				d.Dev, d.Ino = r.u64(), r.u64()
				d.Mtime = Timespec{int64(r.u64()), int64(r.u64())}
			case KindFileMeta:
				d.Dev, d.Ino, d.Size = r.u64(), r.u64(), int64(r.u64())
				d.Mtime = Timespec{int64(r.u64()), int64(r.u64())}
				d.Ctime = Timespec{int64(r.u64()), int64(r.u64())}
			case KindStatfs:
				d.FsType = int64(r.u64())
			}
		}
		if r.bad {
			return nil, errMalformed
		}
		out = append(out, d)
	}
	if len(r.b) != 0 {
		return nil, errMalformed
	}
	return out, nil
}

// reader takes little-endian values off b; past its end, bad is set and
// zeros come back.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if n > len(r.b) {
		r.bad, r.b = true, nil
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8   { return r.bytes(1)[0] }
func (r *reader) u16() uint16 { return binary.LittleEndian.Uint16(r.bytes(2)) }
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.bytes(4)) }
func (r *reader) u64() uint64 { return binary.LittleEndian.Uint64(r.bytes(8)) }
