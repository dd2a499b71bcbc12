package datasets

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// timed_trace seeds one random.Random per "{hash_id}:{chunk}" key with
// hash(key) & 0xFFFFFFFF, and CPython's hash() of a str is keyed: the key
// comes from PYTHONHASHSEED, or from the OS's random source when it is unset
// or "random", so by default every Python process builds different prompts.
// pyStrHash reproduces that hash for a given PYTHONHASHSEED.
//
// CPython (Python/pyhash.c, Python/bootstrap_hash.c):
//   - the 24-byte secret is all zeros for PYTHONHASHSEED=0, else filled by
//     lcg_urandom(seed): x = x*214013 + 2531011 (mod 2**32), byte = x>>16;
//     SipHash's k0 and k1 are its first two little-endian 64-bit words;
//   - hash(str) is SipHash over the string's internal buffer: one byte per
//     character when every code point is below 256, two (UTF-16LE units,
//     no surrogate pairs) when below 65536, else four; "" hashes to 0 and a
//     result of -1 becomes -2;
//   - Python 3.11 and later use SipHash-1-3, 3.4–3.10 SipHash-2-4
//     (sys.hash_info.algorithm names them "siphash13" and "siphash24").
//
// Python's json module keeps lone surrogates ("\ud800") in a str; Go's
// decoder turns them into U+FFFD, so a hash id string holding one hashes
// differently here.

// Hash algorithm names, as sys.hash_info.algorithm spells them.
const (
	HashSipHash13 = "siphash13"
	HashSipHash24 = "siphash24"
)

// pyStrHash is hash() of a str in one CPython process.
type pyStrHash struct {
	k0, k1         uint64
	cRounds, final int // SipHash-c-d
}

// newPyStrHash keys the hash as a process started with PYTHONHASHSEED=seed
// does; seed nil is an unset PYTHONHASHSEED (a random key).
func newPyStrHash(seed *uint32, algorithm string) (pyStrHash, error) {
	var h pyStrHash
	switch algorithm {
	case "", HashSipHash13:
		h.cRounds, h.final = 1, 3
	case HashSipHash24:
		h.cRounds, h.final = 2, 4
	default:
		return h, fmt.Errorf("python hash algorithm %q: want %q (Python 3.11+) or %q (Python 3.10)", algorithm, HashSipHash13, HashSipHash24)
	}
	var secret [24]byte
	switch {
	case seed == nil:
		if _, err := rand.Read(secret[:]); err != nil {
			return h, fmt.Errorf("python hash secret: %w", err)
		}
	case *seed != 0:
		x := *seed
		for i := range secret {
			x = x*214013 + 2531011
			secret[i] = byte(x >> 16)
		}
	}
	h.k0 = binary.LittleEndian.Uint64(secret[0:8])
	h.k1 = binary.LittleEndian.Uint64(secret[8:16])
	return h, nil
}

// ParsePythonHashSeed reads PYTHONHASHSEED as CPython does: "" or "random"
// is nil (a random key per process), else a decimal integer in
// [0, 4294967295].
func ParsePythonHashSeed(s string) (*uint32, error) {
	if s == "" || s == "random" {
		return nil, nil
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("PYTHONHASHSEED %q: must be \"random\" or an integer in range [0; 4294967295]", s)
	}
	seed := uint32(v)
	return &seed, nil
}

// sum is hash(s) for a Python str s.
func (h pyStrHash) sum(s string) int64 {
	if s == "" {
		return 0
	}
	x := int64(h.sipHash(pyStrBuffer(s)))
	if x == -1 {
		return -2
	}
	return x
}

// pyStrBuffer is the bytes CPython hashes for s: its code points in the
// narrowest of Latin-1, UCS-2 or UCS-4, little-endian.
func pyStrBuffer(s string) []byte {
	maxRune := rune(0)
	n := 0
	for _, r := range s {
		maxRune = max(maxRune, r)
		n++
	}
	switch {
	case maxRune < 0x100:
		out := make([]byte, 0, n)
		for _, r := range s {
			out = append(out, byte(r))
		}
		return out
	case maxRune < 0x10000:
		out := make([]byte, 0, 2*n)
		for _, r := range s {
			out = binary.LittleEndian.AppendUint16(out, uint16(r))
		}
		return out
	default:
		out := make([]byte, 0, 4*n)
		for _, r := range s {
			out = binary.LittleEndian.AppendUint32(out, uint32(r))
		}
		return out
	}
}

// sipHash is SipHash-c-d with a 64-bit result over msg.
func (h pyStrHash) sipHash(msg []byte) uint64 {
	v0 := h.k0 ^ 0x736f6d6570736575
	v1 := h.k1 ^ 0x646f72616e646f6d
	v2 := h.k0 ^ 0x6c7967656e657261
	v3 := h.k1 ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v2 += v3
		v1 = bits.RotateLeft64(v1, 13) ^ v0
		v3 = bits.RotateLeft64(v3, 16) ^ v2
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v1
		v0 += v3
		v1 = bits.RotateLeft64(v1, 17) ^ v2
		v3 = bits.RotateLeft64(v3, 21) ^ v0
		v2 = bits.RotateLeft64(v2, 32)
	}
	compress := func(m uint64) {
		v3 ^= m
		for range h.cRounds {
			round()
		}
		v0 ^= m
	}
	size := len(msg)
	for len(msg) >= 8 {
		compress(binary.LittleEndian.Uint64(msg))
		msg = msg[8:]
	}
	last := uint64(size) << 56
	for i, b := range msg {
		last |= uint64(b) << (8 * i)
	}
	compress(last)
	v2 ^= 0xff
	for range h.final {
		round()
	}
	return v0 ^ v1 ^ v2 ^ v3
}
