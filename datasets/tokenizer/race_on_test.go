//go:build race

package tokenizer

// raceEnabled: the race detector makes sync.Pool drop entries, so
// allocation counts do not hold.
const raceEnabled = true
