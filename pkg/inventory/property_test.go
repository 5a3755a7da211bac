package inventory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// randomFleet draws a cluster of nodes and pods from a small vocabulary, so
// that shapes repeat, features and taints matter, and free vectors vary.
func randomFleet(rng *rand.Rand, nodeCount int) ([]*corev1.Node, []*corev1.Pod) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range nodeCount {
		w := makeNode(fmt.Sprintf("n%d", i))
		pairs := []string{"cpu", fmt.Sprint([]int{4, 8, 16}[rng.IntN(3)]), "memory", []string{"16Gi", "32Gi"}[rng.IntN(2)]}
		if rng.IntN(3) > 0 {
			pairs = append(pairs, "pods", fmt.Sprint([]int{4, 110}[rng.IntN(2)]))
		}
		if rng.IntN(3) == 0 {
			pairs = append(pairs, "nvidia.com/gpu", "4")
			w.Label("nvidia.com/gpu.product", []string{"A100", "H100"}[rng.IntN(2)])
		}
		w.Resources(pairs...)
		if rng.IntN(2) == 0 {
			w.Label("fleetfit.io/cores", []string{"8", "16", "many"}[rng.IntN(3)])
		}
		switch rng.IntN(10) {
		case 0:
			w.NotReady()
		case 1:
			w.Cordoned()
		case 2:
			w.Taint("dedicated", "ml", corev1.TaintEffectNoSchedule)
		case 3:
			w.Taint("soft", "", corev1.TaintEffectPreferNoSchedule)
		}
		nodes = append(nodes, w.Obj())
		for j := range rng.IntN(7) {
			p := makePod(fmt.Sprintf("p%d-%d", i, j), w.Node.Name).Container(
				"cpu", fmt.Sprintf("%dm", 50*rng.IntN(40)), "memory", fmt.Sprintf("%dMi", rng.IntN(6000)))
			if rng.IntN(4) == 0 {
				p.Container("nvidia.com/gpu", fmt.Sprint(rng.IntN(2)))
			}
			if rng.IntN(5) == 0 {
				p.InitContainer("cpu", fmt.Sprintf("%dm", 100*rng.IntN(40)))
			}
			if rng.IntN(8) == 0 {
				p.Phase(corev1.PodSucceeded)
			}
			pods = append(pods, p.Obj())
		}
	}
	return nodes, pods
}

// bruteNode is one node seen directly, without the inventory.
type bruteNode struct {
	node  *corev1.Node
	free  map[corev1.ResourceName]int64
	slots bool
}

// bruteForce computes each node's free resources straight from the objects,
// with Kubernetes' helpers, independently of the package's code.
func bruteForce(nodes []*corev1.Node, pods []*corev1.Pod) []bruteNode {
	out := make([]bruteNode, len(nodes))
	for i, n := range nodes {
		free := map[corev1.ResourceName]int64{}
		for name, q := range n.Status.Allocatable {
			free[name] = q.MilliValue()
		}
		for _, p := range pods {
			if p.Spec.NodeName != n.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
				free[name] -= q.MilliValue()
			}
			free[corev1.ResourcePods] -= 1000
		}
		_, slots := n.Status.Allocatable[corev1.ResourcePods]
		out[i] = bruteNode{node: n, free: free, slots: slots}
	}
	return out
}

// replicas is how many replicas fit on the brute-force nodes, with free
// amounts passed through round first.
func bruteReplicas(ns []bruteNode, resources corev1.ResourceList, sel *nodeaffinity.NodeSelector,
	tolerations []corev1.Toleration, round func(corev1.ResourceName, int64) int64) (total, bestCPU int64, fits, any bool) {
	for _, n := range ns {
		ready := slices.ContainsFunc(n.node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		if !ready || n.node.Spec.Unschedulable || (sel != nil && !sel.Match(n.node)) {
			continue
		}
		if _, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.node.Spec.Taints, tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); bad {
			continue
		}
		any = true
		if f := round("cpu", max(n.free["cpu"], 0)); f > bestCPU {
			bestCPU = f
		}
		k := int64(math.MaxInt64)
		for name, q := range resources {
			if q.MilliValue() > 0 {
				k = min(k, round(name, max(n.free[name], 0))/q.MilliValue())
			}
		}
		if n.slots {
			k = min(k, max(n.free[corev1.ResourcePods], 0)/1000)
		}
		total += k
		if k > 0 {
			fits = true
		}
	}
	return total, bestCPU, fits, any
}

func TestSummaryNeverOverClaims(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	featurePool := []corev1.NodeSelectorRequirement{
		req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "A100"),
		req("nvidia.com/gpu.product", corev1.NodeSelectorOpNotIn, "A100"),
		req("nvidia.com/gpu.product", corev1.NodeSelectorOpExists),
		req("fleetfit.io/cores", corev1.NodeSelectorOpDoesNotExist),
		req("fleetfit.io/cores", corev1.NodeSelectorOpGt, "8"),
		req("fleetfit.io/cores", corev1.NodeSelectorOpLt, "12"),
	}
	checked, exactChecked := 0, 0
	for iter := range 300 {
		cfg := DefaultConfig()
		cfg.MaxFreeVectorsPerShape = []int{1, 2, 3, 16}[rng.IntN(4)]
		nodes, pods := randomFleet(rng, 1+rng.IntN(40))
		st := summarize(t, cfg, nodes, pods)
		v := NewView(&st)
		brute := bruteForce(nodes, pods)
		raw := func(_ corev1.ResourceName, m int64) int64 { return m }
		rounded := func(name corev1.ResourceName, m int64) int64 { return m - m%cfg.step(name) }
		for q := range 10 {
			onGrid := q%2 == 0
			cpu, mem := 50*rng.IntN(120), rng.IntN(16000)
			if onGrid {
				cpu, mem = 100*(cpu/100), 64*(mem/64)
			}
			resources := rl("cpu", fmt.Sprintf("%dm", cpu), "memory", fmt.Sprintf("%dMi", mem), "nvidia.com/gpu", fmt.Sprint(rng.IntN(3)))
			var features []corev1.NodeSelectorRequirement
			for _, f := range featurePool {
				if rng.IntN(5) == 0 {
					features = append(features, f)
				}
			}
			var tolerations []corev1.Toleration
			if rng.IntN(2) == 0 {
				tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			}
			r := mustRequest(t, resources, features, tolerations...)
			// A term without expressions matches nothing in Kubernetes; no
			// features at all means any node.
			var sel *nodeaffinity.NodeSelector
			if len(features) > 0 {
				var err error
				sel, err = nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: features}}})
				if err != nil {
					t.Fatal(err)
				}
			}
			wantRaw, bestCPU, fitsRaw, anyNode := bruteReplicas(brute, resources, sel, tolerations, raw)
			wantRounded, _, _, _ := bruteReplicas(brute, resources, sel, tolerations, rounded)
			got, exact := v.MaxReplicas(r)
			fits, reason := v.FitsOnOneNode(r)
			free, found := v.FreeOnBestNode("cpu", r.Selector())
			where := fmt.Sprintf("iteration %d query %d (%v, %v, cap %d)", iter, q, resources, features, cfg.MaxFreeVectorsPerShape)
			checked++

			if got > wantRaw {
				t.Errorf("%s: MaxReplicas %d over-claims; the nodes take %d", where, got, wantRaw)
			}
			if fits && !fitsRaw {
				t.Errorf("%s: FitsOnOneNode says yes, no node fits", where)
			}
			if fits != (got > 0) {
				t.Errorf("%s: FitsOnOneNode %v (%s) disagrees with MaxReplicas %d", where, fits, reason, got)
			}
			if found != anyNode || free.MilliValue() > bestCPU {
				t.Errorf("%s: FreeOnBestNode = %s, %v; the nodes have at most %dm, usable %v", where, free.String(), found, bestCPU, anyNode)
			}
			if exact {
				exactChecked++
				if diff := cmp.Diff(wantRounded, got); diff != "" {
					t.Errorf("%s: untruncated MaxReplicas differs from the rounded nodes (-want,+got):\n%s", where, diff)
				}
				if onGrid {
					if diff := cmp.Diff(wantRaw, got); diff != "" {
						t.Errorf("%s: untruncated MaxReplicas of an on-grid request differs from the nodes (-want,+got):\n%s", where, diff)
					}
					if fits != fitsRaw {
						t.Errorf("%s: untruncated FitsOnOneNode %v, nodes say %v", where, fits, fitsRaw)
					}
				}
			}
		}
	}
	if exactChecked < checked/4 || exactChecked == checked {
		t.Errorf("the random cases are unbalanced: %d of %d queries exact", exactChecked, checked)
	}
}
