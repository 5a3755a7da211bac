package inventory

import (
	"cmp"
	"slices"
	"strings"

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

// deviceModelAttributes are the attribute names, in any domain, whose value
// names a device's model, tried in this order.
var deviceModelAttributes = []string{"model", "productName", "product", "type"}

// DeviceModel names a DRA device kind for people: the string value of its
// first model attribute (see deviceModelAttributes), else its driver.
func DeviceModel(k *v1alpha1.DeviceKind) string {
	for _, want := range deviceModelAttributes {
		var found []string
		for name, a := range k.Attributes {
			id := string(name)
			if i := strings.LastIndexByte(id, '/'); i >= 0 {
				id = id[i+1:]
			}
			if id == want && a.StringValue != nil {
				found = append(found, *a.StringValue)
			}
		}
		if len(found) > 0 {
			slices.Sort(found)
			return found[0]
		}
	}
	return k.Driver
}

// DevicesByModel sums a report's DRA devices by model (see DeviceModel), over
// all kinds of that model, sorted by model: free on schedulable nodes, and
// allocatable.
func DevicesByModel(st *v1alpha1.ClusterInventoryStatus) []ModelAmount {
	if st.Devices == nil {
		return nil
	}
	byModel := map[string]*ModelAmount{}
	for i := range st.Devices.Kinds {
		k := &st.Devices.Kinds[i]
		model := DeviceModel(k)
		for _, m := range AmountsByModel(st, corev1.ResourceName(k.Name), "") {
			sum := byModel[model]
			if sum == nil {
				sum = &ModelAmount{Model: model}
				byModel[model] = sum
			}
			sum.Nodes = int32Count(addCounts(int64(sum.Nodes), int64(m.Nodes)))
			sum.Allocatable = addCounts(sum.Allocatable, m.Allocatable)
			sum.Free = addCounts(sum.Free, m.Free)
		}
	}
	out := make([]ModelAmount, 0, len(byModel))
	for _, m := range byModel {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b ModelAmount) int { return cmp.Compare(a.Model, b.Model) })
	return out
}
