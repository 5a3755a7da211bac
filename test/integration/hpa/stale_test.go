package hpa

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestStaleInventoryKeepsDecisions: silence is not absence. A placement decides cluster1; then
// a hub for which every inventory is stale (as after a long agent outage) takes over and the
// intent changes, so the placement is scheduled again: it keeps cluster1, while a new
// placement gets nothing and its intent says why.
func TestStaleInventoryKeepsDecisions(t *testing.T) {
	e := newEnv(t, "stale")
	e.addNodes(0, node("stale-node", "4", "16Gi"))
	needs := func(cpu string) v1alpha1.ResourceRequirement {
		return utiltesting.MakeResource("cpu", "cpu").Requests(cpu).Obj()
	}
	e.createIntent(oneConsumer("running", 1, needs("1")))
	e.createPlacement(onClusters("running", cluster(0)))
	e.waitInventories()
	stop := framework.RunHub(t, fleet.Hub.AdminConfig())
	e.waitDecided("running", cluster(0))
	stop()

	// Every inventory is older than a nanosecond: none may take anything new.
	framework.RunHub(t, fleet.Hub.AdminConfig(), "--inventory-stale-after=1ns", "--startup-grace=0s")
	e.updateIntent("running", func(in *v1alpha1.HPAIntent) {
		two := resource.MustParse("2")
		in.Spec.Consumers[0].Requirements[0].Resource.Requests = &two
	})
	e.waitIntent("running", func(in *v1alpha1.HPAIntent) error {
		if c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionScheduled); c == nil || c.ObservedGeneration != in.Generation || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Scheduled condition %+v, want True for generation %d", c, in.Generation)
		}
		return nil
	})
	e.createIntent(oneConsumer("new", 1, needs("1")))
	e.createPlacement(onClusters("new", cluster(0)))
	in := e.waitIntent("new", hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "NoFeasibleCluster"))
	if msg := scheduledMessage(in); !strings.Contains(msg, "not chosen anew until the fleetfit agent reports again") {
		t.Errorf("Scheduled message of the new intent %q, want it to say the inventory is stale", msg)
	}
	framework.Consistently(t, framework.PollInterval*5, func(ctx context.Context) error {
		if err := e.decides("running", cluster(0))(ctx); err != nil {
			return err
		}
		return e.decides("new")(ctx)
	})
}
