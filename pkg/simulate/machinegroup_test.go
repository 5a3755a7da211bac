package simulate

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// machineGroup is a MachineGroup of cluster with compute-xlarge (available 2, 2 GPUs of the
// default type) and compute-medium (available 1) on the cluster's nodes <cluster>-xl-0,
// <cluster>-xl-1 and <cluster>-m-0 (poolNodes); status, when not empty, is its status.
func machineGroup(cluster, name, status string) string {
	doc := `
apiVersion: fleetfit.io/v1alpha1
kind: MachineGroup
metadata:
  name: ` + name + `
  labels: {fleetfit.io/cluster: ` + cluster + `}
spec:
  nodePools:
  - {name: ` + cluster + `-xl-0, machineType: [{name: compute-xlarge}]}
  - {name: ` + cluster + `-xl-1, machineType: [{name: compute-xlarge}]}
  - {name: ` + cluster + `-m-0, machineType: [{name: compute-medium}]}
  machineTypes:
  - name: compute-xlarge
    spec: {cpu: "40", memory: 128Gi, gpu: {num: 2, product: NVIDIA-GeForce-RTX-3090}}
    available: 2
  - name: compute-medium
    spec: {cpu: "4", memory: 16Gi}
    available: 1`
	if status != "" {
		doc += "\nstatus: " + status
	}
	return doc
}

// machineResources are what one machine of machineGroup's types has, as a pod's requests.
var machineResources = map[string]string{
	"compute-xlarge": `{cpu: "40", memory: 128Gi, nvidia.com/gpu: "2"}`,
	"compute-medium": `{cpu: "4", memory: 16Gi}`,
}

// machinePod is a pod of group general-machine's machine type, requesting what one machine
// has: role is reservation or guest; node, when not empty, is where it runs, else it is
// pending.
func machinePod(cluster, namespace, name, role, machineType, node string) string {
	doc := `
apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  namespace: ` + namespace + `
  labels:
    fleetfit.io/cluster: ` + cluster + `
    machines.fleetfit.io/machine-group: general-machine
    machines.fleetfit.io/machine-type: ` + machineType + `
    machines.fleetfit.io/pod-role: ` + role + `
spec:
  containers: [{name: main, image: main, resources: {requests: ` + machineResources[machineType] + `}}]`
	if node == "" {
		return doc + "\nstatus: {phase: Pending}"
	}
	return doc + "\n  nodeName: " + node + "\nstatus: {phase: Running}"
}

// poolNodes are the nodes of machineGroup's pool.
func poolNodes(cluster string) []string {
	return []string{cpuNode(cluster, cluster+"-xl-0"), cpuNode(cluster, cluster+"-xl-1"), cpuNode(cluster, cluster+"-m-0")}
}

func cpuNode(cluster, name string) string {
	return `
apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels: {fleetfit.io/cluster: ` + cluster + `}
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "2"}
  conditions: [{type: Ready, status: "True"}]`
}

// TestMachineGroupsOfAFile: a file's MachineGroups and their reservation and guest pods
// become the cluster's status.machineGroups as its agent reports them.
func TestMachineGroupsOfAFile(t *testing.T) {
	xlarge := fleetfitv1alpha1.MachineTypeSpec{
		CPU: resource.MustParse("40"), Memory: resource.MustParse("128Gi"),
		GPU: &fleetfitv1alpha1.MachineGPU{Type: "nvidia.com/gpu", Num: 2, Product: "NVIDIA-GeForce-RTX-3090"},
	}
	xlarge400 := *xlarge.DeepCopy()
	xlarge400.CPU = resource.MustParse("400")
	medium := fleetfitv1alpha1.MachineTypeSpec{CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi")}
	nodes := append([]string{cluster("c1")}, poolNodes("c1")...)
	cases := map[string]struct {
		docs []string
		// edit, when set, changes the first document (the group).
		edit func(string) string
		want []fleetfitv1alpha1.ReportedMachineGroup
	}{
		"a group without pods: nothing reserved yet": {
			docs: []string{machineGroup("c1", "general-machine", "")},
			want: []fleetfitv1alpha1.ReportedMachineGroup{{Name: "general-machine", Ready: true, MachineTypes: []fleetfitv1alpha1.ReportedMachineType{
				{Name: "compute-xlarge", Spec: xlarge, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 2}},
				{Name: "compute-medium", Spec: medium, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 1}},
			}}},
		},
		"reservations running and pending, a guest running and one waiting": {
			docs: []string{
				machineGroup("c1", "general-machine", ""),
				machinePod("c1", "fleetfit-agent", "compute-xlarge-general-machine-0", "reservation", "compute-xlarge", "c1-xl-0"),
				machinePod("c1", "fleetfit-agent", "compute-xlarge-general-machine-1", "reservation", "compute-xlarge", ""),
				machinePod("c1", "team-a", "web-1", "guest", "compute-xlarge", "c1-xl-1"),
				machinePod("c1", "team-a", "web-2", "guest", "compute-medium", ""),
			},
			want: []fleetfitv1alpha1.ReportedMachineGroup{{Name: "general-machine", Ready: true, MachineTypes: []fleetfitv1alpha1.ReportedMachineType{
				{Name: "compute-xlarge", Spec: xlarge, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 2, Reserved: 1, Used: 1}},
				{Name: "compute-medium", Spec: medium, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 1, Waiting: 1}},
			}}},
		},
		"a group whose status says it is not ready; its status usage is recounted": {
			docs: []string{
				machineGroup("c1", "general-machine", `{conditions: [{type: Ready, status: "False", reason: NodeNotReady, message: "node xl-1 is not ready", lastTransitionTime: "2026-03-01T11:00:00Z"}], `+
					`availableMachines: [{name: compute-xlarge, usage: {maximum: 2, reserved: 2}}]}`),
			},
			want: []fleetfitv1alpha1.ReportedMachineGroup{{Name: "general-machine", MachineTypes: []fleetfitv1alpha1.ReportedMachineType{
				{Name: "compute-xlarge", Spec: xlarge, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 2}},
				{Name: "compute-medium", Spec: medium, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 1}},
			}}},
		},
		"a type larger than every pool node of it: not ready, whatever the status says": {
			docs: []string{machineGroup("c1", "general-machine", `{conditions: [{type: Ready, status: "True", reason: Ready, message: ok, lastTransitionTime: "2026-03-01T11:00:00Z"}]}`)},
			edit: func(d string) string {
				return strings.Replace(d, `cpu: "40", memory: 128Gi, gpu`, `cpu: "400", memory: 128Gi, gpu`, 1)
			},
			want: []fleetfitv1alpha1.ReportedMachineGroup{{Name: "general-machine", MachineTypes: []fleetfitv1alpha1.ReportedMachineType{
				{Name: "compute-xlarge", Spec: xlarge400, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 2}},
				{Name: "compute-medium", Spec: medium, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 1}},
			}}},
		},
		"groups sorted by name; another group's pods count nowhere in it": {
			docs: []string{
				machineGroup("c1", "general-machine", ""),
				machineGroup("c1", "batch", ""),
				machinePod("c1", "fleetfit-agent", "compute-medium-general-machine-0", "reservation", "compute-medium", "c1-m-0"),
			},
			want: []fleetfitv1alpha1.ReportedMachineGroup{
				{Name: "batch", Ready: true, MachineTypes: []fleetfitv1alpha1.ReportedMachineType{
					{Name: "compute-xlarge", Spec: xlarge, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 2}},
					{Name: "compute-medium", Spec: medium, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 1}},
				}},
				{Name: "general-machine", Ready: true, MachineTypes: []fleetfitv1alpha1.ReportedMachineType{
					{Name: "compute-xlarge", Spec: xlarge, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 2}},
					{Name: "compute-medium", Spec: medium, Usage: fleetfitv1alpha1.MachineUsage{Maximum: 1, Reserved: 1}},
				}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			docs := slices.Clone(tc.docs)
			if tc.edit != nil {
				docs[0] = tc.edit(docs[0])
			}
			f := fleetOf(t, append(slices.Clone(nodes), docs...)...)
			if len(f.Inventories) != 1 {
				t.Fatalf("%d inventories, want 1", len(f.Inventories))
			}
			if diff := cmp.Diff(tc.want, f.Inventories[0].Status.MachineGroups); diff != "" {
				t.Errorf("status.machineGroups (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestMachineGroupsOfTwoClusters: two clusters may each have a group of the same name, and
// marked reservation pods of the same name.
func TestMachineGroupsOfTwoClusters(t *testing.T) {
	docs := append([]string{cluster("c1"), cluster("c2")}, poolNodes("c1")...)
	docs = append(docs, poolNodes("c2")...)
	f := fleetOf(t, append(docs,
		machineGroup("c1", "general-machine", ""), machineGroup("c2", "general-machine", ""),
		machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", ""),
		machinePod("c2", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", "c2-xl-0"),
		machinePod("c2", "fleetfit-agent", "r-1", "reservation", "compute-xlarge", "c2-xl-1"))...)
	got := map[string]int32{}
	for _, inv := range f.Inventories {
		got[inv.Namespace] = inv.Status.MachineGroups[0].MachineTypes[0].Usage.Reserved
	}
	if diff := cmp.Diff(map[string]int32{"c1": 0, "c2": 2}, got); diff != "" {
		t.Errorf("compute-xlarge reserved by cluster (-want,+got):\n%s", diff)
	}
}

// TestMachineGroupsRefused: a MachineGroup is checked by its CRD's schema and CEL rules, as
// the managed cluster's API server would, and must belong to a cluster given by its Nodes.
func TestMachineGroupsRefused(t *testing.T) {
	inv := `
apiVersion: fleetfit.io/v1alpha1
kind: ClusterInventory
metadata: {name: c1, namespace: c1}`
	pool := append([]string{cluster("c1")}, poolNodes("c1")...)
	cases := map[string]struct {
		docs []string
		want string
	}{
		"a node pool entry of an undefined machine type (CEL)": {
			docs: []string{cluster("c1"), strings.Replace(machineGroup("c1", "general-machine", ""), "{name: c1-m-0, machineType: [{name: compute-medium}]}", "{name: c1-m-0, machineType: [{name: compute-tiny}]}", 1)},
			want: `fleet.yaml, document 2: MachineGroup "general-machine" is invalid (the cluster's API server would refuse it): spec.nodePools: Invalid value: machine type compute-tiny of a node pool entry is not defined in machineTypes; define it there or fix the entry`,
		},
		"a negative available (schema)": {
			docs: []string{cluster("c1"), strings.Replace(machineGroup("c1", "general-machine", ""), "available: 1", "available: -1", 1)},
			want: `fleet.yaml, document 2: MachineGroup "general-machine" is invalid (the cluster's API server would refuse it): spec.machineTypes[1].available: Invalid value: -1: spec.machineTypes[1].available in body should be greater than or equal to 0`,
		},
		"no cluster mark": {
			docs: []string{cluster("c1"), strings.Replace(machineGroup("c1", "general-machine", ""), "labels: {fleetfit.io/cluster: c1}", "labels: {}", 1)},
			want: `fleet.yaml, document 2: MachineGroup "general-machine" has no fleetfit.io/cluster label or annotation: say which managed cluster it belongs to`,
		},
		"twice in one cluster": {
			docs: []string{cluster("c1"), cpuNode("c1", "xl-0"), machineGroup("c1", "general-machine", ""), machineGroup("c1", "general-machine", "")},
			want: `MachineGroup "general-machine" of cluster "c1" appears twice: in fleet.yaml, document 3 and in fleet.yaml, document 4; give each object a name of its own, or remove one`,
		},
		"of an unknown cluster": {
			docs: []string{cluster("c1"), cpuNode("c1", "xl-0"), machineGroup("c9", "general-machine", "")},
			want: `MachineGroup "general-machine" (fleet.yaml, document 3) is marked fleetfit.io/cluster=c9, but there is no ManagedCluster "c9": add it, or fix the mark`,
		},
		"of a cluster given by its inventory": {
			docs: []string{cluster("c1"), inv, machineGroup("c1", "general-machine", "")},
			want: `MachineGroup "general-machine" (fleet.yaml, document 3) is marked fleetfit.io/cluster=c1, a cluster given by its ClusterInventory, which reports its machine groups itself (status.machineGroups): remove the group, or give the cluster's Nodes instead of its inventory`,
		},
		"a pod twice in one cluster, once marked and once bound to its node": {
			docs: []string{cluster("c1"), cpuNode("c1", "xl-0"),
				machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", ""),
				strings.Replace(machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", "xl-0"), "fleetfit.io/cluster: c1", "fleetfit.io/other: c1", 1)},
			want: `Pod "fleetfit-agent/r-0" of cluster "c1" appears twice: (fleet.yaml, document 3) and (fleet.yaml, document 4); give each pod a name of its own, or remove one`,
		},
		"a marked pod twice": {
			docs: []string{cluster("c1"), cpuNode("c1", "xl-0"),
				machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", ""),
				machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", "xl-0")},
			want: `Pod "fleetfit-agent/r-0" of cluster "c1" appears twice: in fleet.yaml, document 3 and in fleet.yaml, document 4; give each object a name of its own, or remove one`,
		},
		"a pool node that is not in the files": {
			docs: append(append([]string{cluster("c1")}, poolNodes("c1")[:2]...), machineGroup("c1", "general-machine", "")),
			want: `MachineGroup "general-machine" (fleet.yaml, document 4): spec.nodePools[2] names node "c1-m-0", which is no Node of cluster c1 in the files: add the node, marked fleetfit.io/cluster=c1, or fix the entry`,
		},
		"three reservations on one node with room for one": {
			docs: append(slices.Clone(pool), machineGroup("c1", "general-machine", ""),
				machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", "c1-xl-0"),
				machinePod("c1", "fleetfit-agent", "r-1", "reservation", "compute-xlarge", "c1-xl-0"),
				machinePod("c1", "fleetfit-agent", "r-2", "reservation", "compute-xlarge", "c1-xl-0")),
			want: `Node "c1-xl-0" (fleet.yaml, document 2) of cluster c1 has 64 cpu allocatable, but the pods bound to it (fleetfit-agent/r-0, fleetfit-agent/r-1, fleetfit-agent/r-2) request 120: a kubelet admits no pod beyond its node's allocatable; remove pods, or bind them to other nodes`,
		},
		"more reservations bound than the type has machines": {
			docs: append(slices.Clone(pool), machineGroup("c1", "general-machine", ""),
				machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-medium", "c1-m-0"),
				machinePod("c1", "fleetfit-agent", "r-1", "reservation", "compute-medium", "c1-m-0"),
				machinePod("c1", "fleetfit-agent", "r-2", "reservation", "compute-medium", "c1-m-0")),
			want: `MachineGroup "general-machine" (fleet.yaml, document 5) of cluster c1: machine type compute-medium has available 1, but 3 of its reservation pods are bound to nodes (fleetfit-agent/r-0, fleetfit-agent/r-1, fleetfit-agent/r-2): the machine controller keeps at most available of them; remove 2`,
		},
		"a reservation smaller than a machine": {
			docs: append(slices.Clone(pool), machineGroup("c1", "general-machine", ""),
				strings.Replace(machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", "c1-xl-0"), `cpu: "40"`, `cpu: "1"`, 1)),
			want: `Pod "fleetfit-agent/r-0" (fleet.yaml, document 6), a reservation of general-machine/compute-xlarge in cluster c1, requests 1 cpu where one machine has 40: the machine controller's reservations request what one machine has, the type's spec; fix the pod's requests or remove it`,
		},
		"a reservation on a node outside its type's pool": {
			docs: append(slices.Clone(pool), cpuNode("c1", "c1-other"), machineGroup("c1", "general-machine", ""),
				machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-medium", "c1-xl-0")),
			want: `Pod "fleetfit-agent/r-0" (fleet.yaml, document 7), a reservation of general-machine/compute-medium in cluster c1, is bound (spec.nodeName) to node "c1-xl-0", which is not in the type's pool (c1-m-0): its node affinity allows only the pool's nodes; bind it to one of them, or remove it`,
		},
		"a guest on a node outside every pool": {
			docs: append(slices.Clone(pool), cpuNode("c1", "c1-other"), machineGroup("c1", "general-machine", ""),
				machinePod("c1", "team-a", "web-0", "guest", "compute-xlarge", "c1-other")),
			want: `Pod "team-a/web-0" (fleet.yaml, document 7), a guest of general-machine/compute-xlarge in cluster c1, is bound (spec.nodeName) to node "c1-other", which is not in the type's pool (c1-xl-0, c1-xl-1): its node affinity allows only the pool's nodes; bind it to one of them, or remove it`,
		},
		"an inventory that reports more reserved than maximum": {
			docs: []string{cluster("c1"), inv + `
status:
  observedAt: "2026-03-01T11:00:00Z"
  machineGroups:
  - name: general-machine
    ready: true
    machineTypes:
    - name: compute-xlarge
      spec: {cpu: "40", memory: 128Gi}
      usage: {maximum: 1, reserved: 3}`},
			want: `ClusterInventory "c1/c1" (fleet.yaml, document 2): status.machineGroups[0].machineTypes[0].usage (general-machine/compute-xlarge): reserved 3 is more than maximum 1: the machine controller keeps at most maximum reservation pods, so no agent reports more; fix the usage`,
		},
		"of a cluster without nodes": {
			docs: []string{cluster("c1"), machineGroup("c1", "general-machine", "")},
			want: `MachineGroup "general-machine" (fleet.yaml, document 2) is marked fleetfit.io/cluster=c1, but the files have no Node of cluster c1: add its Nodes`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Fleet{}
			err := f.Decode(t.Context(), strings.NewReader(strings.Join(tc.docs, "\n---\n")), "fleet.yaml")
			if err == nil {
				err = f.BuildInventories(inventory.DefaultConfig(), at)
			}
			if err == nil {
				t.Fatalf("the fleet was accepted, want the error %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}
