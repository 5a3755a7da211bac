// Package resource holds the prioritizers that rank clusters by an amount of one resource:
//
//   - ResourceAllocatableCPU, ResourceAllocatableMemory and ResourceAllocatable:<resource> prefer
//     the clusters with the most of the resource (OCM has the first two);
//   - ResourceRatioCPU, ResourceRatioMemory and ResourceRatio:<resource> prefer the clusters
//     with the largest share of the resource still free.
//
// Scores are OCM's min-max normalisation over the feasible clusters that have the resource:
// int64(((v-min)/(max-min) - 0.5) * 2 * 100), so the cluster with the least scores -100 and
// the one with the most 100; all of them score 100 when min equals max. A cluster without the
// resource gets no score (0) and takes no part in min and max.
//
// Where fleetfit differs from OCM is the amount it reads. OCM reads the ManagedCluster's
// status.allocatable, which does not change when pods are scheduled, so a full cluster ranks
// as high as an empty one. When a cluster has a fresh fleetfit ClusterInventory (observed no
// longer than framework.InventoryStaleAfter before the cycle's time), the amount is the
// inventory's real free amount (status.resources[].free) and the ratio is free/allocatable from the same entry; a fresh
// inventory that does not list the resource means the cluster lacks it. Otherwise — no agent,
// or a report too old to trust — the amount falls back to the ManagedCluster's
// status.allocatable (exactly OCM's value; OCM also skips a cluster without a capacity for the
// resource) and the ratio to allocatable/capacity, the only share the ManagedCluster reports.
package resource

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// BuiltIn names of the prioritizers. The names without a resource suffix need a parameter:
// "ResourceAllocatable:nvidia.com/gpu".
const (
	AllocatableCPU    = "ResourceAllocatableCPU"
	AllocatableMemory = "ResourceAllocatableMemory"
	Allocatable       = "ResourceAllocatable"
	RatioCPU          = "ResourceRatioCPU"
	RatioMemory       = "ResourceRatioMemory"
	Ratio             = "ResourceRatio"
)

// algorithm says which value of a cluster a prioritizer normalises.
type algorithm int

const (
	// allocatable is the free amount (fresh inventory) or the allocatable amount.
	allocatable algorithm = iota
	// ratio is free/allocatable (fresh inventory) or allocatable/capacity.
	ratio
)

// Prioritizer ranks clusters by one resource.
type Prioritizer struct {
	name      string
	resource  corev1.ResourceName
	algorithm algorithm
}

var (
	_ framework.ScorePlugin       = &Prioritizer{}
	_ framework.EnqueueExtensions = &Prioritizer{}
	_ framework.MovePolicy        = &Prioritizer{}
)

// NewAllocatableCPU is the factory of ResourceAllocatableCPU.
func NewAllocatableCPU(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	return newFixed(AllocatableCPU, corev1.ResourceCPU, allocatable, args)
}

// NewAllocatableMemory is the factory of ResourceAllocatableMemory.
func NewAllocatableMemory(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	return newFixed(AllocatableMemory, corev1.ResourceMemory, allocatable, args)
}

// NewAllocatable is the factory of ResourceAllocatable:<resource>.
func NewAllocatable(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	return newParameterised(Allocatable, allocatable, args)
}

// NewRatioCPU is the factory of ResourceRatioCPU.
func NewRatioCPU(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	return newFixed(RatioCPU, corev1.ResourceCPU, ratio, args)
}

// NewRatioMemory is the factory of ResourceRatioMemory.
func NewRatioMemory(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	return newFixed(RatioMemory, corev1.ResourceMemory, ratio, args)
}

// NewRatio is the factory of ResourceRatio:<resource>.
func NewRatio(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	return newParameterised(Ratio, ratio, args)
}

func newFixed(name string, res corev1.ResourceName, algo algorithm, args framework.Args) (framework.Plugin, error) {
	if args.Param != "" {
		return nil, fmt.Errorf("%s takes no resource name, got %q", name, args.Param)
	}
	return &Prioritizer{name: name, resource: res, algorithm: algo}, nil
}

func newParameterised(name string, algo algorithm, args framework.Args) (framework.Plugin, error) {
	if args.Param == "" {
		return nil, fmt.Errorf("%s needs a resource name, as in %s:nvidia.com/gpu", name, name)
	}
	if errs := validation.IsQualifiedName(args.Param); len(errs) > 0 {
		return nil, fmt.Errorf("%s: invalid resource name %q: %s", name, args.Param, strings.Join(errs, "; "))
	}
	return &Prioritizer{name: name + ":" + args.Param, resource: corev1.ResourceName(args.Param), algorithm: algo}, nil
}

// Name returns the builtIn name, with the resource for the parameterised prioritizers.
func (p *Prioritizer) Name() string { return p.name }

// Score normalises the clusters' values between the smallest and the largest value among the
// feasible clusters that have the resource.
func (p *Prioritizer) Score(_ context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request, feasible *framework.Bitset, scores []int64) *framework.Status {
	switch p.algorithm {
	case ratio:
		normalise(p.ratios(snap, req, feasible), scores)
	default:
		normaliseInt(p.amounts(snap, req, feasible), scores)
	}
	return nil
}

// Watches implements framework.EnqueueExtensions: the prioritizer reads every report.
func (p *Prioritizer) Watches(req *framework.Request) bool { return true }

// ClusterChanged implements framework.EnqueueExtensions: the value the prioritizer reads of the
// cluster changed, and the placement decides the cluster (its score there is written in its
// decisions, at most once per scoreRateLimit) or follows its scores (the cluster may now
// outrank a decided one). A placement that neither decides the cluster nor follows keeps its
// decided clusters whatever this cluster's score.
func (p *Prioritizer) ClusterChanged(ev framework.ClusterEvent, t *framework.Target) framework.QueueingHint {
	if !t.Decides && !t.Follows {
		return framework.QueueSkip
	}
	if ev.Old == nil {
		return framework.Queue
	}
	v0, of0, ok0 := p.value(ev.Old, ev.Now)
	v1, of1, ok1 := p.value(ev.New, ev.Now)
	if ok0 != ok1 || v0 != v1 || (p.algorithm == ratio && of0 != of1) {
		return framework.Queue
	}
	return framework.QueueSkip
}

// MoveRole implements framework.MovePolicy: the prioritizer reads what clusters report.
func (p *Prioritizer) MoveRole() framework.MoveRole { return framework.MoveFollows }

type amount struct {
	cluster int
	milli   int64
}

type share struct {
	cluster int
	ratio   float64
}

// amounts returns the value of each feasible cluster that has the resource, in milli-units.
func (p *Prioritizer) amounts(snap *framework.Snapshot, req *framework.Request, feasible *framework.Bitset) []amount {
	out := make([]amount, 0, feasible.Count())
	feasible.ForEach(func(i int) {
		if v, _, ok := p.value(snap.Cluster(i), req.Now); ok {
			out = append(out, amount{i, v})
		}
	})
	return out
}

// ratios returns the free share of each feasible cluster that has the resource.
func (p *Prioritizer) ratios(snap *framework.Snapshot, req *framework.Request, feasible *framework.Bitset) []share {
	out := make([]share, 0, feasible.Count())
	feasible.ForEach(func(i int) {
		if v, of, ok := p.value(snap.Cluster(i), req.Now); ok && of > 0 {
			out = append(out, share{i, float64(v) / float64(of)})
		}
	})
	return out
}

// value returns a cluster's amount of the resource and what it is a share of, in milli-units:
// free of allocatable from a fresh inventory, else allocatable of capacity from the
// ManagedCluster. ok is false when the cluster does not report the resource.
func (p *Prioritizer) value(info *framework.ClusterInfo, now time.Time) (v, of int64, ok bool) {
	if t, fresh := p.inventoryTotals(info, now); fresh {
		if t == nil {
			return 0, 0, false
		}
		return milli(t.Free), milli(t.Allocatable), true
	}
	alloc, okAlloc := info.Cluster.Status.Allocatable[clusterv1.ResourceName(p.resource)]
	capacity, okCap := info.Cluster.Status.Capacity[clusterv1.ResourceName(p.resource)]
	if !okAlloc || !okCap {
		return 0, 0, false
	}
	return milli(alloc), milli(capacity), true
}

// inventoryTotals returns the cluster's inventory entry for the resource and whether the
// inventory is fresh at now. A fresh inventory without the entry returns (nil, true): the
// cluster lacks the resource.
func (p *Prioritizer) inventoryTotals(info *framework.ClusterInfo, now time.Time) (*fleetfitv1alpha1.ResourceTotals, bool) {
	if !info.InventoryFresh(now) {
		return nil, false
	}
	res := info.Inventory.Status.Resources
	for k := range res {
		if res[k].Name == p.resource {
			return &res[k], true
		}
	}
	return nil, true
}

// The bounds of milli, as quantities.
var (
	maxMilli = *apiresource.NewMilliQuantity(math.MaxInt64, apiresource.DecimalSI)
	minMilli = *apiresource.NewMilliQuantity(math.MinInt64, apiresource.DecimalSI)
)

// milli returns q in milli-units, saturating at MaxInt64 and MinInt64 for amounts beyond what
// an int64 of milli-units holds (about 9.2e15 units), so that the order of the clusters is
// kept. Quantity.MilliValue alone wraps or returns 0 there (1e19 gives 0), so the range is
// checked first with CompareQuantities, which is exact for any quantity and, unlike
// Quantity.Cmp, quick for amounts such as 1e709551616.
func milli(q apiresource.Quantity) int64 {
	// Most amounts are whole units, far from the bounds: exact without a decimal.
	if v, ok := q.AsInt64(); ok && v > math.MinInt64/1000 && v < math.MaxInt64/1000 {
		return v * 1000
	}
	return exactMilli(q)
}

// exactMilli is milli for any quantity.
func exactMilli(q apiresource.Quantity) int64 {
	switch {
	case fleetfitv1alpha1.CompareQuantities(q, maxMilli) >= 0:
		return math.MaxInt64
	case fleetfitv1alpha1.CompareQuantities(q, minMilli) <= 0:
		return math.MinInt64
	}
	return q.MilliValue()
}

// normaliseInt writes OCM's min-max score of each amount. The differences are exact in
// milli-units; only the final ratio is a float, computed in OCM's order of operations so that
// equal inputs truncate to equal scores. They are taken as uint64: v−lo and hi−lo can exceed
// MaxInt64 when amounts of opposite signs are large, but never 2^64, and unsigned
// subtraction of the two's-complement values gives them exactly.
func normaliseInt(values []amount, scores []int64) {
	if len(values) == 0 {
		return
	}
	lo, hi := values[0].milli, values[0].milli
	for _, v := range values[1:] {
		lo, hi = min(lo, v.milli), max(hi, v.milli)
	}
	span := uint64(hi) - uint64(lo)
	for _, v := range values {
		if hi == lo {
			scores[v.cluster] = framework.MaxClusterScore
			continue
		}
		scores[v.cluster] = scale(float64(uint64(v.milli)-uint64(lo)) / float64(span))
	}
}

// normalise is normaliseInt for shares.
func normalise(values []share, scores []int64) {
	if len(values) == 0 {
		return
	}
	lo, hi := values[0].ratio, values[0].ratio
	for _, v := range values[1:] {
		lo, hi = min(lo, v.ratio), max(hi, v.ratio)
	}
	for _, v := range values {
		if hi == lo {
			scores[v.cluster] = framework.MaxClusterScore
			continue
		}
		scores[v.cluster] = scale((v.ratio - lo) / (hi - lo))
	}
}

// scale maps a position in [0, 1] to [-100, 100], truncating as OCM does.
func scale(pos float64) int64 {
	return int64((pos - 0.5) * 2.0 * float64(framework.MaxClusterScore))
}
