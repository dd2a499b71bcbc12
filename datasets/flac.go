package datasets

import (
	"errors"
	"fmt"
)

// DecodeFLAC decodes a FLAC stream (the format most hub speech datasets
// store clips in) into samples scaled to [-1, 1), as soundfile reads them:
// STREAMINFO for the rate, channels and depth, then every frame's
// subframes (constant, verbatim, fixed and LPC predictors with Rice-coded
// residuals) and the stereo decorrelation modes. Checksums are not
// verified; a truncated or malformed stream is an error.
func DecodeFLAC(b []byte) (PCM, error) {
	if len(b) < 4 || string(b[:4]) != "fLaC" {
		return PCM{}, errors.New("not a FLAC stream (no fLaC marker)")
	}
	off := 4
	var rate, channels, depth int
	for {
		if off+4 > len(b) {
			return PCM{}, errors.New("FLAC: truncated metadata")
		}
		last := b[off]&0x80 != 0
		typ := b[off] & 0x7f
		n := int(b[off+1])<<16 | int(b[off+2])<<8 | int(b[off+3])
		off += 4
		if off+n > len(b) {
			return PCM{}, errors.New("FLAC: truncated metadata block")
		}
		if typ == 0 {
			if n < 18 {
				return PCM{}, errors.New("FLAC: short STREAMINFO")
			}
			si := b[off : off+n]
			rate = int(si[10])<<12 | int(si[11])<<4 | int(si[12])>>4
			channels = int(si[12]>>1&7) + 1
			depth = (int(si[12]&1)<<4 | int(si[13])>>4) + 1
		}
		off += n
		if last {
			break
		}
	}
	if rate == 0 || depth < 4 || depth > 32 {
		return PCM{}, errors.New("FLAC: missing or invalid STREAMINFO")
	}
	p := PCM{Channels: channels, SampleRate: rate}
	scale := 1 / float64(int64(1)<<(depth-1))
	limit := flacMaxSamples(len(b))
	r := &bitReader{b: b, pos: off * 8}
	for r.pos/8 < len(b) {
		if len(b)-r.pos/8 < 2 {
			break
		}
		chans, err := flacFrame(r, channels, depth)
		if err != nil {
			return PCM{}, err
		}
		if len(p.Samples)+len(chans[0])*len(chans) > limit {
			return PCM{}, fmt.Errorf("FLAC: a stream of %d bytes decodes to more than %d samples; refusing it (a constant subframe can stand for 65,536 samples in a few bytes)", len(b), limit)
		}
		for i := range chans[0] {
			for c := range chans {
				p.Samples = append(p.Samples, float64(chans[c][i])*scale)
			}
		}
	}
	return p, nil
}

// flacMaxSamples bounds the samples (all channels) decoded from a
// stream of n bytes: speech compresses to about a byte a sample and
// silence far better, so 256 a byte with a floor of 4 Mi, and 128 Mi at
// most (about two hours of 16 kHz mono, 1 GiB as float64).
func flacMaxSamples(n int) int {
	return min(max(256*n, 1<<22), 1<<27)
}

// flacFrame decodes one frame into per-channel samples.
func flacFrame(r *bitReader, channels, depth int) ([][]int64, error) {
	r.align()
	if r.bits(14) != 0x3FFE {
		return nil, fmt.Errorf("FLAC: lost frame sync at byte %d", r.pos/8)
	}
	r.bits(2) // reserved, blocking strategy
	bsCode := r.bits(4)
	rateCode := r.bits(4)
	chanCode := int(r.bits(4))
	depthCode := r.bits(3)
	r.bits(1)
	// The UTF-8-like coded frame or sample number.
	first := r.bits(8)
	ones := 0
	for mask := uint64(0x80); mask != 0 && first&mask != 0; mask >>= 1 {
		ones++
	}
	for range max(ones-1, 0) {
		r.bits(8)
	}
	block := 0
	switch {
	case bsCode == 1:
		block = 192
	case bsCode >= 2 && bsCode <= 5:
		block = 576 << (bsCode - 2)
	case bsCode == 6:
		block = int(r.bits(8)) + 1
	case bsCode == 7:
		block = int(r.bits(16)) + 1
	case bsCode >= 8:
		block = 256 << (bsCode - 8)
	default:
		return nil, errors.New("FLAC: reserved block size")
	}
	switch rateCode {
	case 12:
		r.bits(8)
	case 13, 14:
		r.bits(16)
	}
	r.bits(8) // CRC-8
	switch depthCode {
	case 1:
		depth = 8
	case 2:
		depth = 12
	case 4:
		depth = 16
	case 5:
		depth = 20
	case 6:
		depth = 24
	case 7:
		depth = 32
	}
	n := channels
	if chanCode < 8 {
		n = chanCode + 1
	} else if chanCode <= 10 {
		n = 2
	} else {
		return nil, errors.New("FLAC: reserved channel assignment")
	}
	if n != channels {
		return nil, fmt.Errorf("FLAC: a frame has %d channels, the stream %d", n, channels)
	}
	out := make([][]int64, n)
	for c := range out {
		d := depth
		if (chanCode == 8 && c == 1) || (chanCode == 9 && c == 0) || (chanCode == 10 && c == 1) {
			d++ // the side channel has one more bit
		}
		s, err := flacSubframe(r, block, d)
		if err != nil {
			return nil, err
		}
		out[c] = s
	}
	switch chanCode {
	case 8: // left, side
		for i := range out[0] {
			out[1][i] = out[0][i] - out[1][i]
		}
	case 9: // side, right
		for i := range out[0] {
			out[0][i] += out[1][i]
		}
	case 10: // mid, side
		for i := range out[0] {
			mid, side := out[0][i]<<1|out[1][i]&1, out[1][i]
			out[0][i], out[1][i] = (mid+side)>>1, (mid-side)>>1
		}
	}
	r.align()
	r.bits(16) // CRC-16
	if r.err {
		return nil, errors.New("FLAC: truncated frame")
	}
	return out, nil
}

func flacSubframe(r *bitReader, block, depth int) ([]int64, error) {
	r.bits(1)
	typ := int(r.bits(6))
	wasted := 0
	if r.bits(1) == 1 {
		wasted = 1
		for r.bits(1) == 0 && !r.err {
			wasted++
		}
		depth -= wasted
	}
	s := make([]int64, block)
	switch {
	case typ == 0:
		v := r.signed(depth)
		for i := range s {
			s[i] = v
		}
	case typ == 1:
		for i := range s {
			s[i] = r.signed(depth)
		}
	case typ >= 8 && typ <= 12:
		order := typ - 8
		if order > block {
			return nil, errors.New("FLAC: predictor order above the block size")
		}
		for i := range order {
			s[i] = r.signed(depth)
		}
		if err := flacResidual(r, s, order); err != nil {
			return nil, err
		}
		fixed := [][]int64{{}, {1}, {2, -1}, {3, -3, 1}, {4, -6, 4, -1}}[order]
		for i := order; i < block; i++ {
			var pred int64
			for j, c := range fixed {
				pred += c * s[i-1-j]
			}
			s[i] += pred
		}
	case typ >= 32:
		order := typ - 31
		if order > block {
			return nil, errors.New("FLAC: predictor order above the block size")
		}
		for i := range order {
			s[i] = r.signed(depth)
		}
		precision := int(r.bits(4)) + 1
		if precision == 16 {
			return nil, errors.New("FLAC: invalid LPC precision")
		}
		shift := r.signed(5)
		if shift < 0 {
			return nil, errors.New("FLAC: negative LPC shift")
		}
		coefs := make([]int64, order)
		for i := range coefs {
			coefs[i] = r.signed(precision)
		}
		if err := flacResidual(r, s, order); err != nil {
			return nil, err
		}
		for i := order; i < block; i++ {
			var sum int64
			for j, c := range coefs {
				sum += c * s[i-1-j]
			}
			s[i] += sum >> shift
		}
	default:
		return nil, fmt.Errorf("FLAC: reserved subframe type %d", typ)
	}
	if wasted > 0 {
		for i := range s {
			s[i] <<= wasted
		}
	}
	if r.err {
		return nil, errors.New("FLAC: truncated subframe")
	}
	return s, nil
}

// flacResidual reads partitioned Rice-coded residuals into s[order:].
func flacResidual(r *bitReader, s []int64, order int) error {
	method := r.bits(2)
	if method > 1 {
		return errors.New("FLAC: reserved residual coding method")
	}
	paramBits, escape := 4, uint64(15)
	if method == 1 {
		paramBits, escape = 5, 31
	}
	parts := 1 << r.bits(4)
	if len(s)%parts != 0 || len(s)/parts < order {
		return errors.New("FLAC: invalid residual partitioning")
	}
	i := order
	for p := range parts {
		n := len(s) / parts
		if p == 0 {
			n -= order
		}
		param := r.bits(paramBits)
		if param == escape {
			bits := int(r.bits(5))
			for range n {
				s[i] = r.signed(bits)
				i++
			}
			continue
		}
		for range n {
			q := uint64(0)
			for r.bits(1) == 0 {
				if r.err {
					return errors.New("FLAC: truncated residual")
				}
				q++
			}
			u := q<<param | r.bits(int(param))
			s[i] = int64(u>>1) ^ -int64(u&1)
			i++
		}
	}
	return nil
}

// bitReader reads big-endian bit fields; reading past the end sets err
// and yields zeros.
type bitReader struct {
	b   []byte
	pos int
	err bool
}

func (r *bitReader) bits(n int) uint64 {
	var v uint64
	for range n {
		byteAt := r.pos >> 3
		if byteAt >= len(r.b) {
			r.err = true
			return v << 1
		}
		v = v<<1 | uint64(r.b[byteAt]>>(7-r.pos&7)&1)
		r.pos++
	}
	return v
}

func (r *bitReader) signed(n int) int64 {
	if n == 0 {
		return 0
	}
	v := r.bits(n)
	return int64(v<<(64-n)) >> (64 - n)
}

func (r *bitReader) align() { r.pos = (r.pos + 7) &^ 7 }
