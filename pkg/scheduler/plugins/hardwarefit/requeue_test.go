package hardwarefit

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// info is the hub's info of cluster c, as the cache builds it.
func info(c cluster) *framework.ClusterInfo {
	i := framework.NewClusterInfo(st.MakeCluster(c.name).Obj(), nil, c.inv)
	i.Reservations = c.reservations
	return i
}

func TestClusterChanged(t *testing.T) {
	eight := nodes("n", 1, cpuNode("8"))
	avx := nodes("n", 1, cpuNode("8").Label(avx512, "true"))
	web := intent(consumer("web", 1, "6").Requirement(feature(avx512, corev1.NodeSelectorOpIn, "true")))
	sixteen := nodes("n", 2, cpuNode("8"))
	split := splitIntent(intent(consumer("web", 8, "4")), fleetfitv1alpha1.ReplicaSplit{})
	heartbeat := func(c cluster) cluster {
		c.inv = c.inv.DeepCopy()
		c.inv.Status.ObservedAt.Time = c.inv.Status.ObservedAt.Add(30 * time.Second)
		c.inv.Status.Revision++
		return c
	}
	tests := map[string]struct {
		intents  []*fleetfitv1alpha1.HPAIntent
		old, new *cluster
		decides  bool
		waiting  bool
		want     framework.QueueingHint
	}{
		"a heartbeat of a decided cluster": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, decides: true,
			old: clusterPtr(reporting("a", avx)), new: clusterPtr(heartbeat(reporting("a", avx))), want: framework.QueueSkip,
		},
		"a heartbeat of a cluster a waiting placement cannot use": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, waiting: true,
			old: clusterPtr(reporting("a", eight)), new: clusterPtr(heartbeat(reporting("a", eight))), want: framework.QueueSkip,
		},
		"less room on a decided cluster: its own pods may use it": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, decides: true,
			old: clusterPtr(reporting("a", avx)), new: clusterPtr(reporting("a", avx, pod("p", "n-0", "7"))), want: framework.QueueSkip,
		},
		"a decided cluster loses the feature": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, decides: true,
			old: clusterPtr(reporting("a", avx)), new: clusterPtr(reporting("a", eight)), want: framework.Queue,
		},
		"room freed where a waiting placement fits": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, waiting: true,
			old: clusterPtr(reporting("a", avx, pod("p", "n-0", "4"))), new: clusterPtr(reporting("a", avx)), want: framework.Queue,
		},
		"room freed, but not enough for the waiting placement": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, waiting: true,
			old: clusterPtr(reporting("a", avx, pod("p", "n-0", "7"))), new: clusterPtr(reporting("a", avx, pod("p", "n-0", "4"))), want: framework.QueueSkip,
		},
		"room freed for a placement that has all its clusters": {
			intents: []*fleetfitv1alpha1.HPAIntent{web},
			old:     clusterPtr(reporting("a", avx, pod("p", "n-0", "4"))), new: clusterPtr(reporting("a", avx)), want: framework.QueueSkip,
		},
		"a stale report fresh again, for a waiting placement": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, waiting: true,
			old: clusterPtr(reportingAt("a", now.Add(-framework.InventoryStaleAfter-time.Minute), avx)), new: clusterPtr(reporting("a", avx)),
			want: framework.Queue,
		},
		"a reservation released, for a waiting placement": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, waiting: true,
			old: clusterPtr(reporting("a", avx).reserving(reservation(t, "ns/other", now.Add(time.Minute)))),
			new: clusterPtr(reporting("a", avx)), want: framework.Queue,
		},
		"a new cluster where a waiting placement fits": {
			intents: []*fleetfitv1alpha1.HPAIntent{web}, waiting: true,
			new: clusterPtr(reporting("a", avx)), want: framework.Queue,
		},
		"room for more replicas of a waiting split, where its smallest share fitted before": {
			intents: []*fleetfitv1alpha1.HPAIntent{split}, waiting: true,
			old: clusterPtr(reporting("a", eight)), new: clusterPtr(reporting("a", sixteen)), want: framework.Queue,
		},
		"room for more replicas of a split that placed them all": {
			intents: []*fleetfitv1alpha1.HPAIntent{split},
			old:     clusterPtr(reporting("a", eight)), new: clusterPtr(reporting("a", sixteen)), want: framework.QueueSkip,
		},
		"a heartbeat of a cluster a waiting split uses": {
			intents: []*fleetfitv1alpha1.HPAIntent{split}, waiting: true, decides: true,
			old: clusterPtr(reporting("a", eight)), new: clusterPtr(heartbeat(reporting("a", eight))), want: framework.QueueSkip,
		},
		"no intents": {
			decides: true, waiting: true,
			old: clusterPtr(reporting("a", avx)), new: clusterPtr(reporting("a", eight)), want: framework.QueueSkip,
		},
	}
	p := newPlugin(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ev := framework.ClusterEvent{New: info(*tc.new), Now: now}
			if tc.old != nil {
				ev.Old = info(*tc.old)
			}
			target := &framework.Target{
				Request: &framework.Request{Placement: st.MakePlacement("p", "ns").Obj(), Intents: tc.intents, Decided: framework.NewBitset(0), Now: now},
				Decides: tc.decides, Waiting: tc.waiting,
			}
			if got := p.ClusterChanged(ev, target); got != tc.want {
				t.Errorf("ClusterChanged() = %v, want %v", got, tc.want)
			}
		})
	}
}

func clusterPtr(c cluster) *cluster { return &c }
