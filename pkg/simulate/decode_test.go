package simulate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
)

// objectsOf names what a fleet holds, as "Kind namespace/name", sorted.
func objectsOf(f *Fleet) []string {
	var out []string
	for _, c := range f.Clusters {
		out = append(out, "ManagedCluster "+c.Name)
	}
	for _, p := range f.Placements {
		out = append(out, "Placement "+p.Namespace+"/"+p.Name)
	}
	for _, in := range f.Intents {
		out = append(out, "HPAIntent "+in.Namespace+"/"+in.Name)
	}
	for _, inv := range f.Inventories {
		out = append(out, "ClusterInventory "+inv.Namespace+"/"+inv.Name)
	}
	for _, nodes := range f.Nodes {
		for _, n := range nodes {
			out = append(out, "Node "+n.Name)
		}
	}
	for _, p := range f.Pods {
		out = append(out, "Pod "+p.Namespace+"/"+p.Name)
	}
	for cluster, groups := range f.MachineGroups {
		for _, g := range groups {
			out = append(out, "MachineGroup "+cluster+"/"+g.Name)
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func clusterJSON(name string) string {
	return `{"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "metadata": {"name": "` + name + `"}}`
}

func utf16Text(s string, order binary.AppendByteOrder) []byte {
	var b []byte
	b = order.AppendUint16(b, 0xFEFF)
	for _, u := range utf16.Encode([]rune(s)) {
		b = order.AppendUint16(b, u)
	}
	return b
}

func TestDecodeReads(t *testing.T) {
	twoClusters := cluster("c1") + "\n---\n" + cluster("c2")
	cases := map[string]struct {
		in   []byte
		want []string
	}{
		"a JSON stream": {
			in:   []byte(clusterJSON("c1") + "\n" + clusterJSON("c2") + clusterJSON("c3")),
			want: []string{"ManagedCluster c1", "ManagedCluster c2", "ManagedCluster c3"},
		},
		"JSON documents separated by ---": {
			in:   []byte(clusterJSON("c1") + "\n---\n" + clusterJSON("c2") + "\n" + clusterJSON("c3") + "\n---\n" + cluster("c4")),
			want: []string{"ManagedCluster c1", "ManagedCluster c2", "ManagedCluster c3", "ManagedCluster c4"},
		},
		"a YAML flow mapping": {
			in:   []byte("{apiVersion: cluster.open-cluster-management.io/v1, kind: ManagedCluster, metadata: {name: c1}}"),
			want: []string{"ManagedCluster c1"},
		},
		"UTF-16 little-endian with a byte order mark": {
			in:   utf16Text(twoClusters, binary.LittleEndian),
			want: []string{"ManagedCluster c1", "ManagedCluster c2"},
		},
		"UTF-16 big-endian with a byte order mark": {
			in:   utf16Text(twoClusters, binary.BigEndian),
			want: []string{"ManagedCluster c1", "ManagedCluster c2"},
		},
		"UTF-8 with a byte order mark": {
			in:   append([]byte{0xEF, 0xBB, 0xBF}, twoClusters...),
			want: []string{"ManagedCluster c1", "ManagedCluster c2"},
		},
		"a List": {
			in:   []byte("apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(placementDoc("p")), "\n", "\n  ") + "\n- " + clusterJSON("c1")),
			want: []string{"ManagedCluster c1", "Placement ml/p"},
		},
		"comments only, and empty documents": {
			in:   []byte("# nothing\n---\n---\n"),
			want: []string{},
		},
		"a Namespace is ignored": {
			in:   []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}"),
			want: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Fleet{}
			if err := f.Decode(t.Context(), bytes.NewReader(tc.in), "fleet.yaml"); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tc.want, objectsOf(f)); diff != "" {
				t.Errorf("objects read (-want,+got):\n%s", diff)
			}
		})
	}
}

const (
	placementHead = "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: p, namespace: ml}\nspec:\n"
	nodeHead      = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {fleetfit.io/cluster: c1}\n"
	podHead       = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\n"
	intentHead    = "apiVersion: fleetfit.io/v1alpha1\nkind: HPAIntent\nmetadata: {name: i, namespace: ml}\nspec:\n  placementRef: {name: p}\n  consumers:\n  - name: c\n    target: {apiVersion: apps/v1, kind: Deployment, name: d, container: c}\n"
	int32Range    = "out of range: this field is a 32-bit integer, from -2147483648 to 2147483647"
)

func TestDecodeRefuses(t *testing.T) {
	cases := map[string]struct {
		in   string
		want string
	}{
		"a negative maxSkew": {
			in:   placementHead + "  spreadPolicy: {spreadConstraints: [{topologyKey: zone, topologyKeyType: Label, maxSkew: -1}]}",
			want: `fleet.yaml, document 1: Placement "ml/p" is invalid (the hub's API server would refuse it): spec.spreadPolicy.spreadConstraints[0].maxSkew: Invalid value: -1: spec.spreadPolicy.spreadConstraints[0].maxSkew in body should be greater than or equal to 1`,
		},
		"a prioritizer weight of a million": {
			in:   placementHead + "  prioritizerPolicy: {mode: Additive, configurations: [{scoreCoordinate: {builtIn: Steady}, weight: 1000000}]}",
			want: `fleet.yaml, document 1: Placement "ml/p" is invalid (the hub's API server would refuse it): spec.prioritizerPolicy.configurations[0].weight: Invalid value: 1000000: spec.prioritizerPolicy.configurations[0].weight in body should be less than or equal to 10`,
		},
		"numberOfClusters that wraps to 0": {
			in:   placementHead + "  numberOfClusters: 4294967296",
			want: `fleet.yaml, document 1: Placement "ml/p" is invalid (the hub's API server would refuse it): spec.numberOfClusters: Invalid value: 4294967296: ` + int32Range,
		},
		"replicas that wrap to 1": {
			in:   intentHead + "    replicas: 4294967297\n    requirements: [{name: r, resource: {name: cpu, requests: '1'}}]",
			want: `fleet.yaml, document 1: HPAIntent "ml/i" is invalid (the hub's API server would refuse it): spec.consumers[0].replicas: Invalid value: 4294967297: spec.consumers[0].replicas in body should be less than or equal to 2147483647`,
		},
		"a weight that wraps to 5": {
			in:   intentHead + "    requirements: [{name: r, mandatory: false, weight: 4294967301, resource: {name: cpu, requests: '1'}}]",
			want: `fleet.yaml, document 1: HPAIntent "ml/i" is invalid (the hub's API server would refuse it): spec.consumers[0].requirements[0].weight: Invalid value: 4294967301: spec.consumers[0].requirements[0].weight in body should be less than or equal to 10`,
		},
		"clustersPerDecisionGroup that is no percentage": {
			in:   placementHead + "  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 'abc%'}}",
			want: `fleet.yaml, document 1: Placement "ml/p" is invalid (the hub's API server would refuse it): spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup: Invalid value: "abc%": spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup in body should match '^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$'`,
		},
		"a CEL rule of the HPAIntent CRD": {
			in:   intentHead + "    requirements: [{name: r, feature: {key: gpu, value: a100, values: [a100]}}]",
			want: `fleet.yaml, document 1: HPAIntent "ml/i" is invalid (the hub's API server would refuse it): spec.consumers[0].requirements[0].feature: Invalid value: set value (EMCO's shorthand for operator In with one value) or values, not both`,
		},
		"a cluster name that is no DNS name": {
			in:   "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata: {name: clüster-☃}",
			want: `fleet.yaml, document 1: ManagedCluster "clüster-☃" is invalid (the hub's API server would refuse it): metadata.name: Invalid value: "clüster-☃": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		"a label value of 50 MB": {
			// JSON, which is read much faster than YAML: the test checks the label, not the parser.
			in:   `{"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "metadata": {"name": "c1", "labels": {"zone": "` + strings.Repeat("z", 50<<20) + `"}}}`,
			want: `fleet.yaml, document 1: ManagedCluster "c1" is invalid (the hub's API server would refuse it): metadata.labels: Invalid value: "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz... (52428800 bytes)": must be no more than 63 bytes`,
		},
		"negative allocatable": {
			in:   nodeHead + "status: {allocatable: {cpu: '-1', memory: 1Gi}}",
			want: `fleet.yaml, document 1: Node "n1" is invalid (the cluster's API server would refuse it): status.allocatable[cpu]: Invalid value: "-1": must be greater than or equal to 0`,
		},
		"an allocatable with an exponent the quantity parser never finishes": {
			in:   nodeHead + "status: {allocatable: {cpu: '1e70955161706', memory: 1Gi}}",
			want: `fleet.yaml, document 1: Node "n1" is invalid (the cluster's API server would refuse it): status.allocatable.cpu: Invalid value: "1e70955161706": write amounts with an exponent of at most three digits, such as 4e9 or 4G: longer exponents give amounts far beyond what fleetfit can count, or below the smallest, 1n`,
		},
		"a pod request with a long negative exponent": {
			in:   "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: default}\nspec: {containers: [{name: c, image: i, resources: {requests: {cpu: '1e-709551616'}}}]}",
			want: `fleet.yaml, document 1: Pod "default/p1" is invalid (the cluster's API server would refuse it): spec.containers[0].resources.requests.cpu: Invalid value: "1e-709551616": write amounts with an exponent of at most three digits, such as 4e9 or 4G: longer exponents give amounts far beyond what fleetfit can count, or below the smallest, 1n`,
		},
		"an empty taint key": {
			in:   nodeHead + "spec: {taints: [{key: '', effect: NoSchedule}]}",
			want: `fleet.yaml, document 1: Node "n1" is invalid (the cluster's API server would refuse it): spec.taints[0].key: Invalid value: "": name part must be non-empty; spec.taints[0].key: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		},
		"a pod requesting more than its limit": {
			in:   podHead + "spec: {containers: [{name: a, image: a, resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]}",
			want: `fleet.yaml, document 1: Pod "ml/p" is invalid (the cluster's API server would refuse it): spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to the cpu limit of 1`,
		},
		"a pod's int32 that would wrap": {
			in:   podHead + "spec: {priority: 4294967297, containers: [{name: a, image: a}]}",
			want: `fleet.yaml, document 1: Pod "ml/p" is invalid (the cluster's API server would refuse it): spec.priority: Invalid value: 4294967297: ` + int32Range,
		},
		"a quantity that is no quantity": {
			in:   podHead + "spec: {containers: [{name: a, image: a}, {name: b, image: b, resources: {requests: {memory: 12XB}}}]}",
			want: `fleet.yaml, document 1: Pod "ml/p": spec.containers[1].resources.requests.memory: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		},
		"a value of the wrong type": {
			in:   nodeHead + "spec: {unschedulable: yes-please}",
			want: `fleet.yaml, document 1: Node "n1": spec.unschedulable: a string where a boolean (true or false) belongs`,
		},
		"a mapping where a sequence belongs": {
			in:   podHead + "spec: {containers: {name: a, image: a}}",
			want: `fleet.yaml, document 1: Pod "ml/p": spec.containers: a mapping where a sequence belongs`,
		},
		"a fraction where an integer belongs": {
			in:   podHead + "spec: {containers: [{name: a, image: a}, {name: b, image: b, ports: [{containerPort: 1.5}]}]}",
			want: `fleet.yaml, document 1: Pod "ml/p": spec.containers[1].ports[0].containerPort: a number (1.5) where an integer belongs`,
		},
		"YAML's no, a boolean, as a name": {
			in:   "apiVersion: v1\nkind: Node\nmetadata: {name: no, labels: {fleetfit.io/cluster: c1}}",
			want: `fleet.yaml, document 1: Node "": metadata.name: a boolean (false) where a string belongs`,
		},
		"a duplicate YAML key": {
			in:   placementHead + "  numberOfClusters: 1\n  numberOfClusters: 2",
			want: `fleet.yaml, document 1: yaml: unmarshal errors: line 6: key "numberOfClusters" already set in map (lines count from the document's start; a key may appear only once in a mapping)`,
		},
		"a duplicate JSON key": {
			in:   `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", "name": "b"}}`,
			want: `fleet.yaml, document 1: duplicate field "metadata.name": a key may appear only once in a mapping`,
		},
		"the third object of a JSON stream": {
			in:   clusterJSON("c1") + clusterJSON("c2") + `{"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "metadata": {"name": "C3"}}`,
			want: `fleet.yaml, document 3: ManagedCluster "C3" is invalid (the hub's API server would refuse it): metadata.name: Invalid value: "C3": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		"a broken JSON stream": {
			in:   clusterJSON("c1") + "\n" + `{"apiVersion": `,
			want: `fleet.yaml, document 2: not valid JSON after the 1 object(s) before it: unexpected EOF`,
		},
		"an item of a List": {
			in:   "apiVersion: v1\nkind: List\nitems:\n- " + clusterJSON("c1") + "\n- {apiVersion: v1, kind: Node, metadata: {name: n2}}",
			want: `fleet.yaml, document 1, item 2: Node "n2" has no fleetfit.io/cluster label or annotation: say which managed cluster it belongs to`,
		},
		"a wrong apiVersion of a known kind": {
			in:   "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: ManagedCluster\nmetadata: {name: c1}",
			want: `fleet.yaml, document 1: ManagedCluster has apiVersion cluster.open-cluster-management.io/v1, not cluster.open-cluster-management.io/v1beta1: set apiVersion: cluster.open-cluster-management.io/v1`,
		},
		"a ConfigMap": {
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}",
			want: `fleet.yaml, document 1: ConfigMap (v1) is not part of a fleet: a fleet file holds ` + supportedKinds,
		},
		"a kind in the wrong case": {
			in:   "apiVersion: v1\nkind: node\nmetadata: {name: c}",
			want: `fleet.yaml, document 1: kind "node" is not a kind of a fleet: kinds are case-sensitive; did you mean Node?`,
		},
		"no kind": {
			in:   "---\nmetadata: {name: p}",
			want: `fleet.yaml, document 1: an object needs apiVersion and kind, such as apiVersion: cluster.open-cluster-management.io/v1beta1 and kind: Placement`,
		},
		"an apiVersion that is no group and version": {
			in:   "apiVersion: a/b/c\nkind: Node\nmetadata: {name: c}",
			want: `fleet.yaml, document 1: apiVersion "a/b/c" is not a group and version such as cluster.open-cluster-management.io/v1beta1`,
		},
		"an apiVersion that is a number": {
			in:   "apiVersion: 1\nkind: Node\nmetadata: {name: c}",
			want: `fleet.yaml, document 1: an object needs apiVersion and kind, such as apiVersion: cluster.open-cluster-management.io/v1beta1 and kind: Placement`,
		},
		"a sequence": {
			in:   cluster("c1") + "\n---\n- a\n- b",
			want: `fleet.yaml, document 2: is a sequence, not an object: every document is one object with apiVersion and kind, or a List of them`,
		},
		"a misspelt field": {
			in:   placementHead + "  numberOfCluster: 1",
			want: `fleet.yaml, document 1: Placement "ml/p": strict decoding error: unknown field "spec.numberOfCluster"`,
		},
		"a node without a cluster": {
			in:   "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}",
			want: `fleet.yaml, document 1: Node "node-1" has no fleetfit.io/cluster label or annotation: say which managed cluster it belongs to`,
		},
		"a List whose items are a string": {
			in:   "apiVersion: v1\nkind: List\nitems: not-objects",
			want: `fleet.yaml, document 1: List: items is a string, not a sequence: a List holds its objects as a sequence under items`,
		},
		"a ManagedClusterSet selector with an unknown operator": {
			in: "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\nmetadata: {name: gpus}\n" +
				"spec: {clusterSelector: {selectorType: LabelSelector, labelSelector: {matchExpressions: [{key: gpu, operator: Within, values: [a100]}]}}}",
			want: `fleet.yaml, document 1: ManagedClusterSet "gpus" has a selector OCM cannot read, and would select no cluster with: spec.clusterSelector.labelSelector.matchExpressions[0].operator: Invalid value: "Within": not a valid selector operator`,
		},
		"an object twice": {
			in:   placementDoc("p") + "\n---\n" + cluster("c1") + "\n---\n" + placementDoc("p"),
			want: `Placement "ml/p" appears twice: in fleet.yaml, document 1 and in fleet.yaml, document 3; give each object a name of its own, or remove one`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := (&Fleet{}).Decode(t.Context(), strings.NewReader(tc.in), "fleet.yaml")
			if err == nil {
				t.Fatalf("Decode accepted the input, want the error %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Decode error (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestDecodeValidatesIntents: HPAIntents are also checked as the hub's admission checks them,
// beyond their CRD's schema.
func TestDecodeValidatesIntents(t *testing.T) {
	in := strings.Replace(gpuIntent("p", "1"), "    - name: a100", "    - name: a100\n      weight: 3", 1)
	err := (&Fleet{}).Decode(t.Context(), strings.NewReader(in), "fleet.yaml")
	want := `fleet.yaml, document 1: HPAIntent "ml/p" is invalid (the hub's API server would refuse it): spec.consumers[0].requirements[1]`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Decode error = %v, want one starting with %q", err, want)
	}
}

// TestDuplicateAcrossFiles: an object given in two files is refused, naming both.
func TestDuplicateAcrossFiles(t *testing.T) {
	f := &Fleet{}
	if err := f.Decode(t.Context(), strings.NewReader(cluster("c0")+"\n---\n"+cluster("c1")), "a.yaml"); err != nil {
		t.Fatal(err)
	}
	err := f.Decode(t.Context(), strings.NewReader(clusterJSON("c1")), "b.json")
	want := `ManagedCluster "c1" appears twice: in a.yaml, document 2 and in b.json, document 1; give each object a name of its own, or remove one`
	if err == nil || err.Error() != want {
		t.Errorf("Decode error = %v, want %q", err, want)
	}
}

// endless is an endless input of one byte.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// counting counts what is read through it.
type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestDecodeLimits(t *testing.T) {
	random := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	cases := map[string]struct {
		in io.Reader
		// maxRead is how much of the input may be read before it is refused.
		maxRead int
		want    string
	}{
		"an endless text": {
			in:      endless('\n'),
			maxRead: MaxFileSize + 2*readChunk,
			want:    "standard input: larger than 64 MiB: a fleet file holds at most 64 MiB (is it the file you meant?)",
		},
		"/dev/zero": {
			in:      endless(0),
			maxRead: 2 * readChunk,
			want:    "standard input: is not a YAML or JSON text: line 1 holds the control character 0x00 (UTF-16 without a byte order mark, or a binary file? save it as UTF-8)",
		},
		"/dev/urandom": {
			in:      bytes.NewReader(random),
			maxRead: 2 * readChunk,
			want:    "standard input: is not a YAML or JSON text: line 1 holds the control character 0x10 (is it a binary file?)",
		},
		"Latin-1 text": {
			in:      strings.NewReader("apiVersion: v1\nkind: Node\nmetadata: {name: caf\xe9}"),
			maxRead: 1 << 10,
			want:    "standard input: is not a YAML or JSON text: line 3 holds bytes that are not UTF-8 (save the file as UTF-8)",
		},
		"UTF-16 without a byte order mark": {
			in:      bytes.NewReader(utf16Text(cluster("c1"), binary.LittleEndian)[2:]),
			maxRead: 1 << 10,
			want:    "standard input: is not a YAML or JSON text: line 2 holds the control character 0x00 (UTF-16 without a byte order mark, or a binary file? save it as UTF-8)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := &counting{r: tc.in}
			err := (&Fleet{}).Decode(t.Context(), in, "standard input")
			if err == nil {
				t.Fatalf("Decode accepted the input, want the error %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Decode error (-want,+got):\n%s", diff)
			}
			if in.n > tc.maxRead {
				t.Errorf("read %d bytes before refusing the input, want at most %d", in.n, tc.maxRead)
			}
		})
	}
}

// TestDecodeStopsWithTheContext: a cancelled read (Ctrl-C in the CLI) ends decoding before the
// next document, schema and CEL checks included.
func TestDecodeStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f := &Fleet{}
	err := f.Decode(ctx, strings.NewReader(cluster("c1")+"\n---\n"+cluster("c2")), "fleet.yaml")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Decode = %v, want context.Canceled", err)
	}
	if got := objectsOf(f); len(got) != 0 {
		t.Errorf("Decode read %v after its context was cancelled", got)
	}
}
