package hpa

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/inventory"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// twoHalfNodes is a cluster with two nodes of 4 cpu and 8Gi; oneBigNode one node of 8 cpu and
// 16Gi, that one in zone a.
func twoHalfNodes() *inventory.View {
	st := utiltesting.InventoryStatus([]*corev1.Node{
		utiltesting.MakeNode("a").Resource(corev1.ResourceCPU, "4").Resource(corev1.ResourceMemory, "8Gi").Obj(),
		utiltesting.MakeNode("b").Resource(corev1.ResourceCPU, "4").Resource(corev1.ResourceMemory, "8Gi").Obj(),
	})
	return inventory.NewView(&st)
}

func oneBigNode() *inventory.View {
	st := utiltesting.InventoryStatus([]*corev1.Node{
		utiltesting.MakeNode("big").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "16Gi").Label("topology.kubernetes.io/zone", "a").Obj(),
	})
	return inventory.NewView(&st)
}

func cpuConsumer(name, workload, container, cpu string) *utiltesting.ConsumerWrapper {
	return utiltesting.MakeConsumer(name).Target("Deployment", workload, container).
		Requirement(utiltesting.MakeResource("cpu", "cpu").Requests(cpu).Obj())
}

func TestCompilePods(t *testing.T) {
	type pod struct {
		Name, What string
		Replicas   int32
		// Half and Big are how many replicas of the pod fit on twoHalfNodes and oneBigNode.
		Half, Big int64
		Amounts   corev1.ResourceList
		// Optional says, per "consumer/requirement", whether oneBigNode meets it for the pod.
		Optional map[string]bool
	}
	tests := map[string]struct {
		consumers []*utiltesting.ConsumerWrapper
		workload  *utiltesting.HPAIntentWrapper
		want      []pod
	}{
		"two containers of one Deployment need one node with the sum": {
			consumers: []*utiltesting.ConsumerWrapper{
				cpuConsumer("a", "web", "app", "3").Replicas(1),
				cpuConsumer("b", "web", "sidecar", "3").Replicas(1),
			},
			want: []pod{{Name: "a+b", What: "consumers fwall/a+b", Replicas: 1, Half: 0, Big: 1,
				Amounts: corev1.ResourceList{corev1.ResourceCPU: q("6")}}},
		},
		"containers of different objects are pods of their own": {
			consumers: []*utiltesting.ConsumerWrapper{
				cpuConsumer("a", "web", "app", "3").Replicas(1),
				cpuConsumer("b", "api", "app", "3").Replicas(1),
			},
			want: []pod{
				{Name: "a", What: "consumer fwall/a", Replicas: 1, Half: 2, Big: 2, Amounts: corev1.ResourceList{corev1.ResourceCPU: q("3")}},
				{Name: "b", What: "consumer fwall/b", Replicas: 1, Half: 2, Big: 2, Amounts: corev1.ResourceList{corev1.ResourceCPU: q("3")}},
			},
		},
		"the features of all containers apply to the one node": {
			consumers: []*utiltesting.ConsumerWrapper{
				cpuConsumer("a", "web", "app", "1").Replicas(2),
				utiltesting.MakeConsumer("b").Target("Deployment", "web", "").Replicas(2).
					Requirement(utiltesting.MakeFeature("fast", "topology.kubernetes.io/zone").Values("a").Obj()),
			},
			want: []pod{{Name: "a+b", What: "consumers fwall/a+b", Replicas: 2, Half: 0, Big: 8,
				Amounts: corev1.ResourceList{corev1.ResourceCPU: q("2")}}},
		},
		"an optional requirement of one container is met when the whole pod fits with it": {
			consumers: []*utiltesting.ConsumerWrapper{
				cpuConsumer("a", "web", "app", "3").Replicas(2).
					Requirement(utiltesting.MakeResource("more", "cpu").Requests("4").Optional(2).Obj()).
					Requirement(utiltesting.MakeResource("some-more", "cpu").Requests("3500m").Optional(2).Obj()),
				cpuConsumer("b", "web", "sidecar", "1").Replicas(2).
					Requirement(utiltesting.MakeFeature("fast", "topology.kubernetes.io/zone").Values("a").Optional(1).Obj()),
			},
			// One replica is 4 cpu: two fit on the big node, one on each half node. With
			// more, a replica is 5 cpu and only one fits on the big node; with some-more,
			// 4.5 cpu, and two do not fit either.
			want: []pod{{Name: "a+b", What: "consumers fwall/a+b", Replicas: 2, Half: 2, Big: 2,
				Amounts:  corev1.ResourceList{corev1.ResourceCPU: q("8")},
				Optional: map[string]bool{"a/more": false, "a/some-more": false, "b/fast": true}}},
		},
		"replicas from the manifest agree with the spec": {
			consumers: []*utiltesting.ConsumerWrapper{
				cpuConsumer("a", "web", "app", "1"),
				cpuConsumer("b", "web", "sidecar", "1").Replicas(3),
			},
			workload: utiltesting.MakeHPAIntent("fwall", "ns").
				Manifest(deployment("web", ptr.To[int32](3), container("app", "", "", "", ""), container("sidecar", "", "", "", ""))),
			want: []pod{{Name: "a+b", What: "consumers fwall/a+b", Replicas: 3, Half: 4, Big: 4,
				Amounts: corev1.ResourceList{corev1.ResourceCPU: q("6")}}},
		},
	}
	half, big := twoHalfNodes(), oneBigNode()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := utiltesting.MakeHPAIntent("fwall", "ns")
			if tc.workload != nil {
				w = tc.workload.Clone()
			}
			w.Placement("p")
			for _, c := range tc.consumers {
				w.Consumer(c.Obj())
			}
			compiled, err := Compile(w.Obj())
			if err != nil {
				t.Fatal(err)
			}
			var got []pod
			for k := range compiled.Pods {
				p := &compiled.Pods[k]
				g := pod{Name: p.Name, What: p.What, Replicas: p.Replicas, Amounts: p.Amounts()}
				g.Half, _ = half.MaxReplicas(p.Request)
				g.Big, _ = big.MaxReplicas(p.Request)
				for _, c := range p.Consumers {
					for i := range c.Optional {
						if g.Optional == nil {
							g.Optional = map[string]bool{}
						}
						g.Optional[c.Name+"/"+c.Optional[i].Name] = c.MeetsOptional(big, &c.Optional[i])
					}
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestResolvePodProblems(t *testing.T) {
	tests := map[string]struct {
		intent *utiltesting.HPAIntentWrapper
		want   []*Problem
	}{
		"replicas of one object's consumers disagree": {
			intent: utiltesting.MakeHPAIntent("fwall", "ns").Placement("p").
				Consumer(cpuConsumer("a", "web", "app", "1").Replicas(2).Obj()).
				Consumer(cpuConsumer("b", "web", "sidecar", "1").Replicas(3).Obj()),
			want: []*Problem{{Reason: ReasonInvalidRequirements, Message: `consumers "a" (2 replicas) and "b" (3 replicas) target Deployment web, ` +
				"so they are containers of one pod and run as many replicas; give them the same replicas, or leave replicas unset on both to take the workload's"}},
		},
		"replicas of the manifest disagree with the spec": {
			intent: utiltesting.MakeHPAIntent("fwall", "ns").Placement("p").
				Manifest(deployment("web", ptr.To[int32](4), container("app", "", "", "", ""), container("sidecar", "", "", "", ""))).
				Consumer(cpuConsumer("a", "web", "app", "1").Obj()).
				Consumer(cpuConsumer("b", "web", "sidecar", "1").Replicas(1).Obj()),
			want: []*Problem{{Reason: ReasonInvalidRequirements, Message: `consumers "a" (4 replicas) and "b" (1 replicas) target Deployment web, ` +
				"so they are containers of one pod and run as many replicas; give them the same replicas, or leave replicas unset on both to take the workload's"}},
		},
		"a machine type beside another container's amounts": {
			intent: utiltesting.MakeHPAIntent("fwall", "ns").Placement("p").
				Consumer(utiltesting.MakeConsumer("trainer").Target("Deployment", "web", "app").
					Requirement(utiltesting.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge").Obj()).Obj()).
				Consumer(cpuConsumer("b", "web", "sidecar", "1").Obj()),
			want: []*Problem{{Reason: ReasonInvalidRequirements, Message: `consumers "trainer" and "b" target Deployment web, one pod, but "trainer" takes a machine type, ` +
				`which leaves no known room on the node for the amounts or machine type of "b"; keep only features in the other consumers of the pod, or move the amounts into a workload of their own`}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Resolve(tc.intent.Obj())
			if diff := cmp.Diff(tc.want, Problems(err)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestCompileMachinePodWithFeatures(t *testing.T) {
	in := utiltesting.MakeHPAIntent("fwall", "ns").Placement("p").
		Consumer(utiltesting.MakeConsumer("trainer").Target("Deployment", "train", "main").Replicas(2).
			Requirement(utiltesting.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge").Obj()).Obj()).
		Consumer(utiltesting.MakeConsumer("zone").Target("Deployment", "train", "").Replicas(2).
			Requirement(utiltesting.MakeFeature("zone", "topology.kubernetes.io/zone").Values("b").Obj()).Obj()).Obj()
	compiled, err := Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(compiled.Pods) != 1 {
		t.Fatalf("got %d pods, want 1", len(compiled.Pods))
	}
	p := &compiled.Pods[0]
	m, ok := p.Request.MachineType()
	if diff := cmp.Diff(inventory.MachineType{Group: "general-machine", Name: "compute-xlarge"}, m); !ok || diff != "" {
		t.Errorf("pod's machine type (ok %v) (-want,+got):\n%s", ok, diff)
	}
	// machineView's node is in zone a: the zone feature of the other container keeps the
	// pod off its machines.
	if free, _ := machineView().FreeMachines(p.Request); free != 0 {
		t.Errorf("free machines for the pod = %d, want 0", free)
	}
}
