package inventory

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPodIndexMatchesMap applies random inserts, updates and removals to a
// podIndex and to a map, checking that they agree throughout, including
// across growth and the backward shifts of removal.
func TestPodIndexMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 34))
	type key struct{ ns, name string }
	x := newPodIndex()
	model := map[key]*nodeEntry{}
	nodes := make([]*nodeEntry, 50)
	for i := range nodes {
		nodes[i] = &nodeEntry{name: fmt.Sprint("n", i)}
	}
	keys := make([]key, 3000)
	for i := range keys {
		keys[i] = key{fmt.Sprint("ns", rng.IntN(4)), fmt.Sprint("pod-", i)}
	}
	check := func(step int) {
		if x.Len() != len(model) {
			t.Fatalf("step %d: index holds %d pods, want %d", step, x.Len(), len(model))
		}
		for _, k := range keys {
			r := x.find(k.ns, k.name)
			want, ok := model[k]
			switch {
			case ok != (r != nil):
				t.Fatalf("step %d: %v found %v, want %v", step, k, r != nil, ok)
			case ok && (r.node != want || r.namespace != k.ns || r.name != k.name):
				t.Fatalf("step %d: %v has node %v, want %v", step, k, r.node.name, want.name)
			}
		}
	}
	for step := range 40000 {
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(3) == 0 {
			e, ok := x.remove(k.ns, k.name)
			want, wantOK := model[k]
			if ok != wantOK || (ok && e.node != want) {
				t.Fatalf("step %d: remove %v = %v, %v; want %v, %v", step, k, e.node, ok, want, wantOK)
			}
			delete(model, k)
		} else {
			r, found := x.upsert(k.ns, k.name)
			if _, ok := model[k]; ok != found {
				t.Fatalf("step %d: upsert %v found %v, want %v", step, k, found, ok)
			}
			n := nodes[rng.IntN(len(nodes))]
			r.node = n
			model[k] = n
		}
		if step%997 == 0 {
			check(step)
		}
	}
	check(-1)
	for k := range model {
		if _, ok := x.remove(k.ns, k.name); !ok {
			t.Fatalf("could not remove %v", k)
		}
	}
	if x.Len() != 0 {
		t.Fatalf("index holds %d pods after removing all", x.Len())
	}
	for _, v := range x.slots {
		if v != 0 {
			t.Fatal("a slot is still taken after removing all pods")
		}
	}
}
