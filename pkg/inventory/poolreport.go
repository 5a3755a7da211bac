package inventory

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Well-known labels of nodes an autoscaler launches.
const (
	// LabelInstanceType is the node's instance type.
	LabelInstanceType = "node.kubernetes.io/instance-type"
	// LabelKarpenterNodePool names the Karpenter NodePool that launched a node.
	LabelKarpenterNodePool = "karpenter.sh/nodepool"
)

// NodePoolInput is what the agent reads of one autoscaling pool (a Karpenter NodePool).
type NodePoolInput struct {
	Name     string
	Provider string
	Ready    bool
	// Labels are the labels of the pool's node template, and Requirements its requirements
	// (those with operator In and one value are labels every node gets).
	Labels       map[string]string
	Requirements []corev1.NodeSelectorRequirement
	// Taints of the pool's nodes (not its startup taints).
	Taints        []corev1.Taint
	Limits, Usage corev1.ResourceList
}

// InstanceType is one kind of node a cloud can launch, as the agent's ConfigMap lists them.
type InstanceType struct {
	Name        string              `json:"name"`
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Resources is the form of Karpenter's kwok provider: a node's capacity, read as its
	// allocatable when Allocatable is empty.
	Resources corev1.ResourceList `json:"resources,omitempty"`
	Labels    map[string]string   `json:"labels,omitempty"`
}

// allocatable is what one node of the type has for pods.
func (t *InstanceType) allocatable() corev1.ResourceList {
	if len(t.Allocatable) > 0 {
		return t.Allocatable
	}
	return t.Resources
}

// SummarizeNodePools reports the pools (sorted by name, at most MaxReportedNodePools, with how
// many were left out), each with the shapes it can add and how many of each before its limits.
//
// A pool's shapes come from types when the agent has a catalogue (its ConfigMap): the types its
// requirements admit, read with the type's labels and its name as node.kubernetes.io/instance-type
// (a requirement on a label the type does not carry, such as a zone, is taken as met: the
// launch chooses it). Without a catalogue they come from nodes the pool launched (labelled
// karpenter.sh/nodepool), one shape per instance type, with the node's allocatable and labels.
// A pool with neither reports no shape, and adds no room on the hub; its message says so.
// Labels are kept only where reported selects them, as for nodes.
func SummarizeNodePools(pools []NodePoolInput, types []InstanceType, nodes []*corev1.Node, reported func(key string) bool) ([]v1alpha1.ReportedNodePool, int32) {
	sorted := slices.Clone(pools)
	slices.SortFunc(sorted, func(a, b NodePoolInput) int { return strings.Compare(a.Name, b.Name) })
	omitted := 0
	if len(sorted) > v1alpha1.MaxReportedNodePools {
		omitted = len(sorted) - v1alpha1.MaxReportedNodePools
		sorted = sorted[:v1alpha1.MaxReportedNodePools]
	}
	out := make([]v1alpha1.ReportedNodePool, 0, len(sorted))
	for i := range sorted {
		out = append(out, summarizePool(&sorted[i], types, nodes, reported))
	}
	return out, int32Count(omitted)
}

func summarizePool(p *NodePoolInput, types []InstanceType, nodes []*corev1.Node, reported func(string) bool) v1alpha1.ReportedNodePool {
	rp := v1alpha1.ReportedNodePool{
		Name: p.Name, Provider: p.Provider, Ready: p.Ready,
		Taints: normalizeTaints(p.Taints),
		Limits: p.Limits.DeepCopy(), Usage: p.Usage.DeepCopy(),
	}
	poolLabels := map[string]string{}
	maps.Copy(poolLabels, p.Labels)
	for _, r := range p.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			poolLabels[r.Key] = r.Values[0]
		}
	}
	rp.Labels = filterLabels(poolLabels, reported)
	sel, err := requirementsSelector(p.Requirements)
	if err != nil {
		rp.Message = "requirements not understood: " + err.Error()
		return rp
	}
	var shapes []v1alpha1.PoolShape
	switch {
	case len(types) > 0:
		rp.ShapesFrom = v1alpha1.ShapesFromConfigMap
		for i := range types {
			t := &types[i]
			l := maps.Clone(t.Labels)
			if l == nil {
				l = map[string]string{}
			}
			l[LabelInstanceType] = t.Name
			if !sel.matches(l) {
				continue
			}
			shapes = append(shapes, v1alpha1.PoolShape{Name: t.Name, Allocatable: t.allocatable().DeepCopy(), Labels: filterLabels(l, reported)})
		}
	default:
		seen := map[string]bool{}
		for _, n := range nodes {
			if n.Labels[LabelKarpenterNodePool] != p.Name {
				continue
			}
			name := n.Labels[LabelInstanceType]
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			l := map[string]string{}
			for k, v := range n.Labels {
				if _, pool := poolLabels[k]; !pool {
					l[k] = v
				}
			}
			l[LabelInstanceType] = name
			shapes = append(shapes, v1alpha1.PoolShape{Name: name, Allocatable: n.Status.Allocatable.DeepCopy(), Labels: filterLabels(l, reported)})
		}
		if len(shapes) > 0 {
			rp.ShapesFrom = v1alpha1.ShapesFromNodes
		}
	}
	if len(shapes) == 0 {
		if rp.ShapesFrom == v1alpha1.ShapesFromConfigMap {
			rp.Message = "no instance type of the agent's catalogue meets the pool's requirements"
		} else {
			rp.Message = "the instance types the pool launches are unknown: list them in the agent's instance-type ConfigMap, or wait until the pool has launched a node"
		}
		rp.ShapesFrom = ""
		return rp
	}
	slices.SortFunc(shapes, func(a, b v1alpha1.PoolShape) int { return cmp.Compare(a.Name, b.Name) })
	if len(shapes) > v1alpha1.MaxPoolShapes {
		rp.Message = fmt.Sprintf("%d instance types left out beyond the first %d", len(shapes)-v1alpha1.MaxPoolShapes, v1alpha1.MaxPoolShapes)
		shapes = shapes[:v1alpha1.MaxPoolShapes]
	}
	// How many of each shape the limits allow, counted as the hub counts them (PoolRooms),
	// of at most MaxPoolNodes each, so the count fits an int32.
	probe := rp.DeepCopy()
	probe.Ready = true
	probe.Shapes = slices.Clone(shapes)
	for i := range probe.Shapes {
		probe.Shapes[i].MaxNodes = v1alpha1.MaxPoolNodes
	}
	room := map[string]int64{}
	for _, r := range PoolRooms(&v1alpha1.ClusterInventoryStatus{NodePools: []v1alpha1.ReportedNodePool{*probe}}) {
		room[r.Shape] = r.Nodes
	}
	for i := range shapes {
		shapes[i].MaxNodes = int32(room[shapes[i].Name])
	}
	rp.Shapes = shapes
	return rp
}

func filterLabels(l map[string]string, reported func(string) bool) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if reported == nil || reported(k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// poolSelector is a pool's requirements: a label they name that an instance type does not
// carry is taken as met, since the launch chooses it.
type poolSelector struct{ reqs []labels.Requirement }

func requirementsSelector(reqs []corev1.NodeSelectorRequirement) (poolSelector, error) {
	var out poolSelector
	for _, r := range reqs {
		var op selection.Operator
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			op = selection.In
		case corev1.NodeSelectorOpNotIn:
			op = selection.NotIn
		case corev1.NodeSelectorOpExists:
			op = selection.Exists
		case corev1.NodeSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		case corev1.NodeSelectorOpGt:
			op = selection.GreaterThan
		case corev1.NodeSelectorOpLt:
			op = selection.LessThan
		default:
			return out, fmt.Errorf("operator %q", r.Operator)
		}
		lr, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil {
			return out, err
		}
		out.reqs = append(out.reqs, *lr)
	}
	return out, nil
}

func (s poolSelector) matches(l map[string]string) bool {
	set := labels.Set(l)
	for _, r := range s.reqs {
		if !set.Has(r.Key()) {
			continue
		}
		if !r.Matches(set) {
			return false
		}
	}
	return true
}
