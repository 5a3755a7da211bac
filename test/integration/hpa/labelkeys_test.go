package hpa

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestLabelKeysHandshake: a requirement on a node label outside the agents' default prefixes
// is unknown on a cluster until its agent reports the label: In and NotIn alike decide
// nothing there, and explain and the intent say "cluster X does not report label K yet".
// Once the hub asks the agents for the key (spec.labelKeys) and they report it
// (status.reportedLabels), In selects the cluster whose node has the value, and NotIn does
// not match the node that has it.
//
// The hub asks for at most v1alpha1.MaxLabelKeys keys: an intent with that many keys sorted
// before the test's key keeps it from being asked for at first, so that the unknown state
// does not depend on how fast the agents answer; deleting that intent lets the hub ask.
func TestLabelKeysHandshake(t *testing.T) {
	const key = "zz-labelkeys.example.com/accel"
	e := newEnv(t, "label-keys")
	e.addNodes(0, node("lk-a100", "8", "32Gi").Label(key, "a100"))
	e.addNodes(1, node("lk-t4", "8", "32Gi").Label(key, "t4"))

	// Filler: MaxLabelKeys keys that sort before key, in consumers of at most 32 requirements.
	filler := utiltesting.MakeHPAIntent("filler", "").Placement("filler")
	for c := range v1alpha1.MaxLabelKeys / 32 {
		cw := utiltesting.MakeConsumer(fmt.Sprintf("c%d", c)).Target("Deployment", fmt.Sprintf("d%d", c), "main")
		for r := range 32 {
			k := fmt.Sprintf("aa-labelkeys.example.com/k%03d", c*32+r)
			cw.Requirement(utiltesting.MakeFeature(fmt.Sprintf("f%d", r), k).Operator(corev1.NodeSelectorOpExists).Obj())
		}
		filler.Consumer(cw.Obj())
	}
	e.createIntent(filler)

	in := utiltesting.MakeFeature("accel", key).Values("a100").Obj()
	notIn := utiltesting.MakeFeature("accel", key).Operator(corev1.NodeSelectorOpNotIn).Values("a100").Obj()
	e.createIntent(oneConsumer("lk-in", 1, in))
	e.createPlacement(onClusters("lk-in", cluster(0), cluster(1)))
	e.createIntent(oneConsumer("lk-notin", 1, notIn))
	e.createPlacement(onClusters("lk-notin", cluster(0), cluster(1)))
	e.startHub(true)

	// The hub asks for the filler's keys, not the test's.
	e.waitLabelKeys(cluster(0), func(keys []string) error {
		if len(keys) != v1alpha1.MaxLabelKeys || slices.Contains(keys, key) {
			return fmt.Errorf("spec.labelKeys has %d keys (with %s: %v), want the %d filler keys", len(keys), key, slices.Contains(keys, key), v1alpha1.MaxLabelKeys)
		}
		return nil
	})
	unknown := func(i int) string { return fmt.Sprintf("cluster %s does not report label %s yet", cluster(i), key) }
	for _, name := range []string{"lk-in", "lk-notin"} {
		got := e.waitIntent(name, hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "NoFeasibleCluster"))
		for i := range 2 {
			if want := fmt.Sprintf("%s: consumer %s/app: %s", cluster(i), name, unknown(i)); !strings.Contains(scheduledMessage(got), want) {
				t.Errorf("%s: Scheduled message %q, want it to say %q", name, scheduledMessage(got), want)
			}
		}
		e.waitDecided(name)
	}
	e.explain("lk-notin", rejectedBy(cluster(0), nil, unknown(0)))
	e.explain("lk-notin", rejectedBy(cluster(1), nil, unknown(1)))

	// Without the filler, the hub asks for the key, the agents report it, and the requirements
	// mean what they say.
	if err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Delete(t.Context(), "filler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		e.waitLabelKeys(cluster(i), func(keys []string) error {
			if !slices.Contains(keys, key) {
				return fmt.Errorf("spec.labelKeys %v lacks %s", keys, key)
			}
			return nil
		})
		e.waitReported(cluster(i), key)
	}
	e.waitDecided("lk-in", cluster(0))
	e.waitDecided("lk-notin", cluster(1))
	e.explain("lk-notin", rejectedBy(cluster(0), []string{cluster(1)}, fmt.Sprintf("no schedulable node with %s NotIn [a100]", key)))
	e.explain("lk-in", rejectedBy(cluster(1), []string{cluster(0)}, fmt.Sprintf("no schedulable node with %s In [a100]", key)))
}

// waitLabelKeys waits until the spec.labelKeys of cluster's inventory pass check.
func (e *env) waitLabelKeys(cluster string, check func([]string) error) {
	e.t.Helper()
	e.eventually(func(ctx context.Context) error {
		inv, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := check(inv.Spec.LabelKeys); err != nil {
			return fmt.Errorf("%s: %w", cluster, err)
		}
		return nil
	})
}

// waitReported waits until cluster's agent reports the node labels with key, and checks that
// its report kept the hub's spec.
func (e *env) waitReported(cluster, key string) {
	e.t.Helper()
	e.eventually(func(ctx context.Context) error {
		inv, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if r := inv.Status.ReportedLabels; r == nil || !r.Reports(key) {
			return fmt.Errorf("%s reports labels %+v, not %s", cluster, inv.Status.ReportedLabels, key)
		}
		if !slices.Contains(inv.Spec.LabelKeys, key) {
			return fmt.Errorf("%s: the agent's report lost the hub's spec.labelKeys %v", cluster, inv.Spec.LabelKeys)
		}
		for _, s := range inv.Status.NodeShapes {
			if _, ok := s.Labels[key]; ok {
				return nil
			}
		}
		return fmt.Errorf("%s reports %s but no shape has it", cluster, key)
	})
}
