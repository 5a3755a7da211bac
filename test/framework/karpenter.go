package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/fleetfit/fleetfit/pkg/install"
)

// KarpenterBinary is the name, in the binary directory, of Karpenter's kwok
// cloud provider (sigs.k8s.io/karpenter/kwok), built by `make tools` from
// test/tools/karpenter.
const KarpenterBinary = "karpenter-kwok"

// karpenterCRDDir holds, relative to the module root, the CRDs Karpenter's
// kwok provider serves on: NodePool, NodeClaim and NodeOverlay
// (karpenter.sh) and KWOKNodeClass (karpenter.kwok.sh), copied from
// sigs.k8s.io/karpenter (see its README).
const karpenterCRDDir = "manifests/crds/karpenter"

// Karpenter's API groups and versions, for dynamic clients: NodePools and
// NodeClaims are karpenter.sh/v1, KWOKNodeClasses karpenter.kwok.sh/v1alpha1.
const (
	KarpenterGroup           = "karpenter.sh"
	KarpenterVersion         = "v1"
	KarpenterKwokGroup       = "karpenter.kwok.sh"
	KarpenterKwokVersion     = "v1alpha1"
	KarpenterNodeClassKind   = "KWOKNodeClass"
	KarpenterDefaultZone     = "test-zone-a"
	KarpenterOnDemand        = "on-demand"
	KarpenterCapacityTypeKey = "karpenter.sh/capacity-type"
)

// KarpenterInstanceType is a shape Karpenter's kwok provider may launch. It
// is written, as a JSON array of them, to the file the provider reads with
// --instance-types-file-path (INSTANCE_TYPES_FILE_PATH): the format of
// kwok/cloudprovider/instance_types.json in sigs.k8s.io/karpenter, parsed by
// ConstructInstanceTypes in kwok/cloudprovider/helpers.go. The provider adds
// pods: 110 when Resources has no pods, reserves 100m CPU and 10Mi memory
// for the kubelet, and labels its nodes with the instance type's name,
// architecture, OS, the offering's zone and capacity type, and
// karpenter.kwok.sh/instance-{family,size,cpu,memory} (family is the name up
// to the first "." or "-", size the CPU count).
type KarpenterInstanceType struct {
	// Name is the node.kubernetes.io/instance-type label of its nodes.
	Name string
	// Architecture defaults to amd64, OperatingSystems to [linux].
	Architecture     string
	OperatingSystems []string
	// Resources is the node's capacity: cpu, memory, pods and extended
	// resources such as nvidia.com/gpu.
	Resources corev1.ResourceList
	// Offerings are where and how it can be bought; none means one
	// on-demand offering in KarpenterDefaultZone at Price 1.
	Offerings []KarpenterOffering
}

// KarpenterOffering is one way to buy an instance type: a capacity type
// (on-demand, spot or reserved) in a zone, at a price per hour. Karpenter
// launches the cheapest offering that fits.
type KarpenterOffering struct {
	CapacityType string
	Zone         string
	Price        float64
}

// KarpenterInstanceTypes is what StartKarpenter offers when told nothing
// else: a CPU shape and two GPU shapes with 4 and 8 nvidia.com/gpu, each
// on-demand in KarpenterDefaultZone, priced so that Karpenter picks the
// smallest that fits.
func KarpenterInstanceTypes() []KarpenterInstanceType {
	shape := func(name, cpu, memory, gpus string, price float64) KarpenterInstanceType {
		r := corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse(cpu),
			corev1.ResourceMemory:           resource.MustParse(memory),
			corev1.ResourcePods:             resource.MustParse("110"),
			corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		}
		if gpus != "" {
			r["nvidia.com/gpu"] = resource.MustParse(gpus)
		}
		return KarpenterInstanceType{Name: name, Resources: r, Offerings: []KarpenterOffering{{CapacityType: KarpenterOnDemand, Zone: KarpenterDefaultZone, Price: price}}}
	}
	return []KarpenterInstanceType{
		shape("cpu-8x", "8", "32Gi", "", 0.4),
		shape("gpu-4x", "32", "256Gi", "4", 12),
		shape("gpu-8x", "64", "512Gi", "8", 24.5),
	}
}

// KarpenterOptions tune StartKarpenter.
type KarpenterOptions struct {
	// InstanceTypes are the shapes the provider may launch;
	// KarpenterInstanceTypes() when empty.
	InstanceTypes []KarpenterInstanceType
	// ExtraArgs are appended to the command line (for instance
	// --feature-gates=... or --batch-max-duration=...).
	ExtraArgs []string
}

// instanceTypesJSON renders types in the format of Karpenter's kwok
// provider.
func instanceTypesJSON(types []KarpenterInstanceType) ([]byte, error) {
	type requirement struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
	type offering struct {
		Price        float64       `json:"Price"`
		Available    bool          `json:"Available"`
		Requirements []requirement `json:"Requirements"`
	}
	type instanceType struct {
		Name             string              `json:"name"`
		Offerings        []offering          `json:"offerings"`
		Architecture     string              `json:"architecture"`
		OperatingSystems []string            `json:"operatingSystems"`
		Resources        corev1.ResourceList `json:"resources"`
	}
	out := make([]instanceType, 0, len(types))
	for _, t := range types {
		if t.Name == "" || len(t.Resources) == 0 {
			return nil, fmt.Errorf("instance type %q needs a name and resources", t.Name)
		}
		it := instanceType{Name: t.Name, Architecture: t.Architecture, OperatingSystems: t.OperatingSystems, Resources: t.Resources}
		if it.Architecture == "" {
			it.Architecture = "amd64"
		}
		if len(it.OperatingSystems) == 0 {
			it.OperatingSystems = []string{"linux"}
		}
		offerings := t.Offerings
		if len(offerings) == 0 {
			offerings = []KarpenterOffering{{Price: 1}}
		}
		for _, o := range offerings {
			if o.CapacityType == "" {
				o.CapacityType = KarpenterOnDemand
			}
			if o.Zone == "" {
				o.Zone = KarpenterDefaultZone
			}
			// Both are needed: an instance type's zone and capacity-type
			// requirements are the union of its offerings'.
			it.Offerings = append(it.Offerings, offering{Price: o.Price, Available: true, Requirements: []requirement{
				{Key: KarpenterCapacityTypeKey, Operator: string(corev1.NodeSelectorOpIn), Values: []string{o.CapacityType}},
				{Key: corev1.LabelTopologyZone, Operator: string(corev1.NodeSelectorOpIn), Values: []string{o.Zone}},
			}})
		}
		out = append(out, it)
	}
	return json.MarshalIndent(out, "", "  ")
}

// KarpenterCRDs returns the CRDs of manifests/crds/karpenter, sorted by
// file name. They are read from the source tree (found from the working
// directory), not embedded: only tests and the demo use them.
func KarpenterCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, karpenterCRDDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", filepath.Join(root, karpenterCRDDir))
	}
	sort.Strings(files)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// InstallKarpenterCRDs applies KarpenterCRDs to a cluster and waits until
// they are established.
func InstallKarpenterCRDs(ctx context.Context, cfg *rest.Config) error {
	crds, err := KarpenterCRDs()
	if err != nil {
		return err
	}
	return install.ApplyCRDs(ctx, cfg, crds)
}

// SkipWithoutKarpenter skips the test, saying how to build it, when the
// binary directory has no karpenter-kwok.
func SkipWithoutKarpenter(t testing.TB) {
	t.Helper()
	if _, err := BinaryPath(KarpenterBinary); err != nil {
		t.Skipf("Karpenter's kwok provider is not built: %v (make %s)", err, filepath.Join("bin", KarpenterBinary))
	}
}

// StartKarpenter installs Karpenter's CRDs on cp and runs Karpenter's kwok
// provider against it (see StartKarpenterProcess) until the test ends; on
// failure the end of its log is logged. It fails the test when Karpenter
// does not start.
func StartKarpenter(t testing.TB, cp *ControlPlane, opts KarpenterOptions) *Component {
	t.Helper()
	if err := InstallKarpenterCRDs(t.Context(), cp.AdminConfig()); err != nil {
		t.Fatalf("installing Karpenter's CRDs on %s: %v", cp.Name, err)
	}
	c, err := StartKarpenterProcess(t.Context(), cp, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s log ---\n%s", c.Name(), c.LogTail(60))
		}
		c.Stop()
	})
	return c
}

// StartKarpenterProcess runs Karpenter's kwok cloud provider
// (bin/karpenter-kwok) against cp as its admin, which must serve
// Karpenter's CRDs already (InstallKarpenterCRDs):
//
//	KUBECONFIG=<cp> INSTANCE_TYPES_FILE_PATH=<dir>/instance-types.json \
//	karpenter-kwok --disable-leader-election=true \
//	    --health-probe-port=<port> --metrics-port=<port> --log-level=info
//
// and waits until /readyz answers (its caches synced and the NodePool and
// NodeClaim APIs found). Karpenter reads no --kubeconfig flag: its client
// comes from $KUBECONFIG. Its health and metrics servers listen on every
// interface.
//
// For each NodeClaim it launches, the provider creates a Node annotated (and
// labelled) kwok.x-k8s.io/node=fake, which the control plane's kwok
// (StartKwok) takes over as it does nodes made with CreateKwokNode: it makes
// the node Ready and runs the pods bound to it. The node lifecycle
// controller (StartKubeControllerManager) then lifts the not-ready taint and
// Karpenter marks the NodeClaim Initialized. Pending pods are only seen as
// pending once kube-scheduler (StartKubeScheduler) marked them
// Unschedulable: StartPodRuntime starts all three.
//
// A launched node is named kwok-<nodeclaim>-<random>, has the provider ID
// kwok://<node name>, and carries the NodePool's template labels and taints
// and these labels: karpenter.sh/nodepool, karpenter.sh/capacity-type,
// node.kubernetes.io/instance-type, topology.kubernetes.io/zone,
// kubernetes.io/{arch,os} (and the beta ones), kubernetes.io/hostname (the
// NodeClaim's name), karpenter.kwok.sh/instance-{family,size,cpu,memory},
// karpenter.kwok.sh/kwoknodeclass, kwok.x-k8s.io/node=fake,
// kwok-partition=a and eks-node-viewer/instance-price; Karpenter adds
// karpenter.sh/registered and, once it is Ready and untainted,
// karpenter.sh/initialized. Its allocatable is the instance type's, less the
// reserved 100m CPU and 10Mi memory; its capacity, though, is what the pods
// it was launched for requested (the kwok provider copies the NodeClaim's
// requests), and NodePool.status.resources, which Karpenter checks limits
// against, sums capacities: a pool is charged what its pods asked for, not
// the instance types' sizes.
//
// The caller stops Karpenter with Stop, or leaves that to cp.Stop. Karpenter
// leaves the nodes it launched behind when stopped.
func StartKarpenterProcess(ctx context.Context, cp *ControlPlane, opts KarpenterOptions) (*Component, error) {
	types := opts.InstanceTypes
	if len(types) == 0 {
		types = KarpenterInstanceTypes()
	}
	typesJSON, err := instanceTypesJSON(types)
	if err != nil {
		return nil, err
	}
	return startComponent(ctx, componentSpec{
		binary: KarpenterBinary,
		name:   "karpenter",
		home:   cp,
		planes: []*ControlPlane{cp},
		args: func(dir, addr string) ([]string, error) {
			if _, err := writeKubeconfig(cp, dir, "kubeconfig"); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, "instance-types.json"), typesJSON, 0o600); err != nil {
				return nil, err
			}
			_, healthPort, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			metricsPort, err := freePort()
			if err != nil {
				return nil, err
			}
			return append([]string{
				"--disable-leader-election=true",
				"--health-probe-port=" + healthPort,
				fmt.Sprintf("--metrics-port=%d", metricsPort),
				"--log-level=info",
			}, opts.ExtraArgs...), nil
		},
		envFor: func(dir string) []string {
			return []string{
				"KUBECONFIG=" + filepath.Join(dir, "kubeconfig"),
				"INSTANCE_TYPES_FILE_PATH=" + filepath.Join(dir, "instance-types.json"),
			}
		},
		ready: healthz("http://%s/readyz"),
	})
}
