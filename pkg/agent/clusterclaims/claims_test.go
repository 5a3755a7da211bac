package clusterclaims

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ocmcelcommon "open-cluster-management.io/sdk-go/pkg/cel/common"
	ocmcellibrary "open-cluster-management.io/sdk-go/pkg/cel/library"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const gpuProduct = "nvidia.com/gpu.product"

// report is pkg/inventory's report of nodes, with pods taking some of them:
// claims must not change with the pods.
func report(t *testing.T, cfg inventory.Config, nodes ...*corev1.Node) *v1alpha1.ClusterInventoryStatus {
	t.Helper()
	c, err := inventory.NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		c.UpsertNode(n)
		c.UpsertPod(ut.MakePod("default", "p-"+n.Name, n.Name, corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1G")}))
	}
	st := c.Summarize()
	return &st
}

func fleetNodes() []*corev1.Node {
	return []*corev1.Node{
		ut.MakeNode("a100-0").Resource("cpu", "32").Resource("memory", "128Gi").Resource("nvidia.com/gpu", "4").
			Label(gpuProduct, "A100").Label("feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true").Obj(),
		ut.MakeNode("t4-0").Resource("cpu", "16").Resource("memory", "64Gi").Resource("nvidia.com/gpu", "2").
			Label(gpuProduct, "Tesla-T4").Label("topology.kubernetes.io/zone", "eu-1a").Obj(),
		ut.MakeNode("cpu-0").Resource("cpu", "8").Resource("memory", "32Gi").
			Label("topology.kubernetes.io/zone", "eu-1b").Label("feature.node.kubernetes.io/pci-0b40_8086.present", "true").Obj(),
	}
}

func TestDesired(t *testing.T) {
	got := Desired(report(t, inventory.DefaultConfig(), fleetNodes()...), DefaultClaims)
	want := []Claim{
		{Name: "cpu-cpuid.avx512f.node.fleetfit.io", Value: "true"},
		{Name: GPUProductsClaim, Value: "A100,Tesla-T4"},
		{Name: NodeCountClaim, Value: "3"},
		{Name: "pci-0b40-8086.present.node.fleetfit.io", Value: "true"},
		{Name: ResourcesClaim, Value: `{"allocatable":{"cpu":"56","memory":"224Gi","nvidia.com/gpu":"6"},"largestNode":{"cpu":"32","memory":"128Gi","nvidia.com/gpu":"4"}}`},
		{Name: "topology.kubernetes.io.zone.node.fleetfit.io", Value: "eu-1a,eu-1b"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims (-want,+got):\n%s", diff)
	}
}

func TestDesiredBounds(t *testing.T) {
	// Thirty features, three of them asked for by the hub (so reported although outside
	// the prefixes), and a label whose values do not fit a claim.
	n := ut.MakeNode("n").Resource("cpu", "4").Resource("memory", "8Gi")
	for i := range 30 {
		n.Label(fmt.Sprintf("feature.node.kubernetes.io/f%02d", i), "true")
	}
	n.Label("example.com/asked-1", "x").Label("example.com/asked-2", "y")
	long := strings.Repeat("v", 63)
	var nodes []*corev1.Node
	for i := range 20 {
		nodes = append(nodes, ut.MakeNode(fmt.Sprintf("z%d", i)).Resource("cpu", "1").
			Label("topology.kubernetes.io/zone", fmt.Sprintf("%s%02d", long[:60], i)).Obj())
	}
	cfg := inventory.DefaultConfig()
	cfg.FeatureLabelKeys = []string{"example.com/asked-1", "example.com/asked-2"}
	st := report(t, cfg, append(nodes, n.Obj())...)

	for _, max := range []int{MinClaims, 5, DefaultClaims, MaxClaims} {
		got := Desired(st, max)
		if len(got) != max {
			t.Errorf("max %d: %d claims", max, len(got))
		}
		names := map[string]bool{}
		for _, c := range got {
			names[c.Name] = true
			if len(c.Value) == 0 || len(c.Value) > MaxValueLength {
				t.Errorf("max %d: claim %s has a value of %d bytes", max, c.Name, len(c.Value))
			}
		}
		for _, fixed := range []string{NodeCountClaim, ResourcesClaim} {
			if !names[fixed] {
				t.Errorf("max %d: no %s among %v", max, fixed, got)
			}
		}
		if max >= 5 && (!names["example.com.asked-1.node.fleetfit.io"] || !names["example.com.asked-2.node.fleetfit.io"]) {
			t.Errorf("max %d: the keys the hub asks for come first, got %v", max, got)
		}
		if names["topology.kubernetes.io.zone.node.fleetfit.io"] {
			t.Errorf("max %d: 20 zones of 60 characters do not fit a claim, yet it is there", max)
		}
	}
	if got := Desired(st, 100); len(got) != MaxClaims {
		t.Errorf("asking for 100 claims: %d, want OCM's default limit %d", len(got), MaxClaims)
	}
}

func TestFeatureClaimName(t *testing.T) {
	cases := map[string]string{
		"feature.node.kubernetes.io/cpu-cpuid.AVX512F":          "cpu-cpuid.avx512f.node.fleetfit.io",
		"feature.node.kubernetes.io/pci-0b40_8086.present":      "pci-0b40-8086.present.node.fleetfit.io",
		"nvidia.com/gpu.family":                                 "nvidia.com.gpu.family.node.fleetfit.io",
		"node.kubernetes.io/instance-type":                      "node.kubernetes.io.instance-type.node.fleetfit.io",
		"example.com/a.-b_":                                     "example.com.a.b.node.fleetfit.io",
		"feature.node.kubernetes.io/" + strings.Repeat("x", 63): strings.Repeat("x", 63) + ".node.fleetfit.io",
		"":                             "",
		"feature.node.kubernetes.io/_": "",
		// 250 characters of prefix make a name longer than a DNS subdomain may be.
		strings.Repeat("a.", 125) + "/x": "",
	}
	for key, want := range cases {
		got, ok := FeatureClaimName(key)
		if got != want || ok != (want != "") {
			t.Errorf("FeatureClaimName(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
}

// TestResourcesClaimWithOCMsCEL evaluates CEL expressions a Placement would hold with OCM's
// own CEL environment (sdk-go's managed cluster and JSON libraries and its base options,
// Kubernetes' quantity library among them) against a ManagedCluster carrying the claims.
func TestResourcesClaimWithOCMsCEL(t *testing.T) {
	claims := Desired(report(t, inventory.DefaultConfig(), fleetNodes()...), DefaultClaims)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	for _, c := range claims {
		mc.Status.ClusterClaims = append(mc.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: c.Name, Value: c.Value})
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mc)
	if err != nil {
		t.Fatal(err)
	}
	env, err := cel.NewEnv(append([]cel.EnvOption{ocmcellibrary.ManagedClusterLib(nil), ocmcellibrary.JsonLib()}, ocmcelcommon.BaseEnvOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	resources := `managedCluster.status.clusterClaims.filter(c, c.name == "resources.fleetfit.io")[0].value.parseJSON()`
	cases := map[string]bool{
		`quantity(` + resources + `.largestNode.memory).isGreaterThan(quantity("64Gi"))`:                                      true,
		`quantity(` + resources + `.largestNode.memory).isGreaterThan(quantity("200G"))`:                                      false,
		`quantity(` + resources + `.allocatable["nvidia.com/gpu"]).compareTo(quantity("6")) >= 0`:                             true,
		`quantity(` + resources + `.largestNode.cpu).isLessThan(quantity("32500m"))`:                                          true,
		`managedCluster.status.clusterClaims.exists(c, c.name == "gpu-products.fleetfit.io" && "A100" in c.value.split(","))`: true,
		`managedCluster.status.clusterClaims.exists(c, c.name == "cpu-cpuid.avx512f.node.fleetfit.io" && c.value == "true")`:  true,
	}
	for expr, want := range cases {
		ast, issues := env.Compile(expr)
		if issues.Err() != nil {
			t.Errorf("%s: %v", expr, issues.Err())
			continue
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		out, _, err := prg.Eval(map[string]any{"managedCluster": obj})
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if out.Value() != want {
			t.Errorf("%s = %v, want %v", expr, out.Value(), want)
		}
	}

	// The value is compact JSON that any JSON reader takes.
	var v map[string]map[string]string
	for _, c := range claims {
		if c.Name == ResourcesClaim {
			if err := json.Unmarshal([]byte(c.Value), &v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if v["largestNode"]["nvidia.com/gpu"] != "4" {
		t.Errorf("largestNode GPUs: %q, want 4", v["largestNode"]["nvidia.com/gpu"])
	}
}
