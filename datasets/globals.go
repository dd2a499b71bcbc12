package datasets

import (
	"fmt"

	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// PythonGlobals are the two process-wide generators `vllm bench serve`
// shares between its datasets and its scheduler: Python's `random` module
// and numpy's global `numpy.random`. main seeds both with --seed before
// sampling; file datasets reseed and shuffle with Random, prefix_repetition
// reseeds both, and afterwards the arrival gaps come from NumPy (gamma) and
// random LoRA picks from Random. Passing the same PythonGlobals through the
// whole run keeps those later draws identical to Python's.
type PythonGlobals struct {
	Random *pyrand.Random
	NumPy  *pyrand.RandomState
}

// NewPythonGlobals is `random.seed(seed); numpy.random.seed(seed)`.
// numpy accepts only seeds in [0, 2**32).
func NewPythonGlobals(seed int64) (PythonGlobals, error) {
	if seed < 0 || seed > 1<<32-1 {
		return PythonGlobals{}, fmt.Errorf("--seed %d: Seed must be between 0 and 2**32 - 1", seed)
	}
	return PythonGlobals{Random: pyrand.NewRandom(seed), NumPy: pyrand.NewRandomState(uint32(seed))}, nil
}

// orPrivate returns g, or fresh generators seeded with seed when g is unset.
func (g PythonGlobals) orPrivate(seed int64) PythonGlobals {
	if g.Random == nil {
		g.Random = pyrand.NewRandom(seed)
	}
	if g.NumPy == nil {
		g.NumPy = pyrand.NewRandomState(uint32(seed))
	}
	return g
}

// shuffleRows is the load_data step of the file datasets: Python's global
// random (a private generator when g has none) reseeded with seed, then
// random.shuffle(rows) unless disableShuffle. It returns that generator,
// which oversampling draws from next.
func shuffleRows[T any](g PythonGlobals, seed int64, disableShuffle bool, rows []T) *pyrand.Random {
	random := g.orPrivate(seed).Random
	random.Seed(seed)
	if !disableShuffle {
		random.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	return random
}

// sampleTarget is CustomDataset.sample's request count: numPrompts, or
// every one of the rows when numPrompts is not positive.
func sampleTarget(numPrompts, rows int) int {
	if numPrompts <= 0 {
		return rows
	}
	return numPrompts
}
