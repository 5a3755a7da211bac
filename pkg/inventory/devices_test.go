package inventory

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

const testDriver = "gpu.example.com"

// gpuDevice is a device of testDriver with a model, memory and an index.
func gpuDevice(name, model string, memory string, index int64) resourcev1.Device {
	return resourcev1.Device{
		Name: name,
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"model": {StringValue: ptr.To(model)},
			"index": {IntValue: ptr.To(index)},
		},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			"memory": {Value: resource.MustParse(memory)},
		},
	}
}

// gpuSlice is a one-slice pool of node's devices, named after the node.
func gpuSlice(node string, devices ...resourcev1.Device) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   testDriver,
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
			Devices:  devices,
		},
	}
}

func gpuClass(name string, selectors ...string) *resourcev1.DeviceClass {
	c := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, s := range selectors {
		c.Spec.Selectors = append(c.Spec.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	return c
}

func allocated(name string, node string, devices ...string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	c.Status.Allocation = &resourcev1.AllocationResult{}
	for _, d := range devices {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: testDriver, Pool: node, Device: d})
	}
	return c
}

func eightA100(node string) *resourcev1.ResourceSlice {
	var ds []resourcev1.Device
	for i := range 8 {
		ds = append(ds, gpuDevice(fmt.Sprintf("gpu-%d", i), "A100", "80Gi", int64(i)))
	}
	return gpuSlice(node, ds...)
}

func TestSummarizeDevicesGroupsAlikeDevices(t *testing.T) {
	in := DeviceInput{
		Slices:  []*resourcev1.ResourceSlice{eightA100("n1")},
		Classes: []*resourcev1.DeviceClass{gpuClass(testDriver, `device.driver == "gpu.example.com"`), gpuClass("other", `device.driver == "nic.example.com"`)},
		Claims:  []*resourcev1.ResourceClaim{allocated("c1", "n1", "gpu-0", "gpu-3"), allocated("admin", "n1", "gpu-1")},
	}
	in.Claims[1].Status.Allocation.Devices.Results[0].AdminAccess = ptr.To(true)
	sum := SummarizeDevices(in)
	if got := len(sum.Report.Kinds); got != 1 {
		t.Fatalf("got %d kinds, want 1 (index is ignored): %+v", got, sum.Report.Kinds)
	}
	k := sum.Report.Kinds[0]
	if diff := cmp.Diff([]string{testDriver}, k.Classes); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
	if _, ok := k.Attributes["index"]; ok {
		t.Errorf("kind keeps the ignored attribute index")
	}
	if k.Name != DeviceKindName(&k) || !strings.HasPrefix(k.Name, "devices.fleetfit.io/gpu-") {
		t.Errorf("kind name %q is not derived from the kind", k.Name)
	}
	nd := sum.Nodes["n1"]
	name := corev1.ResourceName(k.Name)
	if nd == nil || nd.Capacity.Get(name) != 8000 || nd.Used.Get(name) != 2000 {
		t.Fatalf("node devices = %+v, want 8 of %s with 2 used (admin access takes none)", nd, name)
	}
}

func TestSummarizeDevicesLeavesOut(t *testing.T) {
	incomplete := gpuSlice("n2", gpuDevice("g", "A100", "80Gi", 0))
	incomplete.Spec.Pool.ResourceSliceCount = 2
	stale := gpuSlice("n3", gpuDevice("old", "V100", "16Gi", 0))
	stale.Name = "n3-old"
	fresh := gpuSlice("n3", gpuDevice("new", "A100", "80Gi", 0))
	fresh.Spec.Pool.Generation = 2
	shared := gpuSlice("n4", gpuDevice("g", "A100", "80Gi", 0))
	shared.Spec.Devices[0].AllowMultipleAllocations = ptr.To(true)
	network := gpuSlice("n5", gpuDevice("g", "A100", "80Gi", 0))
	network.Spec.NodeName, network.Spec.AllNodes = nil, ptr.To(true)
	sum := SummarizeDevices(DeviceInput{Slices: []*resourcev1.ResourceSlice{incomplete, stale, fresh, shared, network}})
	if got := sum.Report.OmittedDevices; got != 3 {
		t.Errorf("omittedDevices = %d, want 3 (incomplete, shared, not on a node)", got)
	}
	for _, want := range []string{"1 incomplete pools", "1 shared devices", "1 devices not bound to one node"} {
		if !strings.Contains(sum.Report.Message, want) {
			t.Errorf("message %q does not say %q", sum.Report.Message, want)
		}
	}
	if len(sum.Nodes) != 1 || sum.Nodes["n3"] == nil || len(sum.Report.Kinds) != 1 ||
		sum.Report.Kinds[0].Attributes["model"].StringValue == nil || *sum.Report.Kinds[0].Attributes["model"].StringValue != "A100" {
		t.Errorf("only n3's newest generation counts; got nodes %v, kinds %+v", sum.Nodes, sum.Report.Kinds)
	}
}

func TestSummarizeDevicesKeepsTheLargestKinds(t *testing.T) {
	var ds []resourcev1.Device
	for i := range v1alpha1.MaxReportedDeviceKinds + 3 {
		ds = append(ds, gpuDevice(fmt.Sprintf("d%d", i), fmt.Sprintf("M%d", i), "1Gi", 0))
	}
	ds = append(ds, gpuDevice("extra", "M0", "1Gi", 1))
	sum := SummarizeDevices(DeviceInput{Slices: []*resourcev1.ResourceSlice{gpuSlice("n", ds...)}})
	if got := len(sum.Report.Kinds); got != v1alpha1.MaxReportedDeviceKinds {
		t.Fatalf("%d kinds, want %d", got, v1alpha1.MaxReportedDeviceKinds)
	}
	if sum.Report.OmittedDevices != 3 || len(sum.Nodes["n"].Capacity) != v1alpha1.MaxReportedDeviceKinds {
		t.Errorf("omitted %d devices, node has %d kinds", sum.Report.OmittedDevices, len(sum.Nodes["n"].Capacity))
	}
	found := false
	for _, k := range sum.Report.Kinds {
		if *k.Attributes["model"].StringValue == "M0" {
			found = true
		}
	}
	if !found {
		t.Errorf("the kind with two devices was left out")
	}
}

func TestDevicesHideTheirExtendedResource(t *testing.T) {
	class := gpuClass(testDriver, `device.driver == "gpu.example.com"`)
	class.Spec.ExtendedResourceName = ptr.To("example.com/gpu")
	sum := SummarizeDevices(DeviceInput{Slices: []*resourcev1.ResourceSlice{eightA100("n1")}, Classes: []*resourcev1.DeviceClass{class}})
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.UpsertNode(makeNode("n1").Resources("cpu", "8", "memory", "32Gi", "pods", "110", "example.com/gpu", "8").Obj())
	c.SetDevices(sum.Nodes, &sum.Report)
	st := c.Summarize()
	for _, r := range st.Resources {
		if r.Name == "example.com/gpu" {
			t.Errorf("the devices are counted twice: example.com/gpu is still reported (%v)", r.Allocatable.String())
		}
	}
	kind := corev1.ResourceName(sum.Report.Kinds[0].Name)
	if q := st.NodeShapes[0].Allocatable[kind]; q.Value() != 8 {
		t.Errorf("allocatable %s = %v, want 8", kind, q.String())
	}
}

// TestDeviceFitAgainstBruteForce builds random clusters of nodes with
// devices of several kinds, some in use, and random pods asking for devices
// (one or two requests, by class and selector, with cpu), and checks View's
// answers against a brute force over the nodes: a replica takes each
// request's devices from one matching kind of its node.
func TestDeviceFitAgainstBruteForce(t *testing.T) {
	models := []string{"A100", "H100", "L4"}
	mems := []string{"24Gi", "80Gi"}
	classes := []*resourcev1.DeviceClass{
		gpuClass(testDriver, `device.driver == "gpu.example.com"`),
		gpuClass("big.gpu.example.com", `device.driver == "gpu.example.com"`, `device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`),
	}
	selectors := []string{
		`device.attributes["gpu.example.com"].model == "A100"`,
		`device.attributes["gpu.example.com"].model != "L4"`,
		`device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0`,
		`device.attributes["gpu.example.com"].missing == 1`,
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 300 {
		type node struct {
			cpu  int64
			free map[string]int64 // kind description → free devices
		}
		var (
			nodes  []*corev1.Node
			slices []*resourcev1.ResourceSlice
			claims []*resourcev1.ResourceClaim
			truth  []node
		)
		for n := range 1 + rng.IntN(5) {
			name := fmt.Sprintf("n%d", n)
			cpu := int64(1 + rng.IntN(8))
			nodes = append(nodes, makeNode(name).Resources("cpu", fmt.Sprint(cpu), "pods", "110").Obj())
			var ds []resourcev1.Device
			var used []string
			free := map[string]int64{}
			for d := range rng.IntN(7) {
				model, mem := models[rng.IntN(len(models))], mems[rng.IntN(len(mems))]
				dev := fmt.Sprintf("d%d", d)
				ds = append(ds, gpuDevice(dev, model, mem, int64(d)))
				if rng.IntN(4) == 0 {
					used = append(used, dev)
				} else {
					free[model+"/"+mem]++
				}
			}
			if len(ds) > 0 {
				slices = append(slices, gpuSlice(name, ds...))
			}
			if len(used) > 0 {
				claims = append(claims, allocated("c-"+name, name, used...))
			}
			truth = append(truth, node{cpu: cpu, free: free})
		}
		sum := SummarizeDevices(DeviceInput{Slices: slices, Classes: classes, Claims: claims})
		c, err := NewCluster(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			c.UpsertNode(n)
		}
		c.SetDevices(sum.Nodes, &sum.Report)
		st := c.Summarize()
		view := NewView(&st)

		var reqs []deviceWant
		for range 1 + rng.IntN(2) {
			w := deviceWant{class: classes[rng.IntN(len(classes))].Name, count: int64(1 + rng.IntN(3))}
			if rng.IntN(2) == 0 {
				w.sel = selectors[rng.IntN(len(selectors))]
			}
			reqs = append(reqs, w)
		}
		cpu := int64(1 + rng.IntN(2))
		r, err := NewRequest(rl("cpu", fmt.Sprint(cpu)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var drs []*DeviceRequest
		for i, w := range reqs {
			var sels []string
			if w.sel != "" {
				sels = []string{w.sel}
			}
			dr, err := NewDeviceRequest(fmt.Sprintf("r%d", i), w.class, w.count, sels)
			if err != nil {
				t.Fatal(err)
			}
			drs = append(drs, dr)
		}
		r = r.WithDevices(drs...)

		matches := func(w deviceWant, kind string) bool {
			model, mem, _ := strings.Cut(kind, "/")
			if w.class == "big.gpu.example.com" && mem != "80Gi" {
				return false
			}
			switch w.sel {
			case selectors[0]:
				return model == "A100"
			case selectors[1]:
				return model != "L4"
			case selectors[2]:
				return mem == "80Gi"
			case selectors[3]:
				return false // a runtime error: no such attribute
			}
			return true
		}
		// perNode tries every choice of one kind per request.
		perNode := func(free map[string]int64) int64 {
			best := int64(0)
			var try func(i int, charged map[string]int64)
			try = func(i int, charged map[string]int64) {
				if i == len(reqs) {
					fit := int64(1 << 40)
					for kind, need := range charged {
						fit = min(fit, free[kind]/need)
					}
					best = max(best, fit)
					return
				}
				for kind, n := range free {
					if n == 0 || !matches(reqs[i], kind) {
						continue
					}
					charged[kind] += reqs[i].count
					try(i+1, charged)
					charged[kind] -= reqs[i].count
					if charged[kind] == 0 {
						delete(charged, kind)
					}
				}
			}
			try(0, map[string]int64{})
			return best
		}
		// mostOn is the most replicas a node holds when each replica
		// chooses its kinds on its own, as kube-scheduler allocates each
		// pod's claim: an exhaustive search over the replicas' choices.
		mostOn := func(n node) int64 {
			free := map[string]int64{}
			for k, v := range n.free {
				free[k] = v
			}
			var best int64
			var place func(placed int64)
			place = func(placed int64) {
				best = max(best, placed)
				if (placed+1)*cpu > n.cpu {
					return
				}
				var try func(i int) bool
				try = func(i int) bool {
					if i == len(reqs) {
						place(placed + 1)
						return true
					}
					for kind, v := range free {
						if v < reqs[i].count || !matches(reqs[i], kind) {
							continue
						}
						free[kind] -= reqs[i].count
						try(i + 1)
						free[kind] += reqs[i].count
					}
					return false
				}
				try(0)
			}
			place(0)
			return best
		}
		var count, most int64
		fitsOne := false
		for _, n := range truth {
			k := min(n.cpu/cpu, perNode(n.free))
			count += k
			if k > 0 {
				fitsOne = true
			}
			m := mostOn(n)
			if m < k {
				t.Fatalf("trial %d: the brute forces disagree: %d < %d", trial, m, k)
			}
			most += m
		}
		got, _ := view.MaxReplicas(r)
		if got != count {
			t.Fatalf("trial %d: MaxReplicas = %d, brute force %d\nrequests %+v cpu %d\nnodes %+v", trial, got, count, reqs, cpu, truth)
		}
		ok, why := view.FitsOnOneNode(r)
		if ok != fitsOne {
			t.Fatalf("trial %d: FitsOnOneNode = %v (%s), brute force %v", trial, ok, why, fitsOne)
		}
		if !ok && why == "" {
			t.Fatalf("trial %d: no reason given", trial)
		}
		a := view.Allocate()
		if placed := a.Place(r, most+1); placed > most {
			t.Fatalf("trial %d: Place put %d replicas where %d fit", trial, placed, most)
		}
	}
}

// deviceWant is one device request of a brute-force trial.
type deviceWant struct {
	class string
	sel   string
	count int64
}

func TestDeviceReasons(t *testing.T) {
	small := gpuSlice("n2", gpuDevice("a", "A100", "80Gi", 0), gpuDevice("b", "L4", "24Gi", 1))
	sum := SummarizeDevices(DeviceInput{
		Slices:  []*resourcev1.ResourceSlice{eightA100("n1"), small},
		Classes: []*resourcev1.DeviceClass{gpuClass(testDriver, `device.driver == "gpu.example.com"`)},
		Claims:  []*resourcev1.ResourceClaim{allocated("c", "n1", "gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7")},
	})
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2"} {
		c.UpsertNode(makeNode(n).Resources("cpu", "8", "pods", "110").Obj())
	}
	c.SetDevices(sum.Nodes, &sum.Report)
	st := c.Summarize()
	view := NewView(&st)
	for _, tc := range []struct {
		class, sel string
		count      int64
		fits       bool
		want       string
	}{
		{testDriver, `device.attributes["gpu.example.com"].model == "A100"`, 1, true, ""},
		{testDriver, `device.attributes["gpu.example.com"].model == "A100"`, 2, false,
			`no schedulable node has 2 devices of class gpu.example.com with device.attributes["gpu.example.com"].model == "A100" free; the best has 1`},
		{"nic.example.com", "", 1, false, "no schedulable node has 1 device of class nic.example.com free; the best has 0"},
	} {
		var sels []string
		if tc.sel != "" {
			sels = []string{tc.sel}
		}
		dr, err := NewDeviceRequest("gpu", tc.class, tc.count, sels)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRequest(rl("cpu", "1"), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ok, why := view.FitsOnOneNode(r.WithDevices(dr))
		if ok != tc.fits || why != tc.want {
			t.Errorf("%s: FitsOnOneNode = %v, %q; want %v, %q", dr, ok, why, tc.fits, tc.want)
		}
	}
}

func TestViewIgnoresKindsNotNamedAfterThemselves(t *testing.T) {
	sum := SummarizeDevices(DeviceInput{Slices: []*resourcev1.ResourceSlice{eightA100("n1")},
		Classes: []*resourcev1.DeviceClass{gpuClass(testDriver)}})
	st := v1alpha1.ClusterInventoryStatus{Devices: &sum.Report}
	st.Devices.Kinds[0].Attributes["model"] = resourcev1.DeviceAttribute{StringValue: ptr.To("H100")}
	if v := NewView(&st); len(v.DeviceKinds()) != 0 {
		t.Errorf("a kind whose content does not give its name was read: %v", v.DeviceKinds())
	}
}

// BenchmarkDeviceReport is the agent's work for a node pool with thousands
// of devices: 1,000 nodes of 8 GPUs each (two models), half of them in use,
// read from their ResourceSlices, DeviceClasses and ResourceClaims into
// kinds, fed into the inventory and summarised. It reports the size of the
// devices' part of the report.
func BenchmarkDeviceReport(b *testing.B) {
	const nodesN, perNode = 1000, 8
	var (
		slices []*resourcev1.ResourceSlice
		claims []*resourcev1.ResourceClaim
		nodes  []*corev1.Node
	)
	for n := range nodesN {
		name := fmt.Sprintf("node-%04d", n)
		model := "A100"
		if n%2 == 1 {
			model = "H100"
		}
		var ds []resourcev1.Device
		for i := range perNode {
			ds = append(ds, gpuDevice(fmt.Sprintf("gpu-%d", i), model, "80Gi", int64(i)))
		}
		ds[0].Attributes["uuid"] = resourcev1.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("GPU-%08x", n))}
		slices = append(slices, gpuSlice(name, ds...))
		claims = append(claims, allocated("c-"+name, name, "gpu-0", "gpu-1", "gpu-2", "gpu-3"))
		nodes = append(nodes, makeNode(name).Resources("cpu", "96", "memory", "1Ti", "pods", "110").Obj())
	}
	classes := []*resourcev1.DeviceClass{gpuClass(testDriver, `device.driver == "gpu.example.com"`)}
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes {
		c.UpsertNode(n)
	}
	var st v1alpha1.ClusterInventoryStatus
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Every round a claim comes and goes, as on a living cluster.
		if i%2 == 1 {
			claims[i%nodesN].Status.Allocation.Devices.Results = claims[i%nodesN].Status.Allocation.Devices.Results[:3]
		}
		sum := SummarizeDevices(DeviceInput{Slices: slices, Classes: classes, Claims: claims})
		c.SetDevices(sum.Nodes, &sum.Report)
		st = c.Summarize()
	}
	b.StopTimer()
	if len(st.Devices.Kinds) != 2 {
		b.Fatalf("%d kinds, want 2", len(st.Devices.Kinds))
	}
	size, _ := json.Marshal(st)
	b.ReportMetric(float64(len(size)), "report-bytes")
	b.ReportMetric(float64(nodesN*perNode), "devices")
}
