package placement

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestScoreRateLimit(t *testing.T) {
	cases := map[string]struct {
		value   string
		want    time.Duration
		wantErr string
	}{
		"empty is the default": {value: "", want: time.Minute},
		"a duration":           {value: "30s", want: 30 * time.Second},
		"zero":                 {value: "0s", want: 0},
		"not a duration":       {value: "fast", wantErr: `spec.scoreRateLimit "fast" is not a duration such as 30s or 5m`},
		"negative":             {value: "-1m", wantErr: `spec.scoreRateLimit "-1m" is not a duration`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := utiltesting.MakePlacement("p", "ns").Obj()
			p.Spec.ScoreRateLimit = tc.value
			got, err := ScoreRateLimit(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ScoreRateLimit(%q) = %v, %v; want an error containing %q", tc.value, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ScoreRateLimit(%q) = %v, %v; want %v", tc.value, got, err, tc.want)
			}
		})
	}
}

// TestMisconfiguredIntentsSayWhy: whatever makes a placement Misconfigured, each of its intents
// gets a Scheduled condition with a reason and a message that says what is wrong, and the
// placement's decisions are kept.
func TestMisconfiguredIntentsSayWhy(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	node := utiltesting.MakeNode("n").Resource(corev1.ResourceCPU, "16").Resource(corev1.ResourceMemory, "64Gi").Obj()
	fleet := cachetest.Fleet{
		Clusters:    []*clusterv1.ManagedCluster{utiltesting.MakeCluster("c1").ClusterSet("default").Obj()},
		Sets:        []*clusterv1beta2.ManagedClusterSet{utiltesting.MakeExclusiveClusterSet("default")},
		Bindings:    []*clusterv1beta2.ManagedClusterSetBinding{utiltesting.MakeClusterSetBinding("app", "default")},
		Inventories: []*fleetfitv1alpha1.ClusterInventory{utiltesting.MakeInventory("c1", now, []*corev1.Node{node})},
	}
	web := utiltesting.MakeConsumer("web").Target("Deployment", "web", "main").
		Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj())
	good := utiltesting.MakeHPAIntent("web", "app").Placement("p").Consumer(web.Obj()).Obj()
	// Two mandatory amounts of one resource: the intent does not compile.
	broken := utiltesting.MakeHPAIntent("web", "app").Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("Deployment", "web", "main").
			Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj(),
				utiltesting.MakeResource("more-cpu", "cpu").Requests("2").Obj()).Obj()).Obj()
	base := utiltesting.MakePlacement("p", "app").ClusterSets("default")

	tests := map[string]struct {
		placement   *clusterv1beta1.Placement
		intent      *fleetfitv1alpha1.HPAIntent
		wantMessage string
	}{
		"a decision group size that is not a percentage": {
			placement:   base.Clone().ClustersPerDecisionGroup(intstr.FromString("abc%")).Obj(),
			intent:      good,
			wantMessage: "Placement p is misconfigured, so it is not scheduled and keeps its decisions: clustersPerDecisionGroup abc% invalid type: string is not a percentage",
		},
		"an invalid scoreRateLimit": {
			placement: func() *clusterv1beta1.Placement {
				p := base.Clone().Obj()
				p.Spec.ScoreRateLimit = "fast"
				return p
			}(),
			intent:      good,
			wantMessage: `Placement p is misconfigured, so it is not scheduled and keeps its decisions: Placement: spec.scoreRateLimit "fast" is not a duration`,
		},
		"an intent that does not compile": {
			placement:   base.Clone().Obj(),
			intent:      broken,
			wantMessage: `Placement p is misconfigured, so it is not scheduled and keeps its decisions: HardwareFit: HPAIntent web: spec.consumers[0].requirements[1].resource.name: Invalid value: "cpu": two mandatory requirements ask for amounts of the same resource`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), fleet.ScoreLister()),
				plugins.NewRegistry(), plugins.DefaultProfile())
			if err != nil {
				t.Fatal(err)
			}
			plan := PlanCycle(t.Context(), PlanInput{
				Scheduler: s, Snapshot: fleet.Snapshot(), Placement: tc.placement,
				Intents: []*fleetfitv1alpha1.HPAIntent{tc.intent}, Now: now,
			})
			if !plan.Kept || plan.Failure.Code() != framework.Misconfigured {
				t.Fatalf("the cycle kept %v with %v, want a misconfiguration", plan.Kept, plan.Failure)
			}
			c := meta.FindStatusCondition(plan.Intents[0].Status.Conditions, fleetfitv1alpha1.ConditionScheduled)
			if c == nil {
				t.Fatal("the intent has no Scheduled condition")
			}
			if c.Status != metav1.ConditionFalse || c.Reason != ReasonPlacementMisconfigured || !strings.HasPrefix(c.Message, tc.wantMessage) {
				t.Errorf("Scheduled = %s %s %q, want False %s starting %q", c.Status, c.Reason, c.Message, ReasonPlacementMisconfigured, tc.wantMessage)
			}
			if tc.intent.Status.Conditions != nil {
				t.Error("the input intent was changed")
			}
		})
	}
}
