// Package delivery runs the whole delivery path on real control planes: fleetfit agents report
// the spokes' nodes, fleetfit-hub schedules an HPAIntent's Placement and delivers its workload
// through ManifestWorks, and OCM's own work agent (built from open-cluster-management.io/ocm)
// applies them on the spokes.
package delivery

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/action"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

var fleet *framework.Fleet

func TestMain(m *testing.M) { framework.MainWithFleet(m, 2, framework.Options{}, &fleet) }

const (
	ns        = "shop"
	gpuLabel  = "nvidia.com/gpu.product"
	osLabel   = "kubernetes.io/os"
	gpuTaint  = "nvidia.com/gpu"
	container = "web"
)

func webDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: osLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
						}}},
					}},
					Containers: []corev1.Container{{
						Name: container, Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}},
					}},
				},
			},
		},
	}
}

func TestDeliverToTheRightNodes(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	works := workclient.NewForConfigOrDie(hub.AdminConfig())
	intents := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(ns)
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	// cluster1 has an A100 node (tainted for GPU pods only), cluster2 CPU nodes.
	nodes := [][]*corev1.Node{
		{ut.MakeNode("a100-0").Resource("cpu", "16").Resource("memory", "64Gi").Resource("nvidia.com/gpu", "2").
			Label(gpuLabel, "A100").Label(osLabel, "linux").Taint(gpuTaint, "present", corev1.TaintEffectNoSchedule).Obj()},
		{ut.MakeNode("cpu-0").Resource("cpu", "16").Resource("memory", "64Gi").Label(osLabel, "linux").Obj()},
	}
	for i, spoke := range fleet.Spokes {
		name := framework.SpokeName(i)
		for _, n := range nodes[i] {
			if err := framework.CreateNode(ctx, spoke.AdminClient(), n); err != nil {
				t.Fatal(err)
			}
		}
		if err := framework.ApplyAgentRBAC(ctx, hub, spoke, name); err != nil {
			t.Fatal(err)
		}
		if err := framework.GrantDelivery(ctx, spoke, ns); err != nil {
			t.Fatal(err)
		}
		agentCtx, cancel := context.WithCancel(ctx)
		done, err := framework.StartAgent(agentCtx, hub, spoke, name, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); <-done })
		w, err := framework.StartOCMWorkAgent(ctx, hub, spoke, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			w.Stop()
			if t.Failed() {
				t.Logf("work agent of %s:\n%s", name, w.LogTail(30))
			}
		})
	}
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet("default"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, ut.MakeClusterSetBinding(ns, "default"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta1().Placements(ns).Create(ctx, ut.MakePlacement("web", ns).NumberOfClusters(1).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	intent := ut.MakeHPAIntent("web", ns).Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", container).Requirement(
			ut.MakeResource("cpu", "cpu").Requests("2").Limits("4").Obj(),
			ut.MakeFeature("a100", gpuLabel).Values("A100").Obj(),
			ut.MakeResource("gpu", "nvidia.com/gpu").Limits("1").Obj(),
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
		if ds, err := clusters.ClusterV1beta1().PlacementDecisions(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, d := range ds.Items {
				t.Logf("decision %s: %+v", d.Name, d.Status.Decisions)
			}
		}
		for _, c := range []string{"cluster1", "cluster2"} {
			if ws, err := works.WorkV1().ManifestWorks(c).List(ctx, metav1.ListOptions{}); err == nil {
				for _, w := range ws.Items {
					t.Logf("work %s/%s: %+v", c, w.Name, w.Status.Conditions)
				}
			}
		}
	})

	// The Deployment lands on cluster1 only, mutated so that its pods go to the A100 node.
	spoke1 := fleet.Spokes[0].AdminClient()
	var dep *appsv1.Deployment
	framework.Eventually(t, func(ctx context.Context) error {
		var err error
		dep, err = spoke1.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err
	})
	c := dep.Spec.Template.Spec.Containers[0]
	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": resource.MustParse("2"), "nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{"cpu": resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("1")},
	}
	if diff := cmp.Diff(want, c.Resources, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("resources of the delivered container (-want,+got):\n%s", diff)
	}
	terms := dep.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	wantTerm := []corev1.NodeSelectorRequirement{
		{Key: osLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		{Key: gpuLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"A100"}},
	}
	if len(terms) != 1 || !cmp.Equal(terms[0].MatchExpressions, wantTerm) {
		t.Errorf("node affinity terms %+v, want the user's term with the A100 requirement added", terms)
	}
	if !slices.ContainsFunc(dep.Spec.Template.Spec.Tolerations, func(tl corev1.Toleration) bool { return tl.Key == gpuTaint }) {
		t.Errorf("tolerations %+v lack one for the %s taint", dep.Spec.Template.Spec.Tolerations, gpuTaint)
	}
	if _, err := fleet.Spokes[1].AdminClient().AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster2 has the Deployment too (err %v)", err)
	}

	// The intent reports the delivery.
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

	// Without the A100 and GPU requirements and with the placement pinned to cluster2, the workload
	// moves: cluster1 loses its ManifestWork and the Deployment, cluster2 gets them.
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		in.Spec.Consumers[0].Requirements = slices.DeleteFunc(in.Spec.Consumers[0].Requirements, func(r v1alpha1.ResourceRequirement) bool { return r.Name == "a100" || r.Name == "gpu" })
		_, err = intents.Update(ctx, in, metav1.UpdateOptions{})
		return err
	})
	framework.Eventually(t, func(ctx context.Context) error {
		p, err := clusters.ClusterV1beta1().Placements(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.Predicates = ut.MakePlacement("web", ns).PredicateLabels(map[string]string{"name": "cluster2"}).Obj().Spec.Predicates
		_, err = clusters.ClusterV1beta1().Placements(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := works.WorkV1().ManifestWorks("cluster1").Get(ctx, action.WorkName(intent), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster1 still has the ManifestWork (err %v)", err)
		}
		if _, err := spoke1.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster1 still has the Deployment (err %v)", err)
		}
		d, err := fleet.Spokes[1].AdminClient().AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, gpu := d.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; gpu {
			return fmt.Errorf("cluster2 has no GPU, but the delivered container asks for one")
		}
		return nil
	})

	// Deleting the intent removes the remaining delivery, then the intent.
	if err := intents.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := intents.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the intent is still there (err %v)", err)
		}
		if _, err := fleet.Spokes[1].AdminClient().AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster2 still has the Deployment (err %v)", err)
		}
		return nil
	})
}
