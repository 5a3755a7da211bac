package apis

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestNumbersBeyondInt32AreRefused: the API server does not check that a number fits an
// int32 field. A Placement with numberOfClusters 4294967296, or an HPAIntent with replicas
// 4294967297, would be stored, and then no Go client could decode any list of its kind — the
// hub's informers would stop, for every namespace. deploy/hub's admission policy (for OCM's
// kinds) and fleetfit's CRD schemas refuse them; sensible values pass, and the typed lists
// keep working.
func TestNumbersBeyondInt32AreRefused(t *testing.T) {
	ns := createNamespace(t, "int32")
	dyn := dynamic.NewForConfigOrDie(fleet.Hub.AdminConfig())
	placements := dyn.Resource(schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placements"}).Namespace(ns)
	intents := dyn.Resource(schema.GroupVersionResource{Group: "fleetfit.io", Version: "v1alpha1", Resource: "hpaintents"}).Namespace(ns)

	placement := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	intent := func(name string, replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "fleetfit.io/v1alpha1", "kind": "HPAIntent",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"placementRef": map[string]any{"name": "p"},
				"consumers": []any{map[string]any{
					"name": "app", "replicas": replicas,
					"target":       map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "app", "container": "app"},
					"requirements": []any{map[string]any{"name": "cpu", "resource": map[string]any{"name": "cpu", "requests": "1"}}},
				}},
			},
		}}
	}
	refused := map[string]struct {
		create      func(ctx context.Context) error
		wantMessage string
	}{
		"numberOfClusters 4294967296": {
			create: func(ctx context.Context) error {
				_, err := placements.Create(ctx, placement("huge", map[string]any{"numberOfClusters": int64(4294967296)}), metav1.CreateOptions{})
				return err
			},
			wantMessage: "spec.numberOfClusters: 4294967296 does not fit an int32: use at most 2147483647",
		},
		"clustersPerDecisionGroup 4294967296": {
			create: func(ctx context.Context) error {
				_, err := placements.Create(ctx, placement("groups", map[string]any{"decisionStrategy": map[string]any{
					"groupStrategy": map[string]any{"clustersPerDecisionGroup": int64(4294967296)}}}), metav1.CreateOptions{})
				return err
			},
			wantMessage: "clustersPerDecisionGroup does not fit an int32",
		},
		"maxSkew 4294967296": {
			create: func(ctx context.Context) error {
				_, err := placements.Create(ctx, placement("skew", map[string]any{"spreadPolicy": map[string]any{
					"spreadConstraints": []any{map[string]any{"topologyKey": "zone", "topologyKeyType": "Label", "maxSkew": int64(4294967296)}}}}), metav1.CreateOptions{})
				return err
			},
			wantMessage: "maxSkew does not fit an int32",
		},
		"HPAIntent replicas 4294967297": {
			create: func(ctx context.Context) error {
				_, err := intents.Create(ctx, intent("huge", 4294967297), metav1.CreateOptions{})
				return err
			},
			wantMessage: "spec.consumers[0].replicas: Invalid value: 4294967297: spec.consumers[0].replicas in body should be less than or equal to 2147483647",
		},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			// The policy takes effect a moment after it is created with the fleet.
			framework.Eventually(t, func(ctx context.Context) error {
				err := tc.create(ctx)
				if err == nil {
					return fmt.Errorf("created; want it refused with %q", tc.wantMessage)
				}
				if !strings.Contains(err.Error(), tc.wantMessage) {
					return fmt.Errorf("refused with %q; want %q", err, tc.wantMessage)
				}
				return nil
			})
		})
	}

	ctx := t.Context()
	if _, err := placements.Create(ctx, placement("fine", map[string]any{"numberOfClusters": int64(3),
		"decisionStrategy": map[string]any{"groupStrategy": map[string]any{"clustersPerDecisionGroup": "25%"}}}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("A sensible Placement was refused: %v", err)
	}
	if _, err := intents.Create(ctx, intent("fine", 3), metav1.CreateOptions{}); err != nil {
		t.Fatalf("A sensible HPAIntent was refused: %v", err)
	}
	ps, err := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).ClusterV1beta1().Placements(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(ps.Items) != 1 {
		t.Errorf("Listing Placements with a Go client: %d items, %v; want the one sensible Placement", len(ps.Items), err)
	}
	ins, err := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(ins.Items) != 1 {
		t.Errorf("Listing HPAIntents with a Go client: %d items, %v; want the one sensible HPAIntent", len(ins.Items), err)
	}
}
