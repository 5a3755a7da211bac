package hardwarefit

import (
	"context"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/split"
)

var _ framework.SplitPlugin = &HardwareFit{}

// Split implements framework.SplitPlugin: each split intent's replicas are divided among the
// selected clusters by what each can hold now, counted node by node with the same packing as
// the filter, after the in-flight reservations of other placements (so two intents never
// count the same room). The shares the clusters run (the intent's status, when it last
// shaped this placement) hold still; see package split.
func (p *HardwareFit) Split(_ context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request, selected []int) []framework.Division {
	var out []framework.Division
	key := req.Key()
	for _, in := range req.Intents {
		compiled, err := snap.Intent(in)
		if err != nil {
			continue
		}
		s := compiled.SplitOf()
		if s == nil {
			continue
		}
		pod := &compiled.Pods[0]
		// The shares it runs, on the clusters the placement still decides.
		previous := map[string]int32{}
		if in.Status.ScheduledPlacement == req.Placement.Name && in.Status.Split != nil {
			for _, sh := range in.Status.Split.Shares {
				if i, ok := snap.Index(sh.ClusterName); ok && req.Decided.Has(i) && sh.Replicas > 0 {
					previous[sh.ClusterName] = sh.Replicas
				}
			}
		}
		// The clusters that run a share come first, then the others in selection order.
		order := make([]int, 0, len(selected))
		for _, i := range selected {
			if previous[snap.Cluster(i).Name()] > 0 {
				order = append(order, i)
			}
		}
		for _, i := range selected {
			if previous[snap.Cluster(i).Name()] == 0 {
				order = append(order, i)
			}
		}
		d := framework.Division{Intent: in.Name, Total: s.Total, Clusters: order,
			Capacity: make([]int32, len(order))}
		input := split.Input{Policy: s.Policy, Total: s.Total, Min: s.Min, AllOrNothing: s.AllOrNothing,
			Clusters: make([]split.Cluster, len(order))}
		// By capacity, clusters past those that hold the total are not needed: their room is
		// not counted. Even and weights look at no more clusters than total/min can share.
		var room int32
		counted := 0
		for k, i := range order {
			info := snap.Cluster(i)
			name := info.Name()
			prev := previous[name]
			c := split.Cluster{Name: name, Previous: prev, Weight: s.WeightOf(info.Cluster.Labels)}
			enough := room >= s.Total
			if s.Policy != fleetfitv1alpha1.SplitByCapacity {
				enough = int32(counted) >= s.Total/max(s.Min, 1)
			}
			if !enough || prev > 0 {
				switch {
				case prev > 0 && !info.ReservedBy(key, req.Now):
					// Its share runs there: what the nodes take besides comes on top.
					c.Capacity = prev + int32(info.SplitCapacity(pod, key, req.Now, int64(s.Total-prev)))
				default:
					// New, or promised and not seen running yet: the room is still free.
					c.Capacity = int32(info.SplitCapacity(pod, key, req.Now, int64(s.Total)))
				}
				if c.Weight > 0 && max(c.Capacity, prev) >= s.Min {
					room += max(c.Capacity, prev)
					counted++
				}
			}
			input.Clusters[k] = c
			d.Capacity[k] = c.Capacity
			if enough && prev == 0 {
				d.Capacity[k] = -1 // not counted: the clusters before it hold the replicas
			}
		}
		res := split.Divide(input)
		d.Shares, d.Unplaced = res.Shares, res.Unplaced
		out = append(out, d)
	}
	return out
}

// unweighted returns the split by weights that gives the cluster no weight, or nil.
func unweighted(pods []*hpa.Pod, info *framework.ClusterInfo) *hpa.Split {
	for _, pod := range pods {
		if s := pod.Split; s != nil && s.Policy == fleetfitv1alpha1.SplitByWeights && s.WeightOf(info.Cluster.Labels) == 0 {
			return s
		}
	}
	return nil
}
