package inventory

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestIncrementalMatchesRebuild applies random node and pod events to one
// Cluster, summarising now and then, and checks every summary against a
// Cluster built from scratch from the objects as they are at that moment.
func TestIncrementalMatchesRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	cfg := DefaultConfig()
	cfg.MaxFreeVectorsPerShape = 3
	for round := range 20 {
		nodes, pods := randomFleet(rng, 15)
		liveNodes := map[string]*corev1.Node{}
		livePods := map[string]*corev1.Pod{}
		c, err := NewCluster(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 400 {
			switch k := rng.IntN(10); {
			case k < 2: // a node appears or changes
				n := nodes[rng.IntN(len(nodes))].DeepCopy()
				if rng.IntN(3) == 0 {
					n.Spec.Unschedulable = !n.Spec.Unschedulable
				}
				liveNodes[n.Name] = n
				c.UpsertNode(n)
			case k < 3: // a node goes away, its pods stay
				n := nodes[rng.IntN(len(nodes))]
				delete(liveNodes, n.Name)
				c.DeleteNode(n.Name)
			case k < 7: // a pod appears, changes or moves
				p := pods[rng.IntN(len(pods))].DeepCopy()
				switch rng.IntN(4) {
				case 0:
					p.Spec.NodeName = nodes[rng.IntN(len(nodes))].Name
				case 1:
					p.Status.Phase = corev1.PodFailed
				case 2:
					p.Spec.NodeName = ""
				}
				livePods[p.Name] = p
				c.UpsertPod(p)
			default: // a pod goes away
				p := pods[rng.IntN(len(pods))]
				delete(livePods, p.Name)
				c.DeletePod(p.Namespace, p.Name)
			}
			if rng.IntN(25) != 0 && step != 399 {
				continue
			}
			got := c.Summarize()
			want := summarize(t, cfg, sortedValues(liveNodes), sortedValues(livePods))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d step %d: incremental summary differs from a rebuild (-rebuild,+incremental):\n%s", round, step, diff)
			}
		}
	}
}

func sortedValues[T any](m map[string]*T) []*T {
	out := make([]*T, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

func TestSummarizeDoesNotShareMemory(t *testing.T) {
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.UpsertNode(makeNode("n").Resources("cpu", "4").Label("fleetfit.io/pool", "a").
		Taint("k", "v", corev1.TaintEffectNoSchedule).Obj())
	first := c.Summarize()
	want := *first.DeepCopy()
	first.NodeShapes[0].Labels["fleetfit.io/pool"] = "changed"
	first.NodeShapes[0].Taints[0].Key = "changed"
	first.NodeShapes[0].Free[0].Count = 99
	if diff := cmp.Diff(want, c.Summarize()); diff != "" {
		t.Errorf("changing a returned summary changed the next one (-want,+got):\n%s", diff)
	}
}

func TestNewClusterRejectsBadConfig(t *testing.T) {
	cases := map[string]func(*Config){
		"no vectors":   func(c *Config) { c.MaxFreeVectorsPerShape = 0 },
		"empty prefix": func(c *Config) { c.FeatureLabelPrefixes = append(c.FeatureLabelPrefixes, "") },
		"zero step":    func(c *Config) { c.RoundingSteps["cpu"] = resource.MustParse("0") },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			mutate(&cfg)
			if _, err := NewCluster(cfg); err == nil {
				t.Error("NewCluster accepted an invalid config")
			}
		})
	}

}

// TestConcurrentUse runs event handlers and summaries at once; it finds
// nothing without -race.
func TestConcurrentUse(t *testing.T) {
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	nodes, pods := randomFleet(rand.New(rand.NewPCG(9, 9)), 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range pods {
			c.UpsertPod(p)
		}
	}()
	for _, n := range nodes {
		c.UpsertNode(n)
		st := c.Summarize()
		NewView(&st)
	}
	<-done
	if diff := cmp.Diff(summarize(t, DefaultConfig(), nodes, pods), c.Summarize()); diff != "" {
		t.Errorf("summary after concurrent updates (-want,+got):\n%s", diff)
	}
}
