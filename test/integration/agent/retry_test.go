package agent

import (
	"context"
	"errors"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestAgentRetriesUntilAllowed starts an agent whose hub identity has no
// permissions yet: it must keep running and report once its RBAC is bound.
func TestAgentRetriesUntilAllowed(t *testing.T) {
	ctx := t.Context()
	const cluster = "late-cluster"
	hubCfg := fleet.Hub.AdminConfig()
	if _, err := fleet.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	if _, err := clusterclient.NewForConfigOrDie(hubCfg).ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spoke := fleet.Spokes[1]
	if err := framework.Apply(ctx, spoke.AdminConfig(), deployagent.SpokeRBAC); err != nil {
		t.Fatal(err)
	}
	if err := framework.CreateNode(ctx, spoke.AdminClient(), ut.MakeNode("late-0").Resource("cpu", "4").Resource("memory", "16Gi").Obj()); err != nil {
		t.Fatal(err)
	}

	log := startAgentAs(t, spoke, cluster)
	framework.Eventually(t, func(context.Context) error {
		if !strings.Contains(log.String(), "forbidden") {
			return errors.New("the agent has not been refused by the hub yet")
		}
		return nil
	})

	// Bound only now: every write so far was Forbidden.
	if err := framework.Apply(ctx, hubCfg, deployagent.HubRBAC); err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, hubCfg, deployagent.HubClusterRBAC(cluster)); err != nil {
		t.Fatal(err)
	}
	// The spoke is shared with other tests, so the report is compared with
	// what pkg/inventory computes from the spoke as it is.
	inv := waitForReport(t, spoke.AdminClient(), fleetfitclient.NewForConfigOrDie(hubCfg), cluster)
	if inv.Status.NodeCount < 1 {
		t.Errorf("nodeCount %d, want at least late-0", inv.Status.NodeCount)
	}
}
