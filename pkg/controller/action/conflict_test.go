package action

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	workfake "open-cluster-management.io/api/client/work/clientset/versioned/fake"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/conflict"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestConflictIsNotADeliveryError: a ManifestWork update that conflicts with a newer write is
// retried, and the intent's Delivered condition does not report it; any other failure is.
func TestConflictIsNotADeliveryError(t *testing.T) {
	works := schema.GroupResource{Group: "work.open-cluster-management.io", Resource: "manifestworks"}
	for _, tc := range []struct {
		name          string
		updateErr     error
		wantConflict  bool
		wantCondition string
	}{
		{"conflict", apierrors.NewConflict(works, "shop.web", errors.New("the object has been modified")), true, "Delivering"},
		{"forbidden", apierrors.NewForbidden(works, "shop.web", errors.New("no")), false, "DeliveryError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(
				ut.MakeConsumer("web").Target("Deployment", "web", "app").Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
			).Manifest(deployment("web", "")).Obj()
			in.Generation = 1
			in.Finalizers = []string{Finalizer}
			in.Status.ScheduledPlacement = "web"
			meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: 1})
			decision := &clusterv1beta1.PlacementDecision{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-decision-1", Labels: map[string]string{clusterv1beta1.PlacementLabel: "web"}},
				Status:     clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{{ClusterName: "cluster1"}}},
			}
			stale := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: WorkName(in)}}

			fleetfitClient := fleetfitfake.NewSimpleClientset(in)
			workClient := workfake.NewSimpleClientset(stale)
			workClient.PrependReactor("update", "manifestworks", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.updateErr
			})
			ocm := clusterinformers.NewSharedInformerFactory(clusterfake.NewSimpleClientset(), 0)
			work := workinformers.NewSharedInformerFactory(workClient, 0)
			fleetfit := fleetfitinformers.NewSharedInformerFactory(fleetfitClient, 0)
			c, err := New(Clients{Work: workClient, Fleetfit: fleetfitClient, Recorder: events.NewFakeRecorder(10)}, ocm, work, fleetfit, cache.New(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, add := range []error{
				fleetfit.Fleetfit().V1alpha1().HPAIntents().Informer().GetIndexer().Add(in),
				ocm.Cluster().V1beta1().PlacementDecisions().Informer().GetIndexer().Add(decision),
				work.Work().V1().ManifestWorks().Informer().GetIndexer().Add(stale),
			} {
				if add != nil {
					t.Fatal(add)
				}
			}

			err = c.sync(t.Context(), "shop/web")
			if err == nil {
				t.Fatal("sync succeeded although the ManifestWork update failed")
			}
			if got := conflict.Only(err); got != tc.wantConflict {
				t.Errorf("sync returned %v; only conflicts: %v, want %v", err, got, tc.wantConflict)
			}
			got, err := fleetfitClient.FleetfitV1alpha1().HPAIntents("shop").Get(t.Context(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDelivered)
			if cond == nil || cond.Reason != tc.wantCondition {
				t.Errorf("Delivered condition %+v, want reason %s", cond, tc.wantCondition)
			}
		})
	}
}
