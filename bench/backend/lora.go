package backend

import (
	"fmt"

	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// LoRAAdapters is the adapter each of n requests is sent to with
// --lora-modules (spec §c): "round-robin" gives request i modules[i % len];
// "random" calls Python's random.choice(modules) once per request, in
// request order, on the process-global random (after the dataset has used
// it, as in Python). The adapter name becomes the request's "model"
// (BodyParams.ModelName). No modules means no adapters (nil).
func LoRAAdapters(modules []string, assignment string, n int, global *pyrand.Random) ([]string, error) {
	if len(modules) == 0 {
		return nil, nil
	}
	out := make([]string, n)
	switch assignment {
	case "round-robin":
		for i := range out {
			out[i] = modules[i%len(modules)]
		}
	case "random":
		for i := range out {
			out[i] = modules[global.Choice(len(modules))]
		}
	default:
		return nil, fmt.Errorf("--lora-assignment %q: want random or round-robin", assignment)
	}
	return out, nil
}
