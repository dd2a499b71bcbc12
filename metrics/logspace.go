package metrics

import (
	"fmt"

	"github.com/stampede-bench/stampede/internal/scratch"
)

// EstimateLogBytes is about how many bytes the record log of requests
// that generate outputTokens tokens in all takes on disk at the most: a
// record is some 48 bytes and 3–4 a gap (a gap of up to 268 ms is a 4-byte
// varint), text about 6 bytes a token when kept, and sorting holds the
// log twice (the records, and their buckets or the sorted log).
func EstimateLogBytes(requests int, outputTokens int64, keepText bool) int64 {
	perToken := int64(4)
	if keepText {
		perToken += 6
	}
	return 2 * (int64(requests)*48 + outputTokens*perToken)
}

// CheckLogSpace fails when dir (os.TempDir() when "") has less free space
// than a log of about need bytes takes, beyond what stays in memory:
// before the clock starts, when it can still be fixed. where names the
// setting that chose dir, for the message.
func CheckLogSpace(cfg LogConfig, need int64, where string) error {
	cfg = cfg.withDefaults()
	if need <= cfg.MemoryBytes {
		return nil
	}
	free, err := scratch.FreeBytes(cfg.Dir)
	if err != nil {
		return fmt.Errorf("record log: %s (%s): %w", cfg.Dir, where, err)
	}
	if free < need {
		return fmt.Errorf("record log: this run's records need about %s on disk in %s (%s), and %s is free: "+
			"free some space there or point %s at a larger disk",
			byteText(need), cfg.Dir, where, byteText(free), where)
	}
	return nil
}

func byteText(b int64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(b)/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(b)/1e6)
	}
	return fmt.Sprintf("%d bytes", b)
}
