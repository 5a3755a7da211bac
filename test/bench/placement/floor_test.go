package placement

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	hubcmd "github.com/fleetfit/fleetfit/pkg/cmd/hub"
	"github.com/spf13/pflag"
)

// writeFloor does, for every placement, the writes fleetfit does for a new placement with
// fleetfit-hub's concurrency (--workers) and client rate (--kube-api-qps, --kube-api-burst), and nothing else: create its
// PlacementDecision, write its decision list (the clusters the placement selects), and write
// the Placement's status.
func writeFloor(ctx context.Context, b *testing.B, admin *rest.Config, w *satisfiedWatch, sz size) {
	o := hubcmd.NewOptions()
	fs := pflag.NewFlagSet("fleetfit-hub", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(hubArgs()); err != nil {
		b.Error(err)
		return
	}
	cfg := rest.CopyConfig(admin)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	client := clusterclient.NewForConfigOrDie(cfg)
	var byRegion [5][]string
	var untainted [5][]string
	for i := range sz.clusters {
		name, r := fmt.Sprintf("cluster-%05d", i), i%len(regions)
		byRegion[r] = append(byRegion[r], name)
		if i%20 != 0 {
			untainted[r] = append(untainted[r], name)
		}
	}
	jobs := make(chan *clusterv1beta1.Placement)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Go(func() {
			for p := range jobs {
				i, _ := strconv.Atoi(strings.TrimPrefix(p.Name, "p-"))
				pool := untainted[i%len(regions)]
				if i%4 == 0 {
					pool = byRegion[i%len(regions)]
				}
				if err := floorWrites(ctx, client, p, pool[:min(len(pool), 1+i%10)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	list := w.lister()
	slices.SortFunc(list, func(a, b *clusterv1beta1.Placement) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range list {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
}

func floorWrites(ctx context.Context, client clusterclient.Interface, p *clusterv1beta1.Placement, clusters []string) error {
	name := p.Name + "-decision-1"
	decisions := client.ClusterV1beta1().PlacementDecisions(p.Namespace)
	_, err := decisions.Create(ctx, &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: p.Namespace,
		Labels: map[string]string{
			clusterv1beta1.PlacementLabel: p.Name, clusterv1beta1.DecisionGroupIndexLabel: "0", clusterv1beta1.DecisionGroupNameLabel: "",
		},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p, clusterv1beta1.SchemeGroupVersion.WithKind("Placement"))},
	}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	list := make([]clusterv1beta1.ClusterDecision, len(clusters))
	for i, c := range clusters {
		list[i] = clusterv1beta1.ClusterDecision{ClusterName: c}
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"decisions": list}})
	if err != nil {
		return err
	}
	if _, err := decisions.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	now := metav1.Now()
	status := clusterv1beta1.PlacementStatus{
		NumberOfSelectedClusters: int32(len(clusters)),
		DecisionGroups:           []clusterv1beta1.DecisionGroupStatus{{DecisionGroupIndex: 0, Decisions: []string{name}, ClustersCount: int32(len(clusters))}},
		Conditions: []metav1.Condition{
			{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionTrue, Reason: "AllDecisionsScheduled", Message: "All cluster decisions scheduled", LastTransitionTime: now},
			{Type: clusterv1beta1.PlacementConditionMisconfigured, Status: metav1.ConditionFalse, Reason: "Succeedconfigured", Message: "Placement configurations check pass", LastTransitionTime: now},
		},
	}
	if patch, err = json.Marshal(map[string]any{"status": status}); err != nil {
		return err
	}
	_, err = client.ClusterV1beta1().Placements(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
