package inventory

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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

// Device is a device resource whose nodes are labelled with their model.
type Device struct {
	Resource   corev1.ResourceName
	ModelLabel string
}

// GPUs are the GPU device resources, each with the label its vendor's feature discovery puts
// the model in: what `fleetfit get clusters` shows per model and the agent's gpu-products
// ClusterClaim names.
var GPUs = []Device{
	{"nvidia.com/gpu", "nvidia.com/gpu.product"},
	{"amd.com/gpu", "amd.com/gpu.product"},
	{"gpu.intel.com/i915", "gpu.intel.com/device-id"},
}

// LargestAllocatable is the most of name that one node of the report has allocatable, among
// its schedulable nodes only when schedulableOnly is set; zero when none has any.
func LargestAllocatable(st *v1alpha1.ClusterInventoryStatus, name corev1.ResourceName, schedulableOnly bool) resource.Quantity {
	var largest resource.Quantity
	for i := range st.NodeShapes {
		s := &st.NodeShapes[i]
		if q, ok := s.Allocatable[name]; ok && (s.Schedulable || !schedulableOnly) && q.Cmp(largest) > 0 {
			largest = q.DeepCopy()
		}
	}
	return largest
}
