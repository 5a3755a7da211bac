package inventory

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// poolCase is a random cluster: existing nodes, each with some cpu and
// GPUs free, and pools of shapes with limits.
type poolCase struct {
	nodes []struct{ cpu, gpu int64 }
	pools []testPool
}

type testPool struct {
	name    string
	tainted bool
	ready   bool
	shapes  []struct {
		name     string
		cpu, gpu int64
	}
	// limits of cpu and GPUs (0: none) and nodes (0: none); usage of each.
	limCPU, limGPU, limNodes int64
	useCPU, useGPU, useNodes int64
}

func (c *poolCase) status() *v1alpha1.ClusterInventoryStatus {
	st := &v1alpha1.ClusterInventoryStatus{}
	for i, n := range c.nodes {
		st.NodeShapes = append(st.NodeShapes, v1alpha1.NodeShape{
			Name: fmt.Sprintf("s%d", i), NodeCount: 1, Schedulable: true,
			Allocatable: rl("cpu", fmt.Sprint(n.cpu), "nvidia.com/gpu", fmt.Sprint(n.gpu), "pods", "110"),
			Free:        []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", fmt.Sprint(n.cpu), "nvidia.com/gpu", fmt.Sprint(n.gpu), "pods", "110")}},
		})
	}
	for _, p := range c.pools {
		rp := v1alpha1.ReportedNodePool{Name: p.name, Ready: p.ready, Limits: corev1.ResourceList{}, Usage: corev1.ResourceList{}}
		if p.tainted {
			rp.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}
		for _, l := range []struct {
			name       string
			limit, use int64
		}{{"cpu", p.limCPU, p.useCPU}, {"nvidia.com/gpu", p.limGPU, p.useGPU}, {"nodes", p.limNodes, p.useNodes}} {
			if l.limit > 0 {
				rp.Limits[corev1.ResourceName(l.name)] = rl("x", fmt.Sprint(l.limit))["x"]
				rp.Usage[corev1.ResourceName(l.name)] = rl("x", fmt.Sprint(l.use))["x"]
			}
		}
		for _, s := range p.shapes {
			rp.Shapes = append(rp.Shapes, v1alpha1.PoolShape{
				Name: s.name, MaxNodes: 5,
				Allocatable: rl("cpu", fmt.Sprint(s.cpu), "nvidia.com/gpu", fmt.Sprint(s.gpu), "pods", "110"),
				Labels:      map[string]string{"node.kubernetes.io/instance-type": s.name},
			})
		}
		st.NodePools = append(st.NodePools, rp)
	}
	return st
}

// bruteForce is the most replicas of (cpu, gpu) the existing nodes take, and
// the most they and any nodes the usable pools may add within their limits
// (at most 5 of each shape) take.
func (c *poolCase) bruteForce(cpu, gpu int64, tolerates bool) (now, after int64) {
	per := func(nc, ng int64) int64 {
		n := nc / cpu
		if gpu > 0 {
			n = min(n, ng/gpu)
		}
		return n
	}
	for _, n := range c.nodes {
		now += per(n.cpu, n.gpu)
	}
	after = now
	for _, p := range c.pools {
		if !p.ready || (p.tainted && !tolerates) {
			continue
		}
		best := int64(0)
		var try func(i int, cpuUsed, gpuUsed, nodes, replicas int64)
		try = func(i int, cpuUsed, gpuUsed, nodes, replicas int64) {
			if (p.limCPU > 0 && p.useCPU+cpuUsed > p.limCPU) || (p.limGPU > 0 && p.useGPU+gpuUsed > p.limGPU) || (p.limNodes > 0 && p.useNodes+nodes > p.limNodes) {
				return
			}
			if i == len(p.shapes) {
				best = max(best, replicas)
				return
			}
			s := p.shapes[i]
			for k := int64(0); k <= 5; k++ {
				try(i+1, cpuUsed+k*s.cpu, gpuUsed+k*s.gpu, nodes+k, replicas+k*per(s.cpu, s.gpu))
			}
		}
		try(0, 0, 0, 0, 0)
		after += best
	}
	return now, after
}

// TestScaleUpAgainstBruteForce checks the three answers, fits now, fits
// after scale-up and never, on random clusters against a brute force over
// every number of nodes each pool may add: never optimistic, and exact when
// each pool launches one shape.
func TestScaleUpAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	inexact := 0
	for trial := range 2000 {
		var c poolCase
		for range rng.IntN(3) {
			c.nodes = append(c.nodes, struct{ cpu, gpu int64 }{int64(1 + rng.IntN(8)), int64(rng.IntN(5))})
		}
		oneShape := true
		for p := range 1 + rng.IntN(2) {
			tp := testPool{name: fmt.Sprintf("pool%d", p), tainted: rng.IntN(3) == 0, ready: rng.IntN(6) > 0}
			for s := range 1 + rng.IntN(3) {
				g := int64([]int{0, 1, 4, 8}[rng.IntN(4)])
				tp.shapes = append(tp.shapes, struct {
					name     string
					cpu, gpu int64
				}{fmt.Sprintf("%s-t%d", tp.name, s), int64(4 * (1 + rng.IntN(4))), g})
			}
			if len(tp.shapes) > 1 {
				oneShape = false
			}
			if rng.IntN(2) == 0 {
				tp.limGPU, tp.useGPU = int64(rng.IntN(20)), int64(rng.IntN(5))
			}
			if rng.IntN(2) == 0 {
				tp.limCPU, tp.useCPU = int64(rng.IntN(60)), int64(rng.IntN(10))
			}
			if rng.IntN(3) == 0 {
				tp.limNodes, tp.useNodes = int64(rng.IntN(4)), int64(rng.IntN(2))
			}
			c.pools = append(c.pools, tp)
		}
		cpu, gpu := int64(1+rng.IntN(4)), int64(rng.IntN(5))
		tolerates := rng.IntN(2) == 0
		var tol []corev1.Toleration
		if tolerates {
			tol = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
		}
		r, err := NewRequest(rl("cpu", fmt.Sprint(cpu), "nvidia.com/gpu", fmt.Sprint(gpu)), nil, tol)
		if err != nil {
			t.Fatal(err)
		}
		replicas := int64(1 + rng.IntN(12))
		now, after := c.bruteForce(cpu, gpu, tolerates)

		v := NewView(c.status())
		a := v.Allocate()
		placed := a.Place(r, replicas)
		if placed != min(replicas, now) {
			t.Fatalf("trial %d: %d placed on the nodes there are, brute force %d (of %d)", trial, placed, min(replicas, now), replicas)
		}
		if len(a.Launches()) > 0 {
			t.Fatalf("trial %d: nodes added without ScaleUp", trial)
		}
		if placed < replicas && a.ScaleUp() {
			placed += a.Place(r, replicas-placed)
		}
		if placed > min(replicas, after) {
			t.Fatalf("trial %d: %d placed after scale-up, but at most %d fit: %+v", trial, placed, min(replicas, after), c)
		}
		if placed < min(replicas, after) {
			if oneShape {
				t.Fatalf("trial %d: %d placed after scale-up, brute force %d, with one shape per pool: %+v", trial, placed, min(replicas, after), c)
			}
			inexact++
		}
		// What was added stays within every pool's limits.
		for _, l := range a.Launches() {
			for _, p := range c.pools {
				if p.name != l.Pool {
					continue
				}
				var cpuAdded, gpuAdded, nodes int64
				for _, l2 := range a.Launches() {
					if l2.Pool != p.name {
						continue
					}
					for _, s := range p.shapes {
						if s.name == l2.Shape {
							cpuAdded += l2.Nodes * s.cpu
							gpuAdded += l2.Nodes * s.gpu
							nodes += l2.Nodes
						}
					}
				}
				if (p.limCPU > 0 && p.useCPU+cpuAdded > p.limCPU) || (p.limGPU > 0 && p.useGPU+gpuAdded > p.limGPU) || (p.limNodes > 0 && p.useNodes+nodes > p.limNodes) {
					t.Fatalf("trial %d: launches %v exceed pool %s's limits: %+v", trial, a.Launches(), p.name, p)
				}
			}
		}
	}
	t.Logf("%d of 2000 trials with several shapes per pool placed fewer replicas after scale-up than the brute force", inexact)
}

func TestLaunchText(t *testing.T) {
	c := poolCase{pools: []testPool{{name: "gpu", ready: true, limGPU: 16, useGPU: 4, shapes: []struct {
		name     string
		cpu, gpu int64
	}{{"g6.12xlarge", 48, 4}}}}}
	v := NewView(c.status())
	r, err := NewRequest(rl("cpu", "8", "nvidia.com/gpu", "4"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := v.Allocate()
	if a.Place(r, 1) != 0 || !a.ScaleUp() || a.Place(r, 1) != 1 {
		t.Fatal("one replica should fit on one new node only")
	}
	got := a.Launches()
	if len(got) != 1 || got[0].String() != "1 node of g6.12xlarge from NodePool gpu (limit: 3 more)" {
		t.Errorf("launches = %v", got)
	}
	// A second Allocation with the first's replica reserved has two more.
	b := v.Allocate()
	b.ScaleUp()
	b.Place(r, 1)
	b.Place(r, 3)
	if b.Place(r, 1) != 0 {
		t.Errorf("the pool's limit of 16 GPUs, 4 in use, allows 3 nodes of 4, not more")
	}
}
