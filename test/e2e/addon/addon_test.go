package addon

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// The add-on's name, its label on a ManagedCluster, and the Secret OCM's registration agent
// keeps its hub credentials in, on the managed cluster.
const (
	addonName         = "fleetfit-agent"
	addonLabel        = "feature.open-cluster-management.io/addon-fleetfit-agent"
	hubKubeconfigName = addonName + "-hub-kubeconfig"
)

// TestAgentRunsAsAddOn checks that the agent, installed only through its add-on, runs with
// the identity OCM issued it and nothing else, reports each cluster's inventory, scores and
// ClusterClaims, and that both schedulers place workloads from them: fleetfit-hub an
// HPAIntent from the inventory, OCM's own placement controller Placements written against
// fleetfit's ClusterClaims (a claim selector and CEL over resources.fleetfit.io) and against
// resource-usage-score, as for OCM's resource-usage-collect-addon.
func TestAgentRunsAsAddOn(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	addons := addonclient.NewForConfigOrDie(hub.AdminConfig())
	fleetfit := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1()

	t.Run("the add-on is enabled and available on both clusters", func(t *testing.T) {
		for i := range fleet.Spokes {
			name := framework.SpokeName(i)
			framework.Eventually(t, func(ctx context.Context) error {
				mca, err := addons.AddonV1alpha1().ManagedClusterAddOns(name).Get(ctx, addonName, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if !meta.IsStatusConditionTrue(mca.Status.Conditions, "Available") {
					return fmt.Errorf("%s: ManagedClusterAddOn not Available: %+v", name, mca.Status.Conditions)
				}
				mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if got := mc.Labels[addonLabel]; got != "available" {
					return fmt.Errorf("%s: label %s=%q, want available", name, addonLabel, got)
				}
				return nil
			})
		}
	})

	t.Run("the agent's hub identity is the one OCM issued, bound only in its cluster's namespace", func(t *testing.T) {
		for i, spoke := range fleet.Spokes {
			name := framework.SpokeName(i)
			s, err := spoke.AdminClient().CoreV1().Secrets(deployagent.Namespace).Get(ctx, hubKubeconfigName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cert := parseCert(t, s.Data["tls.crt"])
			prefix := "system:open-cluster-management:cluster:" + name + ":addon:" + addonName + ":agent:"
			if !strings.HasPrefix(cert.Subject.CommonName, prefix) {
				t.Errorf("%s: the add-on's certificate is for %q, want %s…", name, cert.Subject.CommonName, prefix)
			}
			// What binds it on the hub: RoleBindings of fleetfit:agent in its own namespace only,
			// and no ClusterRoleBinding at all.
			rbs, err := hub.AdminClient().RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, rb := range rbs.Items {
				if bindsAddOnOf(rb.Subjects, name) && (rb.Namespace != name || rb.RoleRef.Name != "fleetfit:agent") {
					t.Errorf("%s: RoleBinding %s/%s binds the add-on to %s", name, rb.Namespace, rb.Name, rb.RoleRef.Name)
				}
			}
			crbs, err := hub.AdminClient().RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, crb := range crbs.Items {
				if bindsAddOnOf(crb.Subjects, name) {
					t.Errorf("%s: ClusterRoleBinding %s binds the add-on cluster-wide", name, crb.Name)
				}
			}
		}
	})

	t.Run("the inventory arrives from the add-on's agent", func(t *testing.T) {
		for i := range fleet.Spokes {
			name := framework.SpokeName(i)
			framework.Eventually(t, func(ctx context.Context) error {
				inv, err := fleetfit.ClusterInventories(name).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if got, want := inv.Status.ReadyNodeCount, int32(len(nodes[i])); got != want {
					return fmt.Errorf("%s reports %d Ready nodes, want %d", name, got, want)
				}
				return nil
			})
		}
	})

	t.Run("resource-usage-score is written for each cluster", func(t *testing.T) {
		for i := range fleet.Spokes {
			name := framework.SpokeName(i)
			framework.Eventually(t, func(ctx context.Context) error {
				s, err := clusters.ClusterV1alpha1().AddOnPlacementScores(name).Get(ctx, "resource-usage-score", metav1.GetOptions{})
				if err != nil {
					return err
				}
				var names []string
				for _, sc := range s.Status.Scores {
					names = append(names, sc.Name)
				}
				for _, want := range []string{"cpuClusterAvailable", "cpuNodeAvailable", "memClusterAvailable", "memNodeAvailable", "gpuClusterAvailable", "gpuNodeAvailable"} {
					if !slices.Contains(names, want) {
						return fmt.Errorf("%s: resource-usage-score has %v, not %s", name, names, want)
					}
				}
				return nil
			})
		}
	})

	t.Run("ClusterClaims reach the ManagedCluster through OCM's registration agent and its ClusterProfile", func(t *testing.T) {
		want := []map[string]string{
			{"node-count.fleetfit.io": "2", "gpu-products.fleetfit.io": "A100"},
			{"node-count.fleetfit.io": "2", "gpu-products.fleetfit.io": "T4", "cpu-cpuid.avx512f.node.fleetfit.io": "true"},
		}
		profiles := dynamic.NewForConfigOrDie(hub.AdminConfig()).Resource(schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"})
		for i := range fleet.Spokes {
			name := framework.SpokeName(i)
			framework.Eventually(t, func(ctx context.Context) error {
				mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if err := hasClaims(claimsOf(mc), want[i]); err != nil {
					return fmt.Errorf("%s: ManagedCluster status: %w", name, err)
				}
				if _, ok := claimsOf(mc)["resources.fleetfit.io"]; !ok {
					return fmt.Errorf("%s: no resources.fleetfit.io claim", name)
				}
				p, err := profiles.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("%s: ClusterProfile: %w", name, err)
				}
				props, _, _ := unstructured.NestedSlice(p.Object, "status", "properties")
				got := map[string]string{}
				for _, prop := range props {
					if m, ok := prop.(map[string]any); ok {
						got[fmt.Sprint(m["name"])] = fmt.Sprint(m["value"])
					}
				}
				if err := hasClaims(got, want[i]); err != nil {
					return fmt.Errorf("%s: ClusterProfile properties: %w", name, err)
				}
				return nil
			})
		}
	})

	t.Run("OCM's placement controller selects by fleetfit's claims and scores", func(t *testing.T) {
		placements := map[string]*clusterv1beta1.Placement{
			// An AVX-512 node somewhere in the cluster.
			"avx512": ut.MakePlacement("avx512", ns).PredicateClaims(metav1.LabelSelectorRequirement{
				Key: "cpu-cpuid.avx512f.node.fleetfit.io", Operator: metav1.LabelSelectorOpIn, Values: []string{"true"},
			}).Obj(),
			// An A100, on a node with more than 2 GPUs.
			"a100": ut.MakePlacement("a100", ns).PredicateCEL(
				`managedCluster.status.clusterClaims.exists(c, c.name == "gpu-products.fleetfit.io" && "A100" in c.value.split(","))`,
				`managedCluster.status.clusterClaims.exists(c, c.name == "resources.fleetfit.io" && quantity(c.value.parseJSON().largestNode["nvidia.com/gpu"]).isGreaterThan(quantity("2")))`,
			).Obj(),
			// The cluster with the most GPUs free, as a Placement for resource-usage-collect-addon says it.
			"most-gpus-free": ut.MakePlacement("most-gpus-free", ns).NumberOfClusters(1).Mode(clusterv1beta1.PrioritizerPolicyModeExact).
				AddOn("resource-usage-score", "gpuClusterAvailable", 1).Obj(),
		}
		want := map[string]string{"avx512": "cluster2", "a100": "cluster1", "most-gpus-free": "cluster1"}
		for _, p := range placements {
			if _, err := clusters.ClusterV1beta1().Placements(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for name, cluster := range want {
			framework.Eventually(t, func(ctx context.Context) error {
				got, err := decided(ctx, clusters, name)
				if err != nil {
					return err
				}
				if !slices.Equal(got, []string{cluster}) {
					return fmt.Errorf("placement %s decides %v, want [%s]", name, got, cluster)
				}
				return nil
			})
		}
	})

	t.Run("fleetfit-hub places an HPAIntent from the add-on's inventory", func(t *testing.T) {
		p := ut.MakePlacement("trainer", ns).NumberOfClusters(1).
			Annotation(clusterv1beta1.PlacementDisableAnnotation, "true").Label(placementmode.SchedulerLabel, "").Obj()
		if _, err := clusters.ClusterV1beta1().Placements(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		intent := ut.MakeHPAIntent("trainer", ns).Placement("trainer").Consumer(
			ut.MakeConsumer("trainer").Target("Deployment", "trainer", "trainer").Replicas(1).Requirement(
				ut.MakeResource("gpu", string(gpu)).Limits("3").Obj(),
				ut.MakeResource("cpu", "cpu").Requests("4").Obj(),
			).Obj(),
		).Obj()
		if _, err := fleetfit.HPAIntents(ns).Create(ctx, intent, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			got, err := decided(ctx, clusters, "trainer")
			if err != nil {
				return err
			}
			if !slices.Equal(got, []string{"cluster1"}) {
				return fmt.Errorf("trainer decides %v, want [cluster1], the only cluster with a node of 3 free GPUs", got)
			}
			return nil
		})
	})
	if t.Failed() {
		t.Log(e.cli.String())
	}
}

// decided returns the clusters the PlacementDecisions of placement name list, sorted.
func decided(ctx context.Context, clusters clusterclient.Interface, name string) ([]string, error) {
	list, err := clusters.ClusterV1beta1().PlacementDecisions(ns).List(ctx, metav1.ListOptions{LabelSelector: clusterv1beta1.PlacementLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, errors.New("no PlacementDecision yet")
	}
	var out []string
	for _, d := range list.Items {
		for _, c := range d.Status.Decisions {
			out = append(out, c.ClusterName)
		}
	}
	slices.Sort(out)
	return out, nil
}

// bindsAddOnOf reports whether subjects name cluster's fleetfit-agent add-on, as a user or
// as a group of its own (not the group all clusters' add-on agents share).
func bindsAddOnOf(subjects []rbacv1.Subject, cluster string) bool {
	prefix := "system:open-cluster-management:cluster:" + cluster + ":addon:" + addonName
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool { return strings.HasPrefix(s.Name, prefix) })
}

func claimsOf(mc *clusterv1.ManagedCluster) map[string]string {
	out := map[string]string{}
	for _, c := range mc.Status.ClusterClaims {
		out[c.Name] = c.Value
	}
	return out
}

// hasClaims returns an error naming the first claim of want that got lacks or differs in.
func hasClaims(got, want map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			return fmt.Errorf("claim %s=%q, want %q (all: %v)", k, got[k], want[k], got)
		}
	}
	return nil
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
