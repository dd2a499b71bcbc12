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
	pick, err := LoRAPicker(modules, assignment, global)
	if pick == nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		out[i] = pick(i)
	}
	return out, nil
}

// LoRAPicker is LoRAAdapters one request at a time, for requests built as
// they are sampled: pick(i) is request i's adapter, and must be called for
// i = 0, 1, 2, ... in order ("random" draws as it goes). No modules means
// no picker (nil).
func LoRAPicker(modules []string, assignment string, global *pyrand.Random) (pick func(i int) string, err error) {
	if len(modules) == 0 {
		return nil, nil
	}
	switch assignment {
	case "round-robin":
		return func(i int) string { return modules[i%len(modules)] }, nil
	case "random":
		return func(int) string { return modules[global.Choice(len(modules))] }, nil
	}
	return nil, fmt.Errorf("--lora-assignment %q: want random or round-robin", assignment)
}
