package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	agentcmd "github.com/fleetfit/fleetfit/pkg/cmd/agent"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestAgentTakesUpRotatedHubCertificate runs the fleetfit-agent command with a hub kubeconfig
// that names its client certificate files, as OCM's add-on registration mounts it, and
// replaces the files as the kubelet updates a Secret volume (a new directory behind the
// ..data symlink) with a certificate for another identity of the same CA. The first identity
// then loses its access: the agent reports again only if it has taken up the new files.
func TestAgentTakesUpRotatedHubCertificate(t *testing.T) {
	ctx := t.Context()
	const cluster, oldUser = "rotating-cluster", "rotation-old-identity"
	hubCfg := fleet.Hub.AdminConfig()
	hubAdmin := fleet.Hub.AdminClient()
	if _, err := hubAdmin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	if _, err := clusterclient.NewForConfigOrDie(hubCfg).ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := framework.ApplyAgentRBAC(ctx, fleet.Hub, fleet.Spokes[1], cluster); err != nil {
		t.Fatal(err)
	}
	oldBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "rotation-old", Namespace: cluster},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleetfit:agent"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: oldUser}},
	}
	if _, err := hubAdmin.RbacV1().RoleBindings(cluster).Create(ctx, oldBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The Secret volume: tls.crt and tls.key are symlinks through ..data to a directory of
	// the current version; the kubeconfig names them relative to itself.
	dir := t.TempDir()
	writeVersion := func(version, user string) {
		t.Helper()
		cfg, err := fleet.Hub.UserConfig(user)
		if err != nil {
			t.Fatal(err)
		}
		vdir := filepath.Join(dir, version)
		if err := os.Mkdir(vdir, 0o700); err != nil {
			t.Fatal(err)
		}
		kc := clientcmdapi.NewConfig()
		kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{ClientCertificate: "tls.crt", ClientKey: "tls.key"}
		kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent"}
		kc.CurrentContext = "hub"
		raw, err := clientcmd.Write(*kc)
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"tls.crt": cfg.CertData, "tls.key": cfg.KeyData, "kubeconfig": raw} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// Swap ..data at once, as the kubelet does.
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	writeVersion("..v1", oldUser)
	for _, name := range []string{"tls.crt", "tls.key", "kubeconfig"} {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}

	spokeUser, err := fleet.Spokes[1].UserConfig("system:serviceaccount:fleetfit-agent:fleetfit-agent", "system:serviceaccounts")
	if err != nil {
		t.Fatal(err)
	}
	c := agentcmd.NewCommand()
	c.SetArgs([]string{
		"--cluster-name", cluster,
		"--kubeconfig", writeKubeconfig(t, t.TempDir(), "spoke", spokeUser),
		"--hub-kubeconfig", filepath.Join(dir, "kubeconfig"),
		"--min-interval", minInterval.String(),
		"--hub-certificate-check-interval", "1s",
		"--cluster-claims=false",
		"--machine-groups=false",
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
	running := func() error {
		select {
		case err := <-done:
			done <- err
			return errors.Join(errors.New("fleetfit-agent exited"), err)
		default:
			return nil
		}
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if err := running(); err != nil {
			return err
		}
		_, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		return err
	})

	// Rotate, then take the old identity's access away.
	writeVersion("..v2", deployagent.AgentUser(cluster))
	if err := hubAdmin.RbacV1().RoleBindings(cluster).Delete(ctx, oldBinding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A change on the spoke reaches the hub only through the new certificate.
	if err := framework.CreateNode(ctx, fleet.Spokes[1].AdminClient(), ut.MakeNode("rotation-0").Resource("cpu", "2").Resource("memory", "4Gi").Obj()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitForReport(t, fleet.Spokes[1].AdminClient(), hub, cluster)
	if err := running(); err != nil {
		t.Fatal(err)
	}
	t.Logf("reported with the new certificate %v after the rotation", time.Since(start).Round(time.Millisecond))
}
