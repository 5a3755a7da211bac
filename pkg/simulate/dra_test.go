package simulate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetfit/fleetfit/pkg/inventory"
	corev1 "k8s.io/api/core/v1"
)

// draNode is a node of cluster with cpu only.
func draNode(cluster, name string) string {
	return `
apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels: {fleetfit.io/cluster: ` + cluster + `}
status:
  allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]`
}

// gpuSlice is a ResourceSlice of cluster's node with n GPUs of model.
func gpuSlice(cluster, node, model string, n int) string {
	var devices []string
	for i := range n {
		devices = append(devices, fmt.Sprintf(`  - {name: gpu-%d, attributes: {model: {string: %s}, index: {int: %d}}, capacity: {memory: {value: 80Gi}}}`, i, model, i))
	}
	return `
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: ` + node + `-gpus
  labels: {fleetfit.io/cluster: ` + cluster + `}
spec:
  driver: gpu.example.com
  pool: {name: ` + node + `, generation: 1, resourceSliceCount: 1}
  nodeName: ` + node + `
  devices:
` + strings.Join(devices, "\n")
}

func gpuClass(cluster string) string {
	return `
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
  labels: {fleetfit.io/cluster: ` + cluster + `}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]`
}

func deviceIntent(name string, count int, model string) string {
	return `
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata: {name: ` + name + `, namespace: ml}
spec:
  placementRef: {name: ` + name + `}
  consumers:
  - name: trainer
    target: {apiVersion: batch/v1, kind: Job, name: trainer, container: trainer}
    replicas: 1
    requirements:
    - {name: cpu, resource: {name: cpu, requests: "4"}}
    - name: gpus
      devices:
        deviceClassName: gpu.example.com
        count: ` + fmt.Sprint(count) + `
        selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "` + model + `"'}}]`
}

// TestDevicesOfAFile: clusters given by Nodes and their DRA objects get the device kinds the
// agent would report, and intents asking for devices are placed where one node has them.
func TestDevicesOfAFile(t *testing.T) {
	docs := []string{
		setAndBinding, cluster("c1"), cluster("c2"),
		draNode("c1", "c1-a"), draNode("c1", "c1-b"), gpuClass("c1"),
		gpuSlice("c1", "c1-a", "A100", 1), gpuSlice("c1", "c1-b", "A100", 1),
		draNode("c2", "c2-a"), gpuClass("c2"), gpuSlice("c2", "c2-a", "A100", 4),
		`
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: busy, namespace: default, labels: {fleetfit.io/cluster: c2}}
spec: {}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.example.com, pool: c2-a, device: gpu-0}`,
		placementDoc("two"), deviceIntent("two", 2, "A100"),
		placementDoc("four"), deviceIntent("four", 4, "A100"),
	}
	f := fleetOf(t, docs...)
	for _, inv := range f.Inventories {
		if inv.Status.Devices == nil || len(inv.Status.Devices.Kinds) != 1 {
			t.Fatalf("inventory of %s: devices %+v, want one kind", inv.Namespace, inv.Status.Devices)
		}
	}
	kind := corev1.ResourceName(f.Inventories[1].Status.Devices.Kinds[0].Name)
	if q := f.Inventories[1].Status.NodeShapes[0].Free[0].Resources[kind]; q.Value() != 3 {
		t.Errorf("c2's node has %v free of %s, want 3 (one allocated)", q.String(), kind)
	}
	res := run(t, f)
	if diff := cmp.Diff(map[string][]string{"ml/two": {"c2"}, "ml/four": {}}, selected(res)); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
	for _, r := range res.Placements {
		if r.Key() != "ml/four" || r.Explanation == nil {
			continue
		}
		for _, c := range r.Explanation.Clusters {
			if want := "devices of class gpu.example.com"; !strings.Contains(c.Reason, want) || !strings.Contains(c.Reason, "the best has") {
				t.Errorf("%s: reason %q, want one saying %q and the best a node has", c.Name, c.Reason, want)
			}
		}
	}
}

func TestDevicesRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		docs []string
		want string
	}{
		"a slice of no node": {
			docs: []string{cluster("c1"), draNode("c1", "node1"), strings.Replace(gpuSlice("c1", "node1", "A100", 1), "  nodeName: node1\n", "", 1)},
			want: "exactly one of nodeName, nodeSelector, allNodes or perDeviceNodeSelection is required",
		},
		"a device name that is no DNS label": {
			docs: []string{cluster("c1"), draNode("c1", "node1"), strings.Replace(gpuSlice("c1", "node1", "A100", 1), "name: gpu-0", "name: GPU_0", 1)},
			want: "spec.devices[0].name",
		},
		"a class selector that does not compile": {
			docs: []string{cluster("c1"), draNode("c1", "node1"), strings.Replace(gpuClass("c1"), `device.driver == "gpu.example.com"`, `device.driver ==`, 1)},
			want: "spec.selectors[0].cel.expression",
		},
		"a slice without its cluster": {
			docs: []string{cluster("c1"), draNode("c1", "node1"), strings.Replace(gpuSlice("c1", "node1", "A100", 1), "labels: {fleetfit.io/cluster: c1}", "labels: {}", 1)},
			want: "say which managed cluster it belongs to",
		},
		"devices of a cluster without nodes": {
			docs: []string{cluster("c1"), cluster("c2"), draNode("c1", "node1"), gpuSlice("c2", "node2", "A100", 1)},
			want: `DRA objects (ResourceSlices, DeviceClasses, ResourceClaims) of cluster "c2" but none of its Nodes`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := &Fleet{}
			err := f.Decode(t.Context(), strings.NewReader(strings.Join(tc.docs, "\n---\n")), "test")
			if err == nil {
				err = f.BuildInventories(inventory.DefaultConfig(), at)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestDevicesExample schedules deploy/examples/devices.yaml, the documented DRA fleet file:
// train's two A100s fit only on the node with four, one of them allocated.
func TestDevicesExample(t *testing.T) {
	f, err := ReadFiles(t.Context(), []string{"../../deploy/examples/devices.yaml"}, ReadOptions{Now: at})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"demo/train": {"dra1"}}, selected(run(t, f))); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
	if got := inventory.DevicesByModel(&f.Inventories[0].Status); len(got) != 2 || got[0].Model != "A100" || got[0].Free != 4 || got[0].Allocatable != 5 {
		t.Errorf("devices by model %+v, want A100 4 free of 5 and L4", got)
	}
}

// TestScaleUpExample schedules deploy/examples/scaleup.yaml: no cluster has four GPUs on one
// node now, and the one whose pool can add such a node is chosen, saying so.
func TestScaleUpExample(t *testing.T) {
	f, err := ReadFiles(t.Context(), []string{"../../deploy/examples/scaleup.yaml"}, ReadOptions{Now: at})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), f, Options{Now: f.Inventories[0].Status.ObservedAt.Time})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"demo/finetune": {"grow1"}}, selected(res)); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
	notes := map[string]string{}
	for _, c := range res.Placements[0].Explanation.Clusters {
		notes[c.Name] = c.Note
	}
	if want := "fits after scale-up: 1 node of gpu-4x from NodePool gpu (limit: 3 more)"; notes["grow1"] != want {
		t.Errorf("grow1's note %q, want %q", notes["grow1"], want)
	}
}
