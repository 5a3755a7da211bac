package ocm

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/test/framework"
)

// TestPlacement runs OCM's placement controller on the hub and checks that
// a Placement of one cluster, in a namespace bound to the cluster set the
// spokes are in, gets a PlacementDecision naming one of them.
func TestPlacement(t *testing.T) {
	ctx := t.Context()
	const ns = "ocm-placement"
	hub := fleet.Hub.AdminClient()
	clusters := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig())

	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	placement, err := framework.StartOCMPlacement(ctx, fleet.Hub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		placement.Stop()
		if t.Failed() {
			t.Logf("placement controller log:\n%s", placement.LogTail(50))
		}
	})

	// RegisterSpokes puts the spokes in cluster set "default" by label, as
	// the ManagedClusterSet OCM's registration creates selects them.
	set := &clusterv1beta2.ManagedClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.ExclusiveClusterSetLabel},
		},
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set.Name},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set.Name},
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"},
		Spec: clusterv1beta1.PlacementSpec{
			ClusterSets:      []string{set.Name},
			NumberOfClusters: ptr.To[int32](1),
		},
	}
	if _, err := clusters.ClusterV1beta1().Placements(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	spokes := map[string]bool{}
	for i := range fleet.Spokes {
		spokes[framework.SpokeName(i)] = true
	}
	framework.Eventually(t, func(ctx context.Context) error {
		list, err := clusters.ClusterV1beta1().PlacementDecisions(ns).List(ctx, metav1.ListOptions{
			LabelSelector: clusterv1beta1.PlacementLabel + "=" + p.Name,
		})
		if err != nil {
			return err
		}
		var decided []string
		for _, d := range list.Items {
			for _, cd := range d.Status.Decisions {
				decided = append(decided, cd.ClusterName)
			}
		}
		if len(decided) != 1 || !spokes[decided[0]] {
			return fmt.Errorf("PlacementDecisions of %d items decide %v; want one of the spokes %v", len(list.Items), decided, spokes)
		}
		got, err := clusters.ClusterV1beta1().Placements(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.NumberOfSelectedClusters != 1 {
			return fmt.Errorf("placement status selects %d clusters, want 1", got.Status.NumberOfSelectedClusters)
		}
		return nil
	})
}

// TestWorkAgent runs OCM's work agent for the first spoke and checks that a
// ConfigMap in a ManifestWork in the spoke's namespace on the hub is applied
// to the spoke, and that the agent reports the work applied.
func TestWorkAgent(t *testing.T) {
	ctx := t.Context()
	cluster := framework.SpokeName(0)
	spoke := fleet.Spokes[0].AdminClient()
	works := workclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).WorkV1().ManifestWorks(cluster)

	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	agent, err := framework.StartOCMWorkAgent(ctx, fleet.Hub, fleet.Spokes[0], cluster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		agent.Stop()
		if t.Failed() {
			t.Logf("work agent log:\n%s", agent.LogTail(50))
		}
	})

	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "ocm-smoke"},
		Data:       map[string]string{"hello": "fleet"},
	}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "smoke"},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
			Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: cm}}},
		}},
	}
	if _, err := works.Create(ctx, work, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	framework.Eventually(t, func(ctx context.Context) error {
		got, err := spoke.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Data["hello"] != "fleet" {
			return fmt.Errorf("ConfigMap data %v, want hello: fleet", got.Data)
		}
		return nil
	})
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := works.Get(ctx, work.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, workv1.WorkApplied) {
			return fmt.Errorf("ManifestWork conditions %v, want %s true", got.Status.Conditions, workv1.WorkApplied)
		}
		return nil
	})
}
