package engine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		bad  bool
	}{
		{"0", []int{0}, false},
		{"0-3", []int{0, 1, 2, 3}, false},
		{"0,2,4-5", []int{0, 2, 4, 5}, false},
		{"", nil, false},
		{"3-1", nil, true},
		{"a", nil, true},
		{"1-", nil, true},
	}
	for _, c := range cases {
		got, err := parseCPUList(c.in)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

// fakeSys writes a sysfs tree: 2 NUMA nodes × 2 cores × 2 SMT threads,
// CPUs numbered like Linux does (siblings n and n+4).
func fakeSys(t *testing.T) (cpuDir, nodeDir string) {
	root := t.TempDir()
	cpuDir, nodeDir = filepath.Join(root, "cpu"), filepath.Join(root, "node")
	write := func(path, s string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(cpuDir, "online"), "0-7")
	siblings := []string{"0,4", "1,5", "2,6", "3,7", "0,4", "1,5", "2,6", "3,7"}
	for cpu, s := range siblings {
		write(filepath.Join(cpuDir, "cpu"+string(rune('0'+cpu)), "topology", "thread_siblings_list"), s)
	}
	write(filepath.Join(nodeDir, "node0", "cpulist"), "0-1,4-5")
	write(filepath.Join(nodeDir, "node1", "cpulist"), "2-3,6-7")
	return cpuDir, nodeDir
}

func TestTopologyPlacement(t *testing.T) {
	cpuDir, nodeDir := fakeSys(t)
	topo, err := readTopology(cpuDir, nodeDir, func(int) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.Cores(); got != 4 {
		t.Errorf("cores %d; want 4", got)
	}
	// Physical cores first, alternating nodes; then SMT siblings.
	if got, want := topo.Placement(), []int{0, 2, 1, 3, 4, 6, 5, 7}; !slices.Equal(got, want) {
		t.Errorf("placement %v; want %v", got, want)
	}

	// An affinity mask of CPUs 1, 2 and 6 leaves 2 cores.
	masked, err := readTopology(cpuDir, nodeDir, func(c int) bool { return c == 1 || c == 2 || c == 6 })
	if err != nil {
		t.Fatal(err)
	}
	if got := masked.Cores(); got != 2 {
		t.Errorf("masked cores %d; want 2", got)
	}
	if got, want := masked.Placement(), []int{1, 2, 6}; !slices.Equal(got, want) {
		t.Errorf("masked placement %v; want %v", got, want)
	}

	if _, err := readTopology(cpuDir, nodeDir, func(int) bool { return false }); err == nil {
		t.Error("empty affinity mask accepted")
	}
}

func TestDetectTopologyOnThisMachine(t *testing.T) {
	topo, err := DetectTopology()
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.CPUs) == 0 || topo.Cores() == 0 || len(topo.Placement()) != len(topo.CPUs) {
		t.Errorf("topology %+v", topo)
	}
}
