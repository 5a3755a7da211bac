package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/test/framework"
)

// startExtraSpoke starts, for one test, a managed cluster of the fleet's hub besides cluster1
// and cluster2: a control plane with the spoke's CRDs, kube-controller-manager,
// kube-scheduler and kwok, the given kwok nodes, the cluster's namespace on the hub and the
// agent's RBAC on both sides. It returns the control plane, stopped when the test ends, and
// the pod runtime's processes, whose logs a failing test shows. The test starts the agents.
func startExtraSpoke(t *testing.T, name string, nodes []*corev1.Node) (*framework.ControlPlane, []*framework.Component) {
	t.Helper()
	ctx := t.Context()
	hub := fleet.Hub
	spoke, err := framework.StartControlPlane(ctx, name, framework.Options{ServiceAccountAdmission: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(spoke.Stop)
	crds, err := manifests.SpokeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if err := install.ApplyCRDs(ctx, spoke.AdminConfig(), crds); err != nil {
		t.Fatal(err)
	}
	runtime, err := framework.StartPodRuntime(ctx, spoke)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if _, err := framework.CreateKwokNode(ctx, spoke.AdminClient(), n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := framework.ApplyAgentRBAC(ctx, hub, spoke, name); err != nil {
		t.Fatal(err)
	}
	return spoke, []*framework.Component{runtime.ControllerManager, runtime.Scheduler, runtime.Kwok}
}

// waitSchedulable waits until kwok has made the nodes Ready and the node lifecycle controller
// has lifted their not-ready taints.
func waitSchedulable(t *testing.T, spoke *framework.ControlPlane, nodes []*corev1.Node) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		for _, want := range nodes {
			n, err := spoke.AdminClient().CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := framework.NodeSchedulable(n); err != nil {
				return err
			}
		}
		return nil
	})
}
