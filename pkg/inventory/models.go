package inventory

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// ModelAmount is how much of a device resource the nodes of one model have.
type ModelAmount struct {
	// Model is the value of the model label, or "" for nodes without it.
	Model string
	Nodes int32
	// Allocatable is the sum over the model's nodes; Free the sum over its schedulable nodes
	// of what the free summaries say, which never over-estimates. Both are in whole units:
	// a node's allocatable rounded up, as Quantity.Value rounds, its free rounded down.
	Allocatable int64
	Free        int64
}

// AmountsByModel sums a device resource (nvidia.com/gpu, say) of a reported inventory by the
// model its nodes are labelled with (nvidia.com/gpu.product), for the nodes that have some.
// The result is sorted by model.
func AmountsByModel(st *v1alpha1.ClusterInventoryStatus, resource corev1.ResourceName, modelLabel string) []ModelAmount {
	byModel := map[string]*ModelAmount{}
	for i := range st.NodeShapes {
		s := &st.NodeShapes[i]
		q, ok := s.Allocatable[resource]
		if !ok || q.IsZero() {
			continue
		}
		model := s.Labels[modelLabel]
		m := byModel[model]
		if m == nil {
			m = &ModelAmount{Model: model}
			byModel[model] = m
		}
		// Reports are read as NewView reads them: negative amounts and
		// counts are zero, and sums saturate rather than wrap.
		m.Nodes = int32Count(addCounts(int64(m.Nodes), int64(s.NodeCount)))
		m.Allocatable = addCounts(m.Allocatable, mulCounts(unitsOf(MilliOf(q)), int64(s.NodeCount)))
		if !s.Schedulable {
			continue
		}
		for _, v := range s.Free {
			if f, ok := v.Resources[resource]; ok {
				m.Free = addCounts(m.Free, mulCounts(MilliOf(f)/1000, int64(v.Count)))
			}
		}
	}
	out := make([]ModelAmount, 0, len(byModel))
	for _, m := range byModel {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b ModelAmount) int { return cmp.Compare(a.Model, b.Model) })
	return out
}
