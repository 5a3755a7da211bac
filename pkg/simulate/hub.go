package simulate

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
)

// Kinds a fleet read from the hub may be limited to.
const (
	KindManagedClusters    = "ManagedClusters"
	KindClusterInventories = "ClusterInventories"
	KindPlacements         = "Placements"
	KindDecisions          = "PlacementDecisions"
	KindIntents            = "HPAIntents"
)

// FromHub lists, across all namespaces, what the hub's scheduler reads — or only the kinds
// named (Kind...), for a command that shows part of it. It needs read access to those
// objects, nothing more.
func FromHub(ctx context.Context, cfg *rest.Config, only ...string) (*Fleet, error) {
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ff, err := fleetfitclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	all := metav1.ListOptions{}
	steps := []struct {
		what string
		list func() error
	}{
		{KindManagedClusters, func() error {
			l, err := clusters.ClusterV1().ManagedClusters().List(ctx, all)
			if err != nil {
				return err
			}
			for i := range l.Items {
				f.Clusters = append(f.Clusters, &l.Items[i])
			}
			return nil
		}},
		{"ManagedClusterSets", func() error {
			l, err := clusters.ClusterV1beta2().ManagedClusterSets().List(ctx, all)
			if err != nil {
				return err
			}
			for i := range l.Items {
				f.Sets = append(f.Sets, &l.Items[i])
			}
			return nil
		}},
		{"ManagedClusterSetBindings", func() error {
			l, err := clusters.ClusterV1beta2().ManagedClusterSetBindings("").List(ctx, all)
			if err != nil {
				return err
			}
			for i := range l.Items {
				f.Bindings = append(f.Bindings, &l.Items[i])
			}
			return nil
		}},
		{"AddOnPlacementScores", func() error {
			l, err := clusters.ClusterV1alpha1().AddOnPlacementScores("").List(ctx, all)
			if err != nil {
				return err
			}
			for i := range l.Items {
				f.Scores = append(f.Scores, &l.Items[i])
			}
			return nil
		}},
		{KindPlacements, func() error {
			l, err := clusters.ClusterV1beta1().Placements("").List(ctx, all)
			if err != nil {
				return err
			}
			for i := range l.Items {
				f.Placements = append(f.Placements, &l.Items[i])
			}
			return nil
		}},
		{KindDecisions, func() error {
			l, err := clusters.ClusterV1beta1().PlacementDecisions("").List(ctx, all)
			if err != nil {
				return err
			}
			for i := range l.Items {
				f.Decisions = append(f.Decisions, &l.Items[i])
			}
			return nil
		}},
		{KindClusterInventories, func() error {
			l, err := ff.FleetfitV1alpha1().ClusterInventories("").List(ctx, all)
			if err != nil {
				return err
			}
			for i := range l.Items {
				f.Inventories = append(f.Inventories, &l.Items[i])
			}
			return nil
		}},
		{KindIntents, func() error {
			l, err := ff.FleetfitV1alpha1().HPAIntents("").List(ctx, all)
			if err != nil {
				return err
			}
			for i := range l.Items {
				f.Intents = append(f.Intents, &l.Items[i])
			}
			return nil
		}},
	}
	for _, s := range steps {
		if len(only) > 0 && !slices.Contains(only, s.what) {
			continue
		}
		if err := s.list(); err != nil {
			return nil, fmt.Errorf("listing %s on the hub %s: %w", s.what, cfg.Host, err)
		}
	}
	return f, nil
}
