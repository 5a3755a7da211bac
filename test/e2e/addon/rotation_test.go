package addon

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/typed/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestAgentKeepsReportingAcrossRotations follows cluster1's agent while OCM's registration
// agent rotates its hub credentials (the hub signs for signingDuration only): the Secret gets
// new certificates, the first one expires, and the agent — the same process all along — still
// reports a change made afterwards, without a single request refused for its credentials.
func TestAgentKeepsReportingAcrossRotations(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	const cluster = "cluster1"
	spoke := fleet.Spokes[0]
	agent := e.agents[0]
	secrets := spoke.AdminClient().CoreV1().Secrets(deployagent.Namespace)
	inventories := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(cluster)

	s, err := secrets.Get(ctx, hubKubeconfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := parseCert(t, s.Data["tls.crt"])
	if validity := first.NotAfter.Sub(time.Now()); validity > signingDuration {
		t.Fatalf("the add-on's certificate is valid for another %v, more than the hub signs for (%v)", validity, signingDuration)
	}

	// Follow the Secret until the first certificate has expired, and count what it held.
	seen := map[string]bool{first.SerialNumber.String(): true}
	for time.Now().Before(first.NotAfter.Add(2 * time.Second)) {
		if s, err := secrets.Get(ctx, hubKubeconfigName, metav1.GetOptions{}); err == nil {
			seen[parseCert(t, s.Data["tls.crt"]).SerialNumber.String()] = true
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	if len(seen) < 2 {
		t.Fatalf("the add-on's credentials were not rotated before the first certificate expired at %v", first.NotAfter)
	}
	t.Logf("%d certificates in the add-on's Secret until the first expired", len(seen))

	// A change after the first certificate expired still reaches the hub.
	before, err := requestedCPU(ctx, inventories, cluster)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "after-rotation", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}},
		}}},
	}
	if _, err := spoke.AdminClient().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := before.DeepCopy()
	want.Add(resource.MustParse("3"))
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := requestedCPU(ctx, inventories, cluster)
		if err != nil {
			return err
		}
		if got.Cmp(want) != 0 {
			return fmt.Errorf("cluster1 reports %s cpu requested, want %s", got.String(), want.String())
		}
		return nil
	})

	if exited, err := agent.Exited(); exited {
		t.Fatalf("the agent exited: %v", err)
	}
	for _, line := range strings.Split(agent.LogTail(10000), "\n") {
		if strings.Contains(line, "Unauthorized") || strings.Contains(line, "certificate has expired") {
			t.Errorf("the agent's hub credentials were refused: %s", line)
		}
	}
}

// requestedCPU is the cpu requested on the cluster as its ClusterInventory on the hub says.
func requestedCPU(ctx context.Context, inventories fleetfitv1alpha1.ClusterInventoryInterface, cluster string) (resource.Quantity, error) {
	inv, err := inventories.Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return resource.Quantity{}, err
	}
	for _, r := range inv.Status.Resources {
		if r.Name == corev1.ResourceCPU {
			return r.Requested, nil
		}
	}
	return resource.Quantity{}, fmt.Errorf("%s reports no cpu", cluster)
}
