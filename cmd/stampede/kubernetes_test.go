package main

import (
	"bytes"
	"cmp"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/cluster"
)

// These tests hold deploy/kubernetes together: every manifest decodes
// strictly into the Kubernetes API types (an unknown or misspelt field is
// an error), and the pieces agree with each other and with stampede's own
// flags: the Job's pod name and the headless Service make --coordinator's
// host, the ports match, the index comes from the Indexed Job, and the
// whole command line parses.

const deployDir = "../../deploy/kubernetes"

// kustomization is the part of kustomization.yaml the base uses; decoded
// strictly, so a field the base does not expect fails the test.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
	ConfigMapGenerator []struct {
		Name     string   `json:"name"`
		Literals []string `json:"literals"`
		Options  struct {
			DisableNameSuffixHash bool `json:"disableNameSuffixHash"`
		} `json:"options"`
	} `json:"configMapGenerator"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
	Replacements []struct {
		Source struct {
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			FieldPath string `json:"fieldPath"`
		} `json:"source"`
		Targets []struct {
			Select struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"select"`
			FieldPaths []string `json:"fieldPaths"`
		} `json:"targets"`
	} `json:"replacements"`
	Patches []struct {
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

type jsonPatchOp struct {
	Op    string   `json:"op"`
	Path  string   `json:"path"`
	Value []string `json:"value"`
}

func decodeStrict(t *testing.T, name string, out any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// deployment is the base's manifests, decoded.
type deployment struct {
	k       kustomization
	job     batchv1.Job
	svc     corev1.Service
	size    string   // CLUSTER_SIZE
	args    []string // the benchmark's flags, from the patch
	command []string
}

func loadDeployment(t *testing.T) *deployment {
	t.Helper()
	d := &deployment{}
	decodeStrict(t, "kustomization.yaml", &d.k)
	decodeStrict(t, "job.yaml", &d.job)
	decodeStrict(t, "service.yaml", &d.svc)
	if got := strings.Join(d.k.Resources, ","); got != "service.yaml,job.yaml" {
		t.Errorf("kustomization resources %s", got)
	}
	for _, g := range d.k.ConfigMapGenerator {
		for _, lit := range g.Literals {
			if v, ok := strings.CutPrefix(lit, "CLUSTER_SIZE="); ok && g.Name == "stampede-cluster" {
				d.size = v
			}
		}
		if !g.Options.DisableNameSuffixHash {
			t.Errorf("configMap %s gets a hashed name, which the Job's configMapKeyRef would miss", g.Name)
		}
	}
	if len(d.k.Patches) != 1 {
		t.Fatalf("%d patches, want the one with the benchmark's flags", len(d.k.Patches))
	}
	var ops []jsonPatchOp
	if err := yaml.UnmarshalStrict([]byte(d.k.Patches[0].Patch), &ops); err != nil {
		t.Fatalf("the flags patch: %v", err)
	}
	if len(ops) != 1 || ops[0].Op != "replace" || ops[0].Path != "/spec/template/spec/containers/0/args" {
		t.Fatalf("the flags patch is %+v, want one replace of the container's args", ops)
	}
	if p := d.k.Patches[0].Target; p.Kind != "Job" || p.Name != d.job.Name {
		t.Errorf("the flags patch targets %s %s, not the Job %s", p.Kind, p.Name, d.job.Name)
	}
	d.args = ops[0].Value
	if n := len(d.job.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
	d.command = d.job.Spec.Template.Spec.Containers[0].Command
	return d
}

func TestKubernetesIndexedJob(t *testing.T) {
	d := loadDeployment(t)
	job, spec := &d.job, &d.job.Spec.Template.Spec
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed (it sets JOB_COMPLETION_INDEX)", job.Spec.CompletionMode)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		t.Errorf("backoffLimit %v, want 0: a retried agent would send its share again, at another time", job.Spec.BackoffLimit)
	}
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s, want Never", spec.RestartPolicy)
	}
	// parallelism and completions both come from CLUSTER_SIZE.
	if n, err := strconv.Atoi(d.size); err != nil || n < 2 {
		t.Fatalf("CLUSTER_SIZE %q: want a number of agents above 1", d.size)
	}
	var targets []string
	for _, r := range d.k.Replacements {
		if r.Source.Kind == "ConfigMap" && r.Source.Name == "stampede-cluster" && r.Source.FieldPath == "data.CLUSTER_SIZE" {
			for _, tg := range r.Targets {
				if tg.Select.Kind == "Job" && tg.Select.Name == job.Name {
					targets = append(targets, tg.FieldPaths...)
				}
			}
		}
	}
	if strings.Join(targets, ",") != "spec.parallelism,spec.completions" {
		t.Errorf("CLUSTER_SIZE is copied to %v, want spec.parallelism and spec.completions", targets)
	}
	c := spec.Containers[0]
	var sizeFromConfig bool
	for _, e := range c.Env {
		if e.Name == "CLUSTER_SIZE" && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil &&
			e.ValueFrom.ConfigMapKeyRef.Name == "stampede-cluster" && e.ValueFrom.ConfigMapKeyRef.Key == "CLUSTER_SIZE" {
			sizeFromConfig = true
		}
		if e.Name == "JOB_COMPLETION_INDEX" {
			t.Errorf("the container sets JOB_COMPLETION_INDEX itself; the Indexed Job does")
		}
	}
	if !sizeFromConfig {
		t.Errorf("no CLUSTER_SIZE from the stampede-cluster ConfigMap in %+v", c.Env)
	}

	// Spread over nodes.
	aa := spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("no pod anti-affinity")
	}
	term := aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != corev1.LabelHostname || !selects(term.LabelSelector.MatchLabels, job.Spec.Template.Labels) {
		t.Errorf("anti-affinity over %s selecting %v; want %s selecting the agents %v",
			term.TopologyKey, term.LabelSelector.MatchLabels, corev1.LabelHostname, job.Spec.Template.Labels)
	}

	// The headless Service names agent 0.
	svc := &d.svc
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || spec.Subdomain != svc.Name {
		t.Errorf("Service %s clusterIP %q, pod subdomain %q: want a headless Service named as the subdomain", svc.Name, svc.Spec.ClusterIP, spec.Subdomain)
	}
	if !selects(svc.Spec.Selector, job.Spec.Template.Labels) {
		t.Errorf("Service selects %v, the agents carry %v", svc.Spec.Selector, job.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 || len(c.Ports) != 1 {
		t.Fatalf("service ports %v, container ports %v", svc.Spec.Ports, c.Ports)
	}
	sp, cp := svc.Spec.Ports[0], c.Ports[0]
	if sp.TargetPort.String() != cp.Name || sp.Port != cp.ContainerPort {
		t.Errorf("Service port %d → %s, container port %s %d", sp.Port, sp.TargetPort.String(), cp.Name, cp.ContainerPort)
	}

	// The command line, as agent 0 gets it, parses, and its coordinator
	// is <job>-0.<service>:<port>.
	if len(d.command) < 2 || d.command[1] != "serve" {
		t.Fatalf("command %v, want /stampede serve ...", d.command)
	}
	expand := regexp.MustCompile(`\$\(CLUSTER_SIZE\)`)
	var argv []string
	for _, a := range append(append([]string{}, d.command[2:]...), d.args...) {
		argv = append(argv, expand.ReplaceAllString(a, d.size))
	}
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	t.Setenv("HF_HUB_OFFLINE", "1")
	cfg, err := cli.Parse(argv, backend.Choices())
	if err != nil {
		t.Fatalf("the agents' command line %q: %v", argv, err)
	}
	if strconv.Itoa(cfg.ClusterSize) != d.size || cfg.AgentIndex != 0 || cfg.ClusterIndex != nil {
		t.Errorf("agent parsed size %d index %d (flag %v), want %s from CLUSTER_SIZE and 0 from the Job", cfg.ClusterSize, cfg.AgentIndex, cfg.ClusterIndex, d.size)
	}
	host, port, err := net.SplitHostPort(cfg.Coordinator)
	if err != nil || host != job.Name+"-0."+svc.Name || port != strconv.Itoa(int(sp.Port)) {
		t.Errorf("--coordinator %s, want %s-0.%s:%d", cfg.Coordinator, job.Name, svc.Name, sp.Port)
	}
	// Results land on the mounted volume.
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (cfg.ResultDir == m.MountPath && strings.HasPrefix(cfg.SavePartial, m.MountPath+"/"))
	}
	if !mounted {
		t.Errorf("--result-dir %s and --save-partial %s are not on a mounted volume %v", cfg.ResultDir, cfg.SavePartial, c.VolumeMounts)
	}
	// Every agent writes its own partial, even on a shared volume.
	if a, b := cluster.PartialPath(cfg.SavePartial, cfg.ClusterSize, 0), cluster.PartialPath(cfg.SavePartial, cfg.ClusterSize, 1); a == b {
		t.Errorf("agents 0 and 1 both save their partial as %s", a)
	}
	// The cluster token is read from the Secret's volume, and the agents
	// need one: their coordinator is not on loopback.
	var secretVolume string
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "stampede-cluster-token" {
			secretVolume = v.Name
		}
	}
	tokenMounted := false
	for _, m := range c.VolumeMounts {
		tokenMounted = tokenMounted || (m.Name == secretVolume && m.ReadOnly && strings.HasPrefix(cfg.ClusterTokenFile, m.MountPath+"/"))
	}
	if secretVolume == "" || !tokenMounted {
		t.Errorf("--cluster-token-file %q is not on a read-only mount of the Secret stampede-cluster-token (volumes %v)", cfg.ClusterTokenFile, spec.Volumes)
	}

	// The agents print their files into their logs, and the volume the
	// kustomization's commented PVC patch replaces is the results one.
	if !cfg.ResultsToLog {
		t.Error("the agents do not run with --results-to-log: the results would go with the pods")
	}
	if len(spec.Volumes) == 0 || spec.Volumes[0].Name != "results" {
		t.Errorf("volume 0 is not results, which the PVC patch in kustomization.yaml replaces (volumes %v)", spec.Volumes)
	}
	checkAgentResources(t, c, cfg.NumPrompts, cfg.AgentConcurrency())

	// The image is the one built from the Dockerfile, named in the
	// kustomization's images, and not pulled when kind loaded it.
	if len(d.k.Images) != 1 || !strings.HasPrefix(c.Image, d.k.Images[0].Name+":") || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s (pull %s), kustomization images %+v: want the built image, named there, pulled if not present", c.Image, c.ImagePullPolicy, d.k.Images)
	}

	// The image runs the command.
	docker, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/stampede", `ENTRYPOINT ["` + d.command[0] + `"]`} {
		if !bytes.Contains(docker, []byte(want)) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
}

// checkAgentResources holds the pod's requests to job.yaml's formula for
// one agent: memory ≈ 100 MB + 15 KB per request of the run + 4 KB per
// stream of its share; at least one CPU.
func checkAgentResources(t *testing.T, c corev1.Container, prompts, streams int) {
	t.Helper()
	mem, cpu := c.Resources.Requests.Memory(), c.Resources.Requests.Cpu()
	need := int64(100e6 + 15e3*float64(prompts) + 4e3*float64(streams))
	if mem.Value() < need {
		t.Errorf("memory request %s, below the %d MB an agent of %d requests and %d streams needs", mem, need/1e6, prompts, streams)
	}
	if cpu.MilliValue() < 1000 {
		t.Errorf("cpu request %s, want a CPU at least", cpu)
	}
}

// selects reports whether every label of sel is on labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// TestKubernetesKustomizeBuild renders the base with kubectl's kustomize
// where kubectl is installed, and decodes what it renders strictly:
// parallelism = completions = CLUSTER_SIZE, and the flags in place.
func TestKubernetesKustomizeBuild(t *testing.T) {
	render := exec.Command("kubectl", "kustomize", deployDir)
	if _, err := exec.LookPath("kubectl"); err != nil {
		if _, err := exec.LookPath("kustomize"); err != nil {
			t.Skip("neither kubectl nor kustomize is on PATH: the manifests are only decoded one by one (TestKubernetesIndexedJob), not rendered")
		}
		render = exec.Command("kustomize", "build", deployDir)
	}
	out, err := render.Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(render.Args, " "), err)
	}
	d := loadDeployment(t)
	var job *batchv1.Job
	docs := bytes.Split(out, []byte("\n---\n"))
	for _, doc := range docs {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		var err error
		switch meta.Kind {
		case "Job":
			job = &batchv1.Job{}
			err = yaml.UnmarshalStrict(doc, job)
		case "Service":
			err = yaml.UnmarshalStrict(doc, &corev1.Service{})
		case "ConfigMap":
			err = yaml.UnmarshalStrict(doc, &corev1.ConfigMap{})
		default:
			t.Errorf("rendered an unexpected %s", meta.Kind)
		}
		if err != nil {
			t.Errorf("rendered %s: %v", meta.Kind, err)
		}
	}
	if job == nil {
		t.Fatal("no Job rendered")
	}
	n, _ := strconv.Atoi(d.size)
	if job.Spec.Parallelism == nil || job.Spec.Completions == nil || int(*job.Spec.Parallelism) != n || int(*job.Spec.Completions) != n {
		t.Errorf("rendered parallelism %v completions %v, want %d", job.Spec.Parallelism, job.Spec.Completions, n)
	}
	if got := job.Spec.Template.Spec.Containers[0].Args; strings.Join(got, " ") != strings.Join(d.args, " ") {
		t.Errorf("rendered args %v, want the patch's %v", got, d.args)
	}
	img := d.k.Images[0]
	want := cmp.Or(img.NewName, img.Name) + ":" + img.NewTag
	if got := job.Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("rendered image %s, want %s", got, want)
	}
}
