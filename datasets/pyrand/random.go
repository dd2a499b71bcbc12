package pyrand

import (
	"errors"
	"math"
	"math/bits"
)

// Random is CPython's random.Random. Its zero value is not seeded; use
// NewRandom or Seed.
type Random struct {
	mt mt19937
}

// NewRandom returns a generator in the state random.Random(seed) has.
func NewRandom(seed int64) *Random {
	r := &Random{}
	r.Seed(seed)
	return r
}

// Seed is random.seed(seed) for an int: the absolute value's 32-bit words,
// least significant first, go through init_by_array (0 is the single word 0).
func (r *Random) Seed(seed int64) {
	u := uint64(seed)
	if seed < 0 {
		u = uint64(-seed) // two's complement gives |MinInt64| correctly
	}
	key := []uint32{uint32(u)}
	if hi := uint32(u >> 32); hi != 0 {
		key = append(key, hi)
	}
	r.mt.seedArray(key)
}

// Random is random.random(): a double in [0, 1) with 53 random bits.
func (r *Random) Random() float64 { return r.mt.float64() }

// GetRandBits is random.getrandbits(k) for 0 <= k <= 64. Words are drawn
// least significant first and the last one keeps its top bits, as CPython
// does.
func (r *Random) GetRandBits(k int) uint64 {
	switch {
	case k <= 0:
		return 0
	case k <= 32:
		return uint64(r.mt.uint32() >> (32 - k))
	case k <= 64:
		lo := uint64(r.mt.uint32())
		hi := uint64(r.mt.uint32() >> (64 - k))
		return lo | hi<<32
	}
	panic("pyrand: GetRandBits supports at most 64 bits")
}

// RandBelow is random._randbelow(n) for n > 0: getrandbits(n.bit_length())
// redrawn until it is below n.
func (r *Random) RandBelow(n int) int {
	if n <= 0 {
		panic("pyrand: RandBelow needs n > 0")
	}
	k := bits.Len64(uint64(n))
	for {
		if v := r.GetRandBits(k); v < uint64(n) {
			return int(v)
		}
	}
}

// RandInt is random.randint(a, b): an int in [a, b].
func (r *Random) RandInt(a, b int) int { return a + r.RandBelow(b-a+1) }

// Choice is the index random.choice(seq) picks from a sequence of length n.
func (r *Random) Choice(n int) int { return r.RandBelow(n) }

// Choices is the indices random.choices(seq, k=k) picks (no weights) from a
// sequence of length n: floor(random() * n) each.
func (r *Random) Choices(n, k int) []int {
	out := make([]int, k)
	fn := float64(n)
	for i := range out {
		out[i] = int(math.Floor(r.Random() * fn))
	}
	return out
}

// Shuffle is random.shuffle over a sequence of length n, calling swap the
// way the in-place Fisher–Yates loop of CPython swaps: i from n-1 down to 1
// with j = _randbelow(i+1).
func (r *Random) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.RandBelow(i+1))
	}
}

// ErrSampleSize is random.sample's "Sample larger than population or is
// negative".
var ErrSampleSize = errors.New("sample larger than population or is negative")

// Sample is the indices random.sample(range(n), k) returns, in order. It
// follows CPython's two strategies: a shrinking pool when n is small next to
// the set a large k would need, else rejection of repeats.
func (r *Random) Sample(n, k int) ([]int, error) {
	if k < 0 || k > n {
		return nil, ErrSampleSize
	}
	out := make([]int, k)
	setSize := 21 // size of a small set minus size of an empty list
	if k > 5 {
		setSize += int(math.Pow(4, math.Ceil(math.Log(float64(k*3))/math.Log(4))))
	}
	if n <= setSize {
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := range k {
			j := r.RandBelow(n - i)
			out[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return out, nil
	}
	selected := make(map[int]struct{}, k)
	for i := range k {
		j := r.RandBelow(n)
		for {
			if _, dup := selected[j]; !dup {
				break
			}
			j = r.RandBelow(n)
		}
		selected[j] = struct{}{}
		out[i] = j
	}
	return out, nil
}
