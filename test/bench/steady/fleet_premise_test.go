package steady

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// needOf returns one replica's request of the intent's consumer as the hub checks it on a
// node: its amounts, its features, and the tolerations of the extended resources it asks for.
func needOf(t *testing.T, in *v1alpha1.HPAIntent) *inventory.Request {
	t.Helper()
	amounts := corev1.ResourceList{}
	var features []corev1.NodeSelectorRequirement
	for _, r := range in.Spec.Consumers[0].Requirements {
		switch {
		case r.Resource != nil && r.Resource.Requests != nil:
			amounts[corev1.ResourceName(r.Resource.Name)] = *r.Resource.Requests
		case r.Resource != nil:
			amounts[corev1.ResourceName(r.Resource.Name)] = *r.Resource.Limits
		case r.Feature != nil:
			features = append(features, corev1.NodeSelectorRequirement{Key: r.Feature.Key, Operator: corev1.NodeSelectorOpIn, Values: r.Feature.Values})
		}
	}
	tolerations := inventory.ExtendedResourceTolerations(slices.Sorted(maps.Keys(amounts)))
	req, err := inventory.NewRequest(amounts, features, tolerations)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func fits(st *v1alpha1.ClusterInventoryStatus, r *inventory.Request) bool {
	ok, _ := inventory.NewView(st).FitsOnOneNode(r)
	return ok
}

// TestRoomsFitOnePlacement checks, with the fit code the hub runs on reports, what the
// benchmark's counts rely on: no cluster has room for a waiting placement, with or without
// its jitter pod; the jitter pod never decides whether a satisfiable need fits; and a room
// fits its waiting placement and no other placement at all.
func TestRoomsFitOnePlacement(t *testing.T) {
	probes := []int{0, 1, maxWaiting / 2, maxWaiting - 1}
	waiting := map[int]*inventory.Request{}
	for _, w := range append(probes, 2, maxWaiting/2-1, maxWaiting/2+1, maxWaiting-2) {
		i := w*waitingEvery + waitingEvery - 1
		waiting[w] = needOf(t, intentOf(i, placementAt(i)))
	}
	// Placements 0-3 ask for every satisfiable need: 1-4 cores, and placement 1 an A100.
	var satisfiable []*inventory.Request
	for i := range 4 {
		satisfiable = append(satisfiable, needOf(t, intentOf(i, placementAt(i))))
	}
	for i := range 60 {
		c := newClusterModel(i)
		var fitsThere []bool
		for _, jittered := range []bool{false, true} {
			c.jittered = jittered
			st := c.status("test")
			for w, r := range waiting {
				if fits(&st, r) {
					t.Errorf("%s (jitter %v) has room for waiting placement %d", c.name, jittered, w)
				}
			}
			for _, r := range satisfiable {
				fitsThere = append(fitsThere, fits(&st, r))
			}
		}
		if n := len(satisfiable); !slices.Equal(fitsThere[:n], fitsThere[n:]) {
			t.Errorf("%s: the jitter pod changes which satisfiable needs fit: %v without, %v with", c.name, fitsThere[:n], fitsThere[n:])
		}
		if !fitsThere[0] || !fitsThere[3] || fitsThere[1] != (i%3 != 2) {
			t.Errorf("%s: satisfiable needs fit %v", c.name, fitsThere[:len(satisfiable)])
		}
	}
	for _, w := range probes {
		room := &clusterModel{name: "room", nodes: []*corev1.Node{roomFor("room", w)}}
		st := room.status("test")
		for other, r := range waiting {
			if got, want := fits(&st, r), other == w; got != want {
				t.Errorf("room for %d: fits waiting placement %d = %v, want %v", w, other, got, want)
			}
		}
		for i, r := range satisfiable {
			if fits(&st, r) {
				t.Errorf("room for %d fits placement %d", w, i)
			}
		}
	}
}
