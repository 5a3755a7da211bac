package agent

import (
	"context"
	"errors"
	"fmt"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	agentcmd "github.com/fleetfit/fleetfit/pkg/cmd/agent"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestAgentCommand runs the fleetfit-agent command itself, with its flags
// and kubeconfig files, for cluster2, and checks that --feature-prefixes
// decides which labels reach the hub.
func TestAgentCommand(t *testing.T) {
	ctx := t.Context()
	cluster := framework.SpokeName(1)
	spoke := fleet.Spokes[1]
	hubCfg := fleet.Hub.AdminConfig()
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range [][]byte{deployagent.HubRBAC, deployagent.HubClusterRBAC(cluster)} {
		if err := framework.Apply(ctx, hubCfg, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.Apply(ctx, spoke.AdminConfig(), deployagent.SpokeRBAC); err != nil {
		t.Fatal(err)
	}
	node := ut.MakeNode("cmd-0").Resource("cpu", "4").Resource("memory", "16Gi").
		Label("example.com/rack", "r1").Label(gpuProduct, "T4").Obj()
	if err := framework.CreateNode(ctx, spoke.AdminClient(), node); err != nil {
		t.Fatal(err)
	}

	spokeUser, err := spoke.UserConfig("system:serviceaccount:fleetfit-agent:fleetfit-agent", "system:serviceaccounts")
	if err != nil {
		t.Fatal(err)
	}
	hubUser, err := fleet.Hub.UserConfig(deployagent.AgentUser(cluster))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := agentcmd.NewCommand()
	c.SetArgs([]string{
		"--cluster-name", cluster,
		"--kubeconfig", writeKubeconfig(t, dir, "spoke", spokeUser),
		"--hub-kubeconfig", writeKubeconfig(t, dir, "hub", hubUser),
		"--feature-prefixes", "example.com/",
		"--min-interval", minInterval.String(),
	})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.ExecuteContext(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fleetfit-agent: %v", err)
		}
	})

	hub := fleetfitclient.NewForConfigOrDie(hubCfg)
	framework.Eventually(t, func(ctx context.Context) error {
		select {
		case err := <-done:
			done <- err
			return errors.Join(errors.New("fleetfit-agent exited"), err)
		default:
		}
		inv, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, s := range inv.Status.NodeShapes {
			if _, ok := s.Labels["example.com/rack"]; ok {
				if diff := cmp.Diff(map[string]string{"example.com/rack": "r1"}, s.Labels); diff != "" {
					return fmt.Errorf("labels of the shape (-want,+got):\n%s", diff)
				}
				return nil
			}
		}
		return fmt.Errorf("no shape with the rack label yet among %d shapes: %v", len(inv.Status.NodeShapes), shapeLabels(inv.Status.NodeShapes))
	})
}

func shapeLabels(shapes []v1alpha1.NodeShape) []map[string]string {
	out := make([]map[string]string, len(shapes))
	for i, s := range shapes {
		out[i] = maps.Clone(s.Labels)
	}
	return out
}

func writeKubeconfig(t *testing.T, dir, name string, cfg *rest.Config) string {
	t.Helper()
	data, err := framework.Kubeconfig(cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
