package addon

import (
	"testing"
	"time"

	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestClusterChanged(t *testing.T) {
	info := func(scores ...*clusterv1alpha1.AddOnPlacementScore) *framework.ClusterInfo {
		byName := map[string]*clusterv1alpha1.AddOnPlacementScore{}
		for _, s := range scores {
			byName[s.Name] = s
		}
		return framework.NewClusterInfo(st.MakeCluster("c1").Obj(), byName, nil)
	}
	score := func(validUntil *time.Time, values map[string]int32) *clusterv1alpha1.AddOnPlacementScore {
		return st.MakeScore("c1", "demo", validUntil, values)
	}
	tests := map[string]struct {
		old, new         *framework.ClusterInfo
		decides, follows bool
		want             framework.QueueingHint
	}{
		"the same value rewritten": {
			decides: true, old: info(score(nil, map[string]int32{"cpu": 30})), new: info(score(nil, map[string]int32{"cpu": 30})),
			want: framework.QueueSkip,
		},
		"another score of the object changes": {
			decides: true, old: info(score(nil, map[string]int32{"cpu": 30, "mem": 1})), new: info(score(nil, map[string]int32{"cpu": 30, "mem": 9})),
			want: framework.QueueSkip,
		},
		"the value changes on a decided cluster": {
			decides: true, old: info(score(nil, map[string]int32{"cpu": 30})), new: info(score(nil, map[string]int32{"cpu": 31})),
			want: framework.Queue,
		},
		"the value changes where a pinned placement does not decide": {
			old: info(score(nil, map[string]int32{"cpu": 30})), new: info(score(nil, map[string]int32{"cpu": 90})),
			want: framework.QueueSkip,
		},
		"the value changes for a placement that follows": {
			follows: true, old: info(score(nil, map[string]int32{"cpu": 30})), new: info(score(nil, map[string]int32{"cpu": 90})),
			want: framework.Queue,
		},
		"the object appears": {
			decides: true, old: info(), new: info(score(nil, map[string]int32{"cpu": 30})),
			want: framework.Queue,
		},
		"the object is rewritten expired": {
			decides: true, old: info(score(nil, map[string]int32{"cpu": 30})), new: info(score(&past, map[string]int32{"cpu": 30})),
			want: framework.Queue,
		},
	}
	p := newAddOn(&clusterv1beta1.AddOnScore{ResourceName: "demo", ScoreName: "cpu"})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			target := &framework.Target{Request: &framework.Request{Placement: st.MakePlacement("p", "ns").Obj(), Now: now},
				Decides: tc.decides, Follows: tc.follows}
			if got := p.ClusterChanged(framework.ClusterEvent{Old: tc.old, New: tc.new, Now: now}, target); got != tc.want {
				t.Errorf("ClusterChanged() = %v, want %v", got, tc.want)
			}
		})
	}
}
