package action

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestDeliveryState(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Message: msg}
	}
	replicas := workv1.ManifestCondition{
		ResourceMeta: workv1.ManifestResourceMeta{Kind: "Deployment", Name: "web"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			{Name: "Replicas", Value: workv1.FieldValue{Integer: ptr.To[int64](3)}},
			{Name: "ReadyReplicas", Value: workv1.FieldValue{Integer: ptr.To[int64](2)}},
		}},
	}
	cases := map[string]struct {
		conditions []metav1.Condition
		want       v1alpha1.DeliveryState
		message    string
	}{
		"no status yet": {want: v1alpha1.DeliveryPending, message: "waiting for the work agent"},
		"applied":       {conditions: []metav1.Condition{cond(workv1.WorkApplied, metav1.ConditionTrue, "")}, want: v1alpha1.DeliveryApplied, message: "Deployment web: 2/3 ready"},
		"available":     {conditions: []metav1.Condition{cond(workv1.WorkApplied, metav1.ConditionTrue, ""), cond(workv1.WorkAvailable, metav1.ConditionTrue, "")}, want: v1alpha1.DeliveryAvailable, message: "Deployment web: 2/3 ready"},
		"apply failed":  {conditions: []metav1.Condition{cond(workv1.WorkApplied, metav1.ConditionFalse, "forbidden")}, want: v1alpha1.DeliveryFailed, message: "forbidden"},
		"degraded":      {conditions: []metav1.Condition{cond(workv1.WorkApplied, metav1.ConditionTrue, ""), cond(workv1.WorkDegraded, metav1.ConditionTrue, "crash loop")}, want: v1alpha1.DeliveryDegraded, message: "crash loop"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &workv1.ManifestWork{}
			w.Status.Conditions = tc.conditions
			w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{replicas}
			state, msg := deliveryState(w)
			if state != tc.want || msg != tc.message {
				t.Errorf("deliveryState = %s, %q; want %s, %q", state, msg, tc.want, tc.message)
			}
		})
	}
}

// TestOptionalFor: the optional requirements a delivery applies are those the scheduler's
// cache shows the cluster can meet, or those the existing ManifestWork applied; a cluster the
// cache holds no inventory of gets none.
func TestOptionalFor(t *testing.T) {
	in := ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", "app").Replicas(1).Requirement(
			ut.MakeResource("cpu", "cpu").Requests("2").Obj(),
			ut.MakeResource("gpu", "nvidia.com/gpu").Limits("1").Optional(5).Obj(),
		).Obj(),
	).Manifest(deployment("web", "")).Obj()
	in.UID, in.Generation = "uid-web", 1
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fleet := cache.New()
	fleet.Load(cache.Objects{
		Clusters: []*clusterv1.ManagedCluster{ut.MakeCluster("gpus").Obj(), ut.MakeCluster("cpus").Obj(), ut.MakeCluster("silent").Obj()},
		Inventories: []*v1alpha1.ClusterInventory{
			ut.MakeInventory("gpus", now, []*corev1.Node{ut.MakeNode("n").Resource(corev1.ResourceCPU, "8").Resource("nvidia.com/gpu", "1").Obj()}),
			ut.MakeInventory("cpus", now, []*corev1.Node{ut.MakeNode("n").Resource(corev1.ResourceCPU, "8").Obj()}),
			// Only the inventory named after its cluster describes it, as on the hub.
			{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "silent"}, Status: ut.InventoryStatus([]*corev1.Node{
				ut.MakeNode("n").Resource(corev1.ResourceCPU, "8").Resource("nvidia.com/gpu", "1").Obj()})},
		},
	})
	compiled, err := fleet.Intent(in)
	if err != nil {
		t.Fatal(err)
	}
	applied := func(v string) *workv1.ManifestWork {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationOptional: v}}}
	}
	cases := map[string]struct {
		cluster  string
		existing *workv1.ManifestWork
		want     map[string][]string
	}{
		"the cluster has room for the GPU":        {cluster: "gpus", want: map[string][]string{"web": {"gpu"}}},
		"the cluster has no GPU":                  {cluster: "cpus", want: map[string][]string{}},
		"the cluster has no inventory of its own": {cluster: "silent", want: map[string][]string{}},
		"the cache does not hold the cluster":     {cluster: "gone", want: map[string][]string{}},
		"the delivery keeps what it applied": {
			cluster: "cpus", existing: applied("web/gpu,web/dropped"), want: map[string][]string{"web": {"gpu"}},
		},
		"the delivery applied none": {cluster: "gpus", existing: applied(""), want: map[string][]string{}},
	}
	c := &Controller{fleet: fleet}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, c.optionalFor(compiled, tc.cluster, tc.existing)); diff != "" {
				t.Errorf("optional requirements (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestFleetHolds: deliveries start once the scheduler's cache holds every agent's report the
// informer lists; a ClusterInventory that is not the agent's report is not waited for.
func TestFleetHolds(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	report := ut.MakeInventory("cluster1", now, []*corev1.Node{ut.MakeNode("n").Resource(corev1.ResourceCPU, "8").Obj()})
	stray := report.DeepCopy()
	stray.Name = "stray"
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, inv := range []*v1alpha1.ClusterInventory{report, stray} {
		if err := indexer.Add(inv); err != nil {
			t.Fatal(err)
		}
	}
	lister := fleetfitlisters.NewClusterInventoryLister(indexer)
	fleet := cache.New()
	c := &Controller{fleet: fleet}
	if c.fleetHolds(lister) {
		t.Error("fleetHolds = true before the cache holds cluster1's report")
	}
	fleet.UpsertInventory(report)
	if !c.fleetHolds(lister) {
		t.Error("fleetHolds = false once the cache holds cluster1's report")
	}
}
