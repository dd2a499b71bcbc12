package pyrand

// MT19937 parameters (Matsumoto & Nishimura, 1998).
const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

// mt19937 is the Mersenne Twister shared by CPython's random module and
// numpy's legacy RandomState; they differ only in how they seed it.
type mt19937 struct {
	state [mtN]uint32
	pos   int
}

// seedScalar is the reference init_genrand, which numpy.random.seed(int)
// uses directly.
func (m *mt19937) seedScalar(seed uint32) {
	m.state[0] = seed
	for i := 1; i < mtN; i++ {
		prev := m.state[i-1]
		m.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	m.pos = mtN
}

// seedArray is the reference init_by_array, which CPython's
// random.seed(int) uses with the integer's 32-bit words.
func (m *mt19937) seedArray(key []uint32) {
	m.seedScalar(19650218)
	mt := &m.state
	i, j := 1, 0
	k := max(mtN, len(key))
	for ; k > 0; k-- {
		mt[i] = (mt[i] ^ ((mt[i-1] ^ (mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= mtN {
			mt[0] = mt[mtN-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = mtN - 1; k > 0; k-- {
		mt[i] = (mt[i] ^ ((mt[i-1] ^ (mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= mtN {
			mt[0] = mt[mtN-1]
			i = 1
		}
	}
	mt[0] = 0x80000000
	m.pos = mtN
}

// twist regenerates the whole state block.
func (m *mt19937) twist() {
	mt := &m.state
	mag := func(y uint32) uint32 { return (y >> 1) ^ (mtMatrixA * (y & 1)) }
	kk := 0
	for ; kk < mtN-mtM; kk++ {
		y := (mt[kk] & mtUpperMask) | (mt[kk+1] & mtLowerMask)
		mt[kk] = mt[kk+mtM] ^ mag(y)
	}
	for ; kk < mtN-1; kk++ {
		y := (mt[kk] & mtUpperMask) | (mt[kk+1] & mtLowerMask)
		mt[kk] = mt[kk+mtM-mtN] ^ mag(y)
	}
	y := (mt[mtN-1] & mtUpperMask) | (mt[0] & mtLowerMask)
	mt[mtN-1] = mt[mtM-1] ^ mag(y)
	m.pos = 0
}

// uint32 returns the next tempered 32-bit output (genrand_uint32).
func (m *mt19937) uint32() uint32 {
	if m.pos >= mtN {
		m.twist()
	}
	y := m.state[m.pos]
	m.pos++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// float64 is genrand_res53: 27 + 26 bits of two outputs make a double in
// [0, 1). CPython's random() and numpy's legacy random_sample agree on it.
func (m *mt19937) float64() float64 {
	a := m.uint32() >> 5
	b := m.uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}
