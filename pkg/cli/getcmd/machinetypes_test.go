package getcmd

import (
	stdbytes "bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func reportedType(name string, maximum, reserved int32) fleetfitv1alpha1.ReportedMachineType {
	return fleetfitv1alpha1.ReportedMachineType{Name: name, Usage: fleetfitv1alpha1.MachineUsage{Maximum: maximum, Reserved: reserved}}
}

func TestMachinesColumn(t *testing.T) {
	cases := map[string]struct {
		status   fleetfitv1alpha1.ClusterInventoryStatus
		want     string
		wantWide string
	}{
		"no machine groups": {want: "<none>", wantWide: "<none>"},
		"one group, types sorted by name": {
			status: fleetfitv1alpha1.ClusterInventoryStatus{MachineGroups: []fleetfitv1alpha1.ReportedMachineGroup{
				{Name: "general-machine", Ready: true, MachineTypes: []fleetfitv1alpha1.ReportedMachineType{
					reportedType("compute-xlarge", 2, 1), reportedType("compute-medium", 3, 3),
				}},
			}},
			want:     "compute-medium 3/3, compute-xlarge 1/2",
			wantWide: "general-machine/compute-medium 3/3, general-machine/compute-xlarge 1/2",
		},
		"a type of two groups adds up; wide names each and marks a group not ready": {
			status: fleetfitv1alpha1.ClusterInventoryStatus{MachineGroups: []fleetfitv1alpha1.ReportedMachineGroup{
				{Name: "batch", MachineTypes: []fleetfitv1alpha1.ReportedMachineType{reportedType("compute-xlarge", 4, 0)}},
				{Name: "general-machine", Ready: true, MachineTypes: []fleetfitv1alpha1.ReportedMachineType{reportedType("compute-xlarge", 2, 1)}},
			}},
			want:     "compute-xlarge 1/6",
			wantWide: "batch/compute-xlarge 0/4 (not ready), general-machine/compute-xlarge 1/2",
		},
		"groups left out of the report are counted": {
			status: fleetfitv1alpha1.ClusterInventoryStatus{
				MachineGroups:        []fleetfitv1alpha1.ReportedMachineGroup{{Name: "a", Ready: true, MachineTypes: []fleetfitv1alpha1.ReportedMachineType{reportedType("t", 1, 1)}}},
				OmittedMachineGroups: 3,
			},
			want:     "t 1/1, +3 groups not reported",
			wantWide: "a/t 1/1, +3 groups not reported",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, machines(&tc.status, false)); diff != "" {
				t.Errorf("machines (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWide, machines(&tc.status, true)); diff != "" {
				t.Errorf("machines, wide (-want,+got):\n%s", diff)
			}
		})
	}
}

// machineFleet: cluster1 has general-machine with compute-xlarge (2, one reserved, one used
// by a guest) and compute-medium (1, a guest waiting; each type has a pool node it fits), and batch with compute-xlarge (1,
// nothing yet), whose status says it is not ready; cluster2 has no machine groups; cluster3
// has no inventory.
const machineFleet = `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: cluster1}
spec: {hubAcceptsClient: true}
---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: cluster2}
spec: {hubAcceptsClient: true}
---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: cluster3}
spec: {hubAcceptsClient: true}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: xl-0, labels: {fleetfit.io/cluster: cluster1}}
  status:
    allocatable: {cpu: "40", memory: 128Gi, pods: "110", nvidia.com/gpu: "2"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: v1
  kind: Node
  metadata: {name: xl-1, labels: {fleetfit.io/cluster: cluster1}}
  status:
    allocatable: {cpu: "40", memory: 128Gi, pods: "110", nvidia.com/gpu: "2"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: v1
  kind: Node
  metadata: {name: m-0, labels: {fleetfit.io/cluster: cluster1}}
  status:
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-0, labels: {fleetfit.io/cluster: cluster2}}
  status:
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    conditions: [{type: Ready, status: "True"}]
---
apiVersion: fleetfit.io/v1alpha1
kind: MachineGroup
metadata: {name: general-machine, labels: {fleetfit.io/cluster: cluster1}}
spec:
  nodePools:
  - {name: xl-0, machineType: [{name: compute-xlarge}]}
  - {name: xl-1, machineType: [{name: compute-xlarge}]}
  - {name: m-0, machineType: [{name: compute-medium}]}
  machineTypes:
  - name: compute-xlarge
    spec: {cpu: "40", memory: 128Gi, gpu: {num: 2, product: NVIDIA-GeForce-RTX-3090}}
    available: 2
  - name: compute-medium
    spec: {cpu: 4, memory: 16Gi}
    available: 1
---
apiVersion: fleetfit.io/v1alpha1
kind: MachineGroup
metadata: {name: batch, labels: {fleetfit.io/cluster: cluster1}}
spec:
  machineTypes:
  - name: compute-xlarge
    spec: {cpu: "40", memory: 128Gi, gpu: {num: 2, type: amd.com/gpu}}
    available: 1
status:
  conditions: [{type: Ready, status: "False", reason: NoNodes, message: "the group has no nodes", lastTransitionTime: "2026-03-01T11:00:00Z"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: compute-xlarge-general-machine-0
  namespace: fleetfit-agent
  labels: {machines.fleetfit.io/machine-group: general-machine, machines.fleetfit.io/machine-type: compute-xlarge, machines.fleetfit.io/pod-role: reservation}
spec:
  nodeName: xl-0
  containers: [{name: pause, image: pause, resources: {limits: {cpu: "40", memory: 128Gi, nvidia.com/gpu: "2"}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: team-a
  labels: {machines.fleetfit.io/machine-group: general-machine, machines.fleetfit.io/machine-type: compute-xlarge, machines.fleetfit.io/pod-role: guest}
spec:
  nodeName: xl-1
  containers: [{name: web, image: web, resources: {limits: {cpu: "40", memory: 128Gi, nvidia.com/gpu: "2"}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: team-a
  labels: {fleetfit.io/cluster: cluster1, machines.fleetfit.io/machine-group: general-machine, machines.fleetfit.io/machine-type: compute-medium, machines.fleetfit.io/pod-role: guest}
spec:
  containers: [{name: web, image: web}]
status: {phase: Pending}
`

func writeFleet(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGetMachineTypes(t *testing.T) {
	path := writeFleet(t, machineFleet)
	header := []string{"CLUSTER", "GROUP", "TYPE", "CPU", "MEMORY", "GPU", "MAXIMUM", "RESERVED", "USED", "WAITING", "READY"}
	batch := []string{"cluster1", "batch", "compute-xlarge", "40", "128Gi", "2 amd.com/gpu", "1", "0", "0", "0", "false"}
	medium := []string{"cluster1", "general-machine", "compute-medium", "4", "16Gi", "-", "1", "0", "0", "1", "true"}
	xlarge := []string{"cluster1", "general-machine", "compute-xlarge", "40", "128Gi", "2 nvidia.com/gpu NVIDIA-GeForce-RTX-3090", "2", "1", "1", "0", "true"}
	cases := map[string]struct {
		clusters []string
		all      bool
		want     [][]string
		wantErr  string
	}{
		"every cluster, sorted by cluster, group and type": {
			all:  true,
			want: [][]string{header, batch, medium, xlarge},
		},
		"a cluster named": {
			clusters: []string{"cluster1"},
			want:     [][]string{header, batch, medium, xlarge},
		},
		"a cluster without machine groups, and one without an inventory": {
			clusters: []string{"cluster2", "cluster3"},
			want:     [][]string{header},
		},
		"an unknown cluster": {
			clusters: []string{"cluster9"},
			wantErr:  `there is no ManagedCluster "cluster9"`,
		},
		"neither clusters nor -A": {
			wantErr: "name the clusters whose machine types to list, or give -A for every cluster",
		},
		"clusters and -A": {
			clusters: []string{"cluster1"}, all: true,
			wantErr: "name clusters or give -A (every cluster), not both",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &MachineTypesOptions{Files: []string{path}, Clusters: tc.clusters, AllClusters: tc.all,
				Output: &output.Flags{Format: output.Table}, Now: time.Now}
			var out stdbytes.Buffer
			err := o.Validate()
			if err == nil {
				err = o.Run(t.Context(), &out)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ut.TableRows(out.String())); diff != "" {
				t.Errorf("table (-want,+got):\n%s\n%s", diff, out.String())
			}
		})
	}
}

// TestGetMachineTypesStructured: -o yaml prints each row's machine type with its spec and
// usage as the inventory reports them.
func TestGetMachineTypesStructured(t *testing.T) {
	o := &MachineTypesOptions{Files: []string{writeFleet(t, machineFleet)}, Clusters: []string{"cluster1"},
		Output: &output.Flags{Format: output.YAML}, Now: time.Now}
	var out stdbytes.Buffer
	if err := o.Run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	var got []MachineType
	if err := yaml.UnmarshalStrict(out.Bytes(), &got); err != nil {
		t.Fatalf("decoding:\n%s\n%v", out.String(), err)
	}
	type row struct {
		Cluster, Group, Name string
		Ready                bool
		CPU                  string
		Usage                fleetfitv1alpha1.MachineUsage
	}
	var rows []row
	for _, m := range got {
		rows = append(rows, row{m.Cluster, m.Group, m.Name, m.Ready, m.Spec.CPU.String(), m.Usage})
	}
	want := []row{
		{"cluster1", "batch", "compute-xlarge", false, "40", fleetfitv1alpha1.MachineUsage{Maximum: 1}},
		{"cluster1", "general-machine", "compute-medium", true, "4", fleetfitv1alpha1.MachineUsage{Maximum: 1, Waiting: 1}},
		{"cluster1", "general-machine", "compute-xlarge", true, "40", fleetfitv1alpha1.MachineUsage{Maximum: 2, Reserved: 1, Used: 1}},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("machine types (-want,+got):\n%s", diff)
	}
}

// TestGetClustersMachines: the MACHINES column of get clusters from a fleet file, by type and
// with -o wide by group.
func TestGetClustersMachines(t *testing.T) {
	path := writeFleet(t, machineFleet)
	cases := map[string]struct {
		format string
		want   map[string]string
	}{
		"table": {
			format: output.Table,
			want:   map[string]string{"cluster1": "compute-medium 0/1, compute-xlarge 1/3", "cluster2": "<none>", "cluster3": "-"},
		},
		"wide": {
			format: output.Wide,
			want: map[string]string{
				"cluster1": "batch/compute-xlarge 0/1 (not ready), general-machine/compute-medium 0/1, general-machine/compute-xlarge 1/2",
				"cluster2": "<none>", "cluster3": "-",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &ClustersOptions{Files: []string{path}, Output: &output.Flags{Format: tc.format}, Now: time.Now}
			var out stdbytes.Buffer
			if err := o.Run(t.Context(), &out); err != nil {
				t.Fatal(err)
			}
			rows := ut.TableRows(out.String())
			column := -1
			for i, h := range rows[0] {
				if h == "MACHINES FREE/MAX" {
					column = i
				}
			}
			if column < 0 {
				t.Fatalf("no MACHINES FREE/MAX column:\n%s", out.String())
			}
			got := map[string]string{}
			for _, r := range rows[1:] {
				got[r[0]] = r[column]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MACHINES FREE/MAX by cluster (-want,+got):\n%s\n%s", diff, out.String())
			}
		})
	}
}
