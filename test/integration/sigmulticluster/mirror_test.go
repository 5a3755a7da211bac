// Package sigmulticluster runs fleetfit-hub in-process, as its ServiceAccount with deploy/hub's
// RBAC, on a real hub with kube-controller-manager's garbage collector, and checks the mirror
// of its PlacementDecisions into the SIG-Multicluster PlacementDecision API: nothing while the
// CRD is absent, then the mirror with OCM's names, labels, clusterProfileRefs and owner once
// the CRD is installed (after the hub started), kept up to date, and gone with its Placement.
package sigmulticluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	sigv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	sigclient "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned"

	deployhub "github.com/fleetfit/fleetfit/deploy/hub"
	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 0, framework.Options{}, &fleet)
}

// env is the test's namespace, cluster set, clusters and clients.
type env struct {
	t        *testing.T
	ns       string
	clusters clusterclient.Interface
	sig      sigclient.Interface
}

func newEnv(t *testing.T, ns string, clusters ...string) *env {
	t.Helper()
	ctx := t.Context()
	admin := fleet.Hub.AdminConfig()
	e := &env{t: t, ns: ns, clusters: clusterclient.NewForConfigOrDie(admin), sig: sigclient.NewForConfigOrDie(admin)}
	if _, err := fleet.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, utiltesting.MakeExclusiveClusterSet(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, utiltesting.MakeClusterSetBinding(ns, ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range clusters {
		c := utiltesting.MakeCluster(name).ClusterSet(ns).Label("tier", name).Obj()
		if _, err := e.clusters.ClusterV1().ManagedClusters().Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// runHub runs fleetfit-hub as its ServiceAccount, with deploy/hub's RBAC applied.
func runHub(t *testing.T, args ...string) {
	t.Helper()
	if err := framework.Apply(t.Context(), fleet.Hub.AdminConfig(), deployhub.RBAC); err != nil {
		t.Fatal(err)
	}
	hubUser, err := fleet.Hub.UserConfig(deployhub.ServiceAccountUser, "system:serviceaccounts", "system:serviceaccounts:"+deployhub.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	framework.RunHub(t, hubUser, append([]string{"--workers=2"}, args...)...)
}

// waitDecision waits until the placement's first OCM PlacementDecision decides exactly the
// clusters, and returns it.
func (e *env) waitDecision(t *testing.T, placement string, clusters ...string) *clusterv1beta1.PlacementDecision {
	t.Helper()
	var out *clusterv1beta1.PlacementDecision
	framework.Eventually(t, func(ctx context.Context) error {
		d, err := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns).Get(ctx, placement+"-decision-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var got []string
		for _, cd := range d.Status.Decisions {
			got = append(got, cd.ClusterName)
		}
		if !cmp.Equal(got, clusters) {
			return fmt.Errorf("%s decides %v, want %v", d.Name, got, clusters)
		}
		out = d
		return nil
	})
	return out
}

// wantMirror is the SIG PlacementDecision OCM's controller writes for d.
func (e *env) wantMirror(d *clusterv1beta1.PlacementDecision, placement string, clusters ...string) *sigv1alpha1.PlacementDecision {
	decisions := []sigv1alpha1.ClusterDecision{}
	for _, c := range clusters {
		decisions = append(decisions, sigv1alpha1.ClusterDecision{ClusterProfileRef: sigv1alpha1.ClusterProfileReference{Name: c, Namespace: e.ns}})
	}
	yes := true
	return &sigv1alpha1.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: e.ns, Name: d.Name,
			Labels: map[string]string{
				"x-k8s.io/cluster-manager":             "open-cluster-management",
				"multicluster.x-k8s.io/placement-key":  placement,
				"multicluster.x-k8s.io/decision-key":   placement,
				"multicluster.x-k8s.io/decision-index": "0",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "cluster.open-cluster-management.io/v1beta1", Kind: "PlacementDecision",
				Name: d.Name, UID: d.UID, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Decisions:     decisions,
		SchedulerName: "open-cluster-management",
	}
}

// waitMirror waits until the SIG PlacementDecision named like want holds want's labels,
// owners, decisions and scheduler name.
func (e *env) waitMirror(t *testing.T, want *sigv1alpha1.PlacementDecision) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := e.sig.ApisV1alpha1().PlacementDecisions(e.ns).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		trimmed := &sigv1alpha1.PlacementDecision{
			ObjectMeta: metav1.ObjectMeta{Namespace: got.Namespace, Name: got.Name, Labels: got.Labels, OwnerReferences: got.OwnerReferences},
			Decisions:  got.Decisions, SchedulerName: got.SchedulerName,
		}
		if diff := cmp.Diff(want, trimmed); diff != "" {
			return fmt.Errorf("SIG PlacementDecision %s (-want,+got):\n%s", want.Name, diff)
		}
		return nil
	})
}

func installSIGCRDs(t *testing.T) {
	t.Helper()
	crds, err := manifests.SIGMulticlusterCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if err := install.ApplyCRDs(t.Context(), fleet.Hub.AdminConfig(), crds); err != nil {
		t.Fatal(err)
	}
}

// TestMirror installs the SIG CRDs only once the hub runs; it comes first in this file, before
// TestNoMirrorBesideOCM installs them for good.
func TestMirror(t *testing.T) {
	ctx := t.Context()
	gc, err := framework.StartKubeControllerManager(ctx, fleet.Hub, "garbage-collector-controller")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gc.Stop)
	e := newEnv(t, "mirror", "mirror-a", "mirror-b")
	runHub(t)

	p := utiltesting.MakePlacement("web", e.ns).Obj()
	if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := e.waitDecision(t, "web", "mirror-a", "mirror-b")

	// Without the CRD the hub schedules as usual and has nothing to mirror into.
	apiext := apiextensionsclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
	if _, err := apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "placementdecisions.multicluster.x-k8s.io", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the SIG PlacementDecision CRD is there before the test installs it: %v", err)
	}

	// Installed while the hub runs: the existing decision is mirrored.
	installSIGCRDs(t)
	e.waitMirror(t, e.wantMirror(d, "web", "mirror-a", "mirror-b"))

	t.Run("a changed decision is mirrored", func(t *testing.T) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.Predicates = utiltesting.MakePlacement("web", e.ns).PredicateLabels(map[string]string{"tier": "mirror-b"}).Obj().Spec.Predicates
			_, err = e.clusters.ClusterV1beta1().Placements(e.ns).Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		d := e.waitDecision(t, "web", "mirror-b")
		e.waitMirror(t, e.wantMirror(d, "web", "mirror-b"))
	})

	t.Run("a mirror changed by hand is written back, its other labels kept", func(t *testing.T) {
		mirrors := e.sig.ApisV1alpha1().PlacementDecisions(e.ns)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			m, err := mirrors.Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			m.Decisions = append(m.Decisions, sigv1alpha1.ClusterDecision{ClusterProfileRef: sigv1alpha1.ClusterProfileReference{Name: "intruder"}})
			m.Labels["team"] = "web"
			_, err = mirrors.Update(ctx, m, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		want := e.wantMirror(d, "web", "mirror-b")
		want.Labels["team"] = "web"
		e.waitMirror(t, want)
	})

	t.Run("a mirror deleted by hand comes back", func(t *testing.T) {
		mirrors := e.sig.ApisV1alpha1().PlacementDecisions(e.ns)
		old, err := mirrors.Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := mirrors.Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			m, err := mirrors.Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if m.UID == old.UID {
				return fmt.Errorf("%s is still the deleted object", d.Name)
			}
			return nil
		})
		e.waitMirror(t, e.wantMirror(d, "web", "mirror-b"))
	})

	t.Run("the CRD removed and installed again", func(t *testing.T) {
		p := utiltesting.MakePlacement("api", e.ns).Obj()
		if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		api := e.waitDecision(t, "api", "mirror-a", "mirror-b")
		e.waitMirror(t, e.wantMirror(api, "api", "mirror-a", "mirror-b"))
		crds := apiext.ApiextensionsV1().CustomResourceDefinitions()
		if err := crds.Delete(ctx, "placementdecisions.multicluster.x-k8s.io", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := crds.Get(ctx, "placementdecisions.multicluster.x-k8s.io", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("the CRD is still there (%v)", err)
		})
		// Its objects went with it; once it is back, the hub writes them again.
		installSIGCRDs(t)
		e.waitMirror(t, e.wantMirror(api, "api", "mirror-a", "mirror-b"))
		e.waitMirror(t, e.wantMirror(d, "web", "mirror-b"))
		if err := e.clusters.ClusterV1beta1().Placements(e.ns).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deleted with the Placement", func(t *testing.T) {
		if err := e.clusters.ClusterV1beta1().Placements(e.ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			list, err := e.sig.ApisV1alpha1().PlacementDecisions(e.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(list.Items) > 0 {
				return fmt.Errorf("%d SIG PlacementDecisions left, the first %s", len(list.Items), list.Items[0].Name)
			}
			return nil
		})
	})
}

// TestNoMirrorBesideOCM: with --placements annotated, OCM's placement controller runs and
// writes the mirror of every decision itself (with its feature on); fleetfit-hub writes none,
// even for the decisions it makes, and neither does it with --sig-placement-decisions=false.
func TestNoMirrorBesideOCM(t *testing.T) {
	ctx := t.Context()
	installSIGCRDs(t)
	for _, tc := range []struct {
		ns        string
		args      []string
		placement *utiltesting.PlacementWrapper
	}{{
		ns:   "annotated",
		args: []string{"--placements", "annotated"},
		placement: utiltesting.MakePlacement("web", "annotated").
			Annotation(clusterv1beta1.PlacementDisableAnnotation, "true").Label(placementmode.SchedulerLabel, ""),
	}, {
		ns:        "turned-off",
		args:      []string{"--sig-placement-decisions=false"},
		placement: utiltesting.MakePlacement("web", "turned-off"),
	}} {
		t.Run(tc.ns, func(t *testing.T) {
			e := newEnv(t, tc.ns, tc.ns+"-a")
			runHub(t, tc.args...)
			if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(ctx, tc.placement.Obj(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.waitDecision(t, "web", tc.ns+"-a")
			// The decision exists, so a mirror would have been written by now or soon after.
			framework.Consistently(t, 3*time.Second, func(ctx context.Context) error {
				list, err := e.sig.ApisV1alpha1().PlacementDecisions(e.ns).List(ctx, metav1.ListOptions{
					LabelSelector: labels.SelectorFromSet(labels.Set{sigv1alpha1.LabelClusterManagerKey: "open-cluster-management"}).String(),
				})
				if err != nil {
					return err
				}
				if len(list.Items) > 0 {
					return fmt.Errorf("fleetfit-hub mirrored %s", list.Items[0].Name)
				}
				return nil
			})
		})
	}
}
