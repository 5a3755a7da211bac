package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/test/framework"
)

// applyExamples creates the examples' Placements and HPAIntents on the hub, one example at a
// time: each is decided before the next is applied. Some examples compete for the same nodes
// (fwall and inference both fit only on cluster2's AVX-512 node), and applied at once, which
// one the hub decides first would change from run to run; one by one, the demo always ends
// the same.
func applyExamples(ctx context.Context, f *framework.Fleet, examples []Example) error {
	clusters := clusterclient.NewForConfigOrDie(f.Hub.AdminConfig()).ClusterV1beta1()
	intents := fleetfitclient.NewForConfigOrDie(f.Hub.AdminConfig()).FleetfitV1alpha1()
	for _, e := range examples {
		if _, err := clusters.Placements(Namespace).Create(ctx, e.Placement, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Placement %s: %w", e.Placement.Name, err)
		}
		if _, err := intents.HPAIntents(Namespace).Create(ctx, e.Intent, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating HPAIntent %s: %w", e.Intent.Name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			decided, err := Decided(ctx, f, e.Placement.Name)
			return err == nil && len(decided) > 0, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for Placement %s to be decided: %w", e.Placement.Name, err)
		}
	}
	return nil
}

// Decided returns the clusters the Placement name of the demo's namespace has decided, from
// its PlacementDecisions on the hub.
func Decided(ctx context.Context, f *framework.Fleet, name string) ([]string, error) {
	decisions, err := clusterclient.NewForConfigOrDie(f.Hub.AdminConfig()).ClusterV1beta1().PlacementDecisions(Namespace).List(ctx,
		metav1.ListOptions{LabelSelector: "cluster.open-cluster-management.io/placement=" + name})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range decisions.Items {
		for _, cd := range d.Status.Decisions {
			out = append(out, cd.ClusterName)
		}
	}
	return out, nil
}

// waitDecided waits until every example's Placement has its cluster, and returns them as
// "fwall → cluster2, ...". When it gives up, it says why with the intents' Scheduled message.
func waitDecided(ctx context.Context, f *framework.Fleet, examples []Example, timeout time.Duration) (string, error) {
	intents := fleetfitclient.NewForConfigOrDie(f.Hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(Namespace)
	var summary []string
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		summary, pending = summary[:0], pending[:0]
		for _, e := range examples {
			clusters, err := Decided(ctx, f, e.Placement.Name)
			if err != nil || len(clusters) == 0 {
				pending = append(pending, e.Placement.Name)
				continue
			}
			summary = append(summary, e.Placement.Name+" → "+strings.Join(clusters, ","))
		}
		return len(pending) == 0, nil
	})
	if err == nil {
		return strings.Join(summary, ", "), nil
	}
	var why []string
	for _, name := range pending {
		msg := "no status yet"
		for _, e := range examples {
			if e.Placement.Name != name {
				continue
			}
			if in, err := intents.Get(context.WithoutCancel(ctx), e.Intent.Name, metav1.GetOptions{}); err == nil {
				if c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionScheduled); c != nil {
					msg = c.Message
				}
			}
		}
		why = append(why, fmt.Sprintf("%s: %s", name, msg))
	}
	return "", fmt.Errorf("%w; undecided: %s", err, strings.Join(why, "; "))
}

// waitPodsRunning waits until each cluster runs, Ready, as many pods in the demo's namespace
// as the examples decided there have replicas.
func waitPodsRunning(ctx context.Context, f *framework.Fleet, examples []Example, timeout time.Duration) error {
	want := map[string]int{}
	for _, e := range examples {
		clusters, err := Decided(ctx, f, e.Placement.Name)
		if err != nil {
			return err
		}
		for _, c := range clusters {
			want[c] += int(e.Replicas)
		}
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = nil
		for i, spoke := range f.Spokes {
			name := framework.SpokeName(i)
			pods, err := spoke.AdminClient().CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && podReady(&p) {
					running++
				}
			}
			if running != want[name] || len(pods.Items) != want[name] {
				last = fmt.Errorf("%s runs %d of %d pods (%d exist)", name, running, want[name], len(pods.Items))
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitReportsCurrent waits until every cluster's ClusterInventory on the hub shows the pods
// the cluster runs now — the delivered ones and the machine groups' included — so that what
// the CLI prints next is the fleet as it is: the requested amount of each resource the hub
// has must equal what pkg/inventory computes from the spoke's own Nodes and Pods.
func waitReportsCurrent(ctx context.Context, f *framework.Fleet, timeout time.Duration) error {
	invs := fleetfitclient.NewForConfigOrDie(f.Hub.AdminConfig()).FleetfitV1alpha1()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = nil
		for i, spoke := range f.Spokes {
			name := framework.SpokeName(i)
			want, err := requestedOn(ctx, spoke)
			if err != nil {
				last = err
				return false, nil
			}
			inv, err := invs.ClusterInventories(name).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			got := map[corev1.ResourceName]resource.Quantity{}
			for _, r := range inv.Status.Resources {
				got[r.Name] = r.Requested
			}
			for r, q := range want {
				if g := got[r]; g.Cmp(q) != 0 {
					last = fmt.Errorf("%s reports %s %s requested, its pods request %s", name, g.String(), r, q.String())
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// requestedOn sums the requests of the spoke's pods per resource as the agent does.
func requestedOn(ctx context.Context, spoke *framework.ControlPlane) (map[corev1.ResourceName]resource.Quantity, error) {
	c, err := inventory.NewCluster(inventory.DefaultConfig())
	if err != nil {
		return nil, err
	}
	nodes, err := spoke.AdminClient().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		c.UpsertNode(&nodes.Items[i])
	}
	pods, err := spoke.AdminClient().CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		c.UpsertPod(&pods.Items[i])
	}
	out := map[corev1.ResourceName]resource.Quantity{}
	for _, r := range c.Summarize().Resources {
		out[r.Name] = r.Requested
	}
	return out, nil
}
