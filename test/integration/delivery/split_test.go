package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/action"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// splitWork is what the test reads of one cluster's ManifestWork of a split intent.
type splitWork struct {
	uid             types.UID
	resourceVersion string
	replicas        int32
}

// TestSplitDeliversShares: the ManifestWork of each decided cluster of a split intent carries
// the cluster's share as the Deployment's replicas; a decided cluster without a share gets no
// ManifestWork until it has one; a share that changes updates the ManifestWork in place; and
// status.clusters reports each cluster's replicas and those the work agent reports ready.
//
// The test plays the placement controller (its Placement carries OCM's annotation that keeps
// schedulers off it): it writes status.split, then the decisions, as the hub does. No work agent
// runs: the test reports the ManifestWorks' status as OCM's would.
func TestSplitDeliversShares(t *testing.T) {
	const splitNS = "split"
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	works := workclient.NewForConfigOrDie(hub.AdminConfig()).WorkV1()
	intents := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(splitNS)
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: splitNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	placement := ut.MakePlacement("web", splitNS).NumberOfClusters(2).Obj()
	placement.Annotations = map[string]string{clusterv1beta1.PlacementDisableAnnotation: "true"}
	if _, err := clusters.ClusterV1beta1().Placements(splitNS).Create(ctx, placement, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	intent := ut.MakeHPAIntent("web", splitNS).Placement("web").Split(v1alpha1.ReplicaSplit{}).Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", container).Replicas(10).Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
	).Manifest(webDeployment()).Obj()
	if _, err := intents.Create(ctx, intent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.RunHub(t, hub.AdminConfig())
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if in, err := intents.Get(context.Background(), "web", metav1.GetOptions{}); err == nil {
			t.Logf("intent status: %+v", in.Status)
		}
	})
	name := action.WorkName(intent)

	// The hub finds the intent valid; the test schedules it: shares first, then decisions.
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(in.Status.Conditions, v1alpha1.ConditionValid) {
			return fmt.Errorf("conditions %+v, want Valid=True", in.Status.Conditions)
		}
		return nil
	})
	setShares := func(shares ...v1alpha1.ClusterShare) {
		t.Helper()
		framework.Eventually(t, func(ctx context.Context) error {
			in, err := intents.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			in.Status.ScheduledPlacement = "web"
			in.Status.Split = &v1alpha1.SplitStatus{Replicas: 10, Shares: shares}
			_, err = intents.UpdateStatus(ctx, in, metav1.UpdateOptions{})
			return err
		})
	}
	setShares(v1alpha1.ClusterShare{ClusterName: "cluster1", Replicas: 4})
	decision := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: "web-decision-1", Namespace: splitNS,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "web"}}}
	decision, err := clusters.ClusterV1beta1().PlacementDecisions(splitNS).Create(ctx, decision, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	decision.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "cluster1"}, {ClusterName: "cluster2"}}
	if _, err := clusters.ClusterV1beta1().PlacementDecisions(splitNS).UpdateStatus(ctx, decision, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	read := func(ctx context.Context, cluster string) (*splitWork, error) {
		w, err := works.ManifestWorks(cluster).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for _, m := range w.Spec.Workload.Manifests {
			var o struct {
				Kind string `json:"kind"`
				Spec struct {
					Replicas *int32 `json:"replicas"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(m.Raw, &o); err != nil {
				return nil, err
			}
			if o.Kind == "Deployment" {
				if o.Spec.Replicas == nil {
					return nil, fmt.Errorf("the Deployment on %s has no replicas", cluster)
				}
				return &splitWork{uid: w.UID, resourceVersion: w.ResourceVersion, replicas: *o.Spec.Replicas}, nil
			}
		}
		return nil, fmt.Errorf("ManifestWork %s/%s holds no Deployment", cluster, name)
	}
	waitReplicas := func(want map[string]int32) map[string]*splitWork {
		t.Helper()
		got := map[string]*splitWork{}
		framework.Eventually(t, func(ctx context.Context) error {
			for cluster, n := range want {
				w, err := read(ctx, cluster)
				if err != nil {
					return err
				}
				if w.replicas != n {
					return fmt.Errorf("the Deployment on %s has %d replicas, want %d", cluster, w.replicas, n)
				}
				got[cluster] = w
			}
			return nil
		})
		return got
	}
	statusShows := func(want map[string]string) {
		t.Helper()
		framework.Eventually(t, func(ctx context.Context) error {
			in, err := intents.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			got := map[string]string{}
			for _, d := range in.Status.Clusters {
				got[d.ClusterName] = fmt.Sprintf("replicas %s ready %s: %s", count(d.Replicas), count(d.ReadyReplicas), d.Message)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("status.clusters %v, want %v", got, want)
			}
			return nil
		})
	}

	// cluster1 runs its share; cluster2, decided without a share, gets nothing yet.
	first := waitReplicas(map[string]int32{"cluster1": 4})
	statusShows(map[string]string{
		"cluster1": "replicas 4 ready -: waiting for the work agent",
		"cluster2": "replicas - ready -: waiting for the cluster's share of the replicas",
	})
	framework.Consistently(t, 2*time.Second, func(ctx context.Context) error {
		if _, err := works.ManifestWorks("cluster2").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster2 has a ManifestWork without a share (err %v)", err)
		}
		return nil
	})

	// cluster2 gets its share and its ManifestWork; cluster1's is not written again.
	setShares(v1alpha1.ClusterShare{ClusterName: "cluster1", Replicas: 4}, v1alpha1.ClusterShare{ClusterName: "cluster2", Replicas: 6})
	second := waitReplicas(map[string]int32{"cluster1": 4, "cluster2": 6})
	if second["cluster1"].resourceVersion != first["cluster1"].resourceVersion {
		t.Errorf("cluster1's ManifestWork was written again (resourceVersion %s, was %s) although its share did not change",
			second["cluster1"].resourceVersion, first["cluster1"].resourceVersion)
	}

	// The shares change: both ManifestWorks are updated in place, and stay as they are.
	setShares(v1alpha1.ClusterShare{ClusterName: "cluster1", Replicas: 3}, v1alpha1.ClusterShare{ClusterName: "cluster2", Replicas: 7})
	third := waitReplicas(map[string]int32{"cluster1": 3, "cluster2": 7})
	for _, cluster := range []string{"cluster1", "cluster2"} {
		if third[cluster].uid != second[cluster].uid {
			t.Errorf("cluster %s's ManifestWork was replaced (UID %s, was %s), want it updated in place", cluster, third[cluster].uid, second[cluster].uid)
		}
	}
	framework.Consistently(t, 2*time.Second, func(ctx context.Context) error {
		for _, cluster := range []string{"cluster1", "cluster2"} {
			w, err := read(ctx, cluster)
			if err != nil {
				return err
			}
			if w.resourceVersion != third[cluster].resourceVersion {
				return fmt.Errorf("cluster %s's ManifestWork was written again with nothing new (resourceVersion %s, was %s)", cluster, w.resourceVersion, third[cluster].resourceVersion)
			}
		}
		return nil
	})

	// The work agents report the Deployments: the status has the ready replicas.
	for cluster, ready := range map[string]int64{"cluster1": 3, "cluster2": 5} {
		framework.Eventually(t, func(ctx context.Context) error {
			return reportWork(ctx, works, cluster, name, ready)
		})
	}
	statusShows(map[string]string{
		"cluster1": "replicas 3 ready 3: Deployment web: 3/3 ready",
		"cluster2": "replicas 7 ready 5: Deployment web: 5/5 ready",
	})

	if err := intents.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		for _, cluster := range []string{"cluster1", "cluster2"} {
			if _, err := works.ManifestWorks(cluster).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("cluster %s still has the ManifestWork (err %v)", cluster, err)
			}
		}
		if _, err := intents.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the intent is still there (err %v)", err)
		}
		return nil
	})
}

// count prints a replica count of the status, "-" when it is not set.
func count(n *int32) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}
