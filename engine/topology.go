package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPU is one usable logical CPU and where it sits.
type CPU struct {
	ID   int
	Core int // lowest CPU ID among its SMT siblings: the physical core
	Node int // NUMA node, 0 when the system shows none
}

// Topology is the CPUs this process may run on: online CPUs within its
// affinity mask.
type Topology struct {
	CPUs []CPU
}

const sysCPU = "/sys/devices/system/cpu"
const sysNode = "/sys/devices/system/node"

// DetectTopology reads the online CPUs, SMT siblings and NUMA nodes from
// /sys and intersects them with the process's affinity mask.
func DetectTopology() (Topology, error) {
	var mask unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mask); err != nil {
		return Topology{}, fmt.Errorf("sched_getaffinity: %w", err)
	}
	allowed := func(cpu int) bool { return mask.IsSet(cpu) }
	return readTopology(sysCPU, sysNode, allowed)
}

// readTopology builds a Topology from sysfs-shaped directories, so tests
// can describe machines they do not run on.
func readTopology(cpuDir, nodeDir string, allowed func(int) bool) (Topology, error) {
	online, err := readCPUList(filepath.Join(cpuDir, "online"))
	if err != nil {
		return Topology{}, err
	}
	nodeOf := map[int]int{}
	nodes, _ := filepath.Glob(filepath.Join(nodeDir, "node[0-9]*"))
	for _, dir := range nodes {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue
		}
		cpus, err := readCPUList(filepath.Join(dir, "cpulist"))
		if err != nil {
			continue
		}
		for _, c := range cpus {
			nodeOf[c] = id
		}
	}
	var t Topology
	for _, id := range online {
		if !allowed(id) {
			continue
		}
		core := id
		siblings, err := readCPUList(filepath.Join(cpuDir, "cpu"+strconv.Itoa(id), "topology", "thread_siblings_list"))
		if err == nil && len(siblings) > 0 {
			core = slices.Min(siblings)
		}
		t.CPUs = append(t.CPUs, CPU{ID: id, Core: core, Node: nodeOf[id]})
	}
	if len(t.CPUs) == 0 {
		return Topology{}, fmt.Errorf("no usable CPU: none of the online CPUs %v is in the affinity mask", online)
	}
	return t, nil
}

// Placement orders CPUs for shards: one CPU per physical core first,
// taking nodes in turn (node 0's first core, node 1's first core, node 0's
// second core, ...), so shards spread over NUMA nodes and never share a core
// while a free core is left; then the remaining SMT siblings in the same
// order.
func (t Topology) Placement() []int {
	byNode := map[int][]CPU{}
	var nodeIDs []int
	for _, c := range t.CPUs {
		if _, ok := byNode[c.Node]; !ok {
			nodeIDs = append(nodeIDs, c.Node)
		}
		byNode[c.Node] = append(byNode[c.Node], c)
	}
	slices.Sort(nodeIDs)
	var first, rest [][]int
	for _, n := range nodeIDs {
		seen := map[int]bool{}
		var f, r []int
		for _, c := range byNode[n] {
			if seen[c.Core] {
				r = append(r, c.ID)
			} else {
				seen[c.Core] = true
				f = append(f, c.ID)
			}
		}
		first = append(first, f)
		rest = append(rest, r)
	}
	return append(interleave(first), interleave(rest)...)
}

// Cores returns the number of physical cores among the usable CPUs.
func (t Topology) Cores() int {
	seen := map[int]bool{}
	for _, c := range t.CPUs {
		seen[c.Core] = true
	}
	return len(seen)
}

func interleave(lists [][]int) []int {
	var out []int
	for i := 0; ; i++ {
		added := false
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// readCPUList parses a sysfs CPU list such as "0-3,8,10-11".
func readCPUList(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	if s == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("malformed CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("malformed CPU list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
