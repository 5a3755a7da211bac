package delivery

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/action"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestDeliverDeviceClaims delivers an intent whose consumer asks for DRA devices to cluster1,
// where OCM's work agent creates the ResourceClaimTemplate of the consumer's device requirement
// and the Deployment, whose pods claim it, as the intent namespace's executor. The test
// schedules the intent itself, as TestSplitDeliversShares does: what is checked is what
// fleetfit delivers, not where the devices are (no agent reports them, and no kube-scheduler
// allocates them).
func TestDeliverDeviceClaims(t *testing.T) {
	const (
		dra   = "dra"
		class = "gpu.example.com"
	)
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	works := workclient.NewForConfigOrDie(hub.AdminConfig())
	intents := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(dra)
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	spoke1 := fleet.Spokes[0].AdminClient()
	if err := framework.GrantDelivery(ctx, fleet.Spokes[0], dra); err != nil {
		t.Fatal(err)
	}
	w, err := framework.StartOCMWorkAgent(ctx, hub, fleet.Spokes[0], "cluster1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop()
		if t.Failed() {
			t.Logf("work agent of cluster1:\n%s", w.LogTail(30))
		}
	})
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dra}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	placement := ut.MakePlacement("web", dra).NumberOfClusters(1).Obj()
	placement.Annotations = map[string]string{clusterv1beta1.PlacementDisableAnnotation: "true"}
	if _, err := clusters.ClusterV1beta1().Placements(dra).Create(ctx, placement, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const a100 = `device.attributes["gpu.example.com"].model == "A100"`
	gpus := ut.MakeRequirement("gpu").Obj()
	gpus.Devices = &v1alpha1.DeviceRequirement{DeviceClassName: class, Count: ptr.To[int32](2),
		Selectors: []v1alpha1.DeviceSelector{{CEL: &v1alpha1.CELDeviceSelector{Expression: a100}}}}
	intent := ut.MakeHPAIntent("web", dra).Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", container).Requirement(
			ut.MakeResource("cpu", "cpu").Requests("1").Obj(), gpus,
		).Obj(),
	).Manifest(webDeployment()).Obj()
	if _, err := intents.Create(ctx, intent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.RunHub(t, hub.AdminConfig())
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		if in, err := intents.Get(ctx, "web", metav1.GetOptions{}); err == nil {
			t.Logf("intent status: %+v", in.Status)
		}
		if w, err := works.WorkV1().ManifestWorks("cluster1").Get(ctx, action.WorkName(intent), metav1.GetOptions{}); err == nil {
			t.Logf("work conditions: %+v", w.Status.Conditions)
			for _, m := range w.Status.ResourceStatus.Manifests {
				t.Logf("manifest %+v: %+v", m.ResourceMeta, m.Conditions)
			}
		}
	})

	// The hub finds the intent valid; the test schedules it to cluster1.
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(in.Status.Conditions, v1alpha1.ConditionValid) {
			return fmt.Errorf("conditions %+v, want Valid=True", in.Status.Conditions)
		}
		in.Status.ScheduledPlacement = "web"
		_, err = intents.UpdateStatus(ctx, in, metav1.UpdateOptions{})
		return err
	})
	decision := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: "web-decision-1", Namespace: dra,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "web"}}}
	decision, err = clusters.ClusterV1beta1().PlacementDecisions(dra).Create(ctx, decision, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	decision.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "cluster1"}}
	if _, err := clusters.ClusterV1beta1().PlacementDecisions(dra).UpdateStatus(ctx, decision, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The template and the Deployment that claims it land on cluster1, and the intent reports
	// the delivery: every manifest, the template too, was applied.
	templateName := action.ClaimTemplateName(intent, "web")
	claim := action.PodClaimName("web")
	var tmpl *resourcev1.ResourceClaimTemplate
	framework.Eventually(t, func(ctx context.Context) error {
		var err error
		tmpl, err = spoke1.ResourceV1().ResourceClaimTemplates(dra).Get(ctx, templateName, metav1.GetOptions{})
		return err
	})
	wantRequests := []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2,
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: a100}}},
	}}}
	if diff := cmp.Diff(wantRequests, tmpl.Spec.Spec.Devices.Requests); diff != "" {
		t.Errorf("requests of the delivered ResourceClaimTemplate (-want,+got):\n%s", diff)
	}
	dep, err := spoke1.AppsV1().Deployments(dra).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := dep.Spec.Template.Spec
	if diff := cmp.Diff([]corev1.PodResourceClaim{{Name: claim, ResourceClaimTemplateName: ptr.To(templateName)}}, spec.ResourceClaims); diff != "" {
		t.Errorf("claims of the delivered pod template (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ResourceClaim{{Name: claim}}, spec.Containers[0].Resources.Claims); diff != "" {
		t.Errorf("claims of the delivered container (-want,+got):\n%s", diff)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(in.Status.Clusters) != 1 || in.Status.Clusters[0].ClusterName != "cluster1" || in.Status.Clusters[0].State != v1alpha1.DeliveryAvailable {
			return fmt.Errorf("status.clusters %+v, want cluster1 Available", in.Status.Clusters)
		}
		if !meta.IsStatusConditionTrue(in.Status.Conditions, v1alpha1.ConditionDelivered) {
			return fmt.Errorf("conditions %+v, want Delivered=True", in.Status.Conditions)
		}
		return nil
	})

	// Deleting the intent removes the template with the rest of the delivery.
	if err := intents.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := spoke1.ResourceV1().ResourceClaimTemplates(dra).Get(ctx, templateName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster1 still has the ResourceClaimTemplate (err %v)", err)
		}
		if _, err := spoke1.AppsV1().Deployments(dra).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster1 still has the Deployment (err %v)", err)
		}
		return nil
	})
}
