package registration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/test/framework"
)

// clusterLeaseName is the Lease OCM's registration agent renews in its
// cluster's namespace on the hub.
const clusterLeaseName = "managed-cluster-lease"

// TestJoin checks that every spoke is a ManagedCluster accepted by the hub,
// Joined and Available, in cluster set "default", with a namespace, and that
// its agent keeps renewing its lease.
func TestJoin(t *testing.T) {
	joined(t)
	ctx := t.Context()
	clusters := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).ClusterV1().ManagedClusters()
	hub := fleet.Hub.AdminClient()
	for i := range fleet.Spokes {
		name := framework.SpokeName(i)
		mc, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !mc.Spec.HubAcceptsClient {
			t.Errorf("%s: hubAcceptsClient is false", name)
		}
		for _, c := range []string{clusterv1.ManagedClusterConditionHubAccepted, clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionAvailable} {
			if !meta.IsStatusConditionTrue(mc.Status.Conditions, c) {
				t.Errorf("%s: condition %s is not True: %v", name, c, meta.FindStatusCondition(mc.Status.Conditions, c))
			}
		}
		if got := mc.Labels["cluster.open-cluster-management.io/clusterset"]; got != "default" {
			t.Errorf("%s: cluster set label %q, want default", name, got)
		}
		if mc.Status.Version.Kubernetes == "" {
			t.Errorf("%s: the agent reported no Kubernetes version", name)
		}
		if _, err := hub.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: cluster namespace: %v", name, err)
		}
	}

	// The agents renew their leases every leaseDurationSeconds (5s here):
	// each renewTime moves forward.
	first := map[string]time.Time{}
	for i := range fleet.Spokes {
		name := framework.SpokeName(i)
		lease, err := hub.CoordinationV1().Leases(name).Get(ctx, clusterLeaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if lease.Spec.RenewTime == nil {
			t.Fatalf("%s: lease has no renewTime", name)
		}
		first[name] = lease.Spec.RenewTime.Time
	}
	framework.Eventually(t, func(ctx context.Context) error {
		for name, renewed := range first {
			lease, err := hub.CoordinationV1().Leases(name).Get(ctx, clusterLeaseName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !lease.Spec.RenewTime.After(renewed) {
				return fmt.Errorf("%s: lease not renewed since %v", name, renewed)
			}
		}
		return nil
	})
}

// TestAcceptedCSR checks that each cluster's first CSR, made with the
// bootstrap identity, was approved by Accept and signed by the hub's CSR
// signer, and that the certificate the agent keeps names the cluster's agent
// in the cluster's groups and is valid for as long as the signer allows.
func TestAcceptedCSR(t *testing.T) {
	j := joined(t)
	ctx := t.Context()
	for i, agent := range j.Agents {
		name := framework.SpokeName(i)
		csrs, err := fleet.Hub.AdminClient().CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
			LabelSelector: "open-cluster-management.io/cluster-name=" + name,
		})
		if err != nil {
			t.Fatal(err)
		}
		accepted := 0
		for _, csr := range csrs.Items {
			for _, c := range csr.Status.Conditions {
				if c.Type == "Approved" && c.Reason == "AcceptedByTestFleet" && len(csr.Status.Certificate) > 0 &&
					csr.Spec.Username == "system:serviceaccount:open-cluster-management:agent-registration-bootstrap" {
					accepted++
				}
			}
		}
		if accepted != 1 {
			t.Errorf("%s: %d bootstrap CSRs accepted and signed, want 1 (of %d)", name, accepted, len(csrs.Items))
		}

		cfg, err := clientcmd.BuildConfigFromFlags("", agent.HubKubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		certPEM, err := os.ReadFile(cfg.CertFile)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(certPEM)
		if block == nil {
			t.Fatalf("%s: no certificate in %s", name, cfg.CertFile)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		prefix := "system:open-cluster-management:" + name + ":"
		if !strings.HasPrefix(cert.Subject.CommonName, prefix) {
			t.Errorf("%s: agent certificate names %q, want %s<agent id>", name, cert.Subject.CommonName, prefix)
		}
		if !slices.Contains(cert.Subject.Organization, "system:open-cluster-management:"+name) {
			t.Errorf("%s: agent certificate groups %v lack the cluster's", name, cert.Subject.Organization)
		}
		// The hub's signer caps validity at HubOptions.SigningDuration, 24h by default.
		if left := time.Until(cert.NotAfter); left < 23*time.Hour || left > 24*time.Hour {
			t.Errorf("%s: agent certificate valid for another %v, want at most the signer's 24h", name, left)
		}
	}
}

// TestAgentHubIdentity checks what the hub identity a registration agent
// obtained may do: the ManifestWorks of its own cluster's namespace, not
// those of another cluster.
func TestAgentHubIdentity(t *testing.T) {
	j := joined(t)
	ctx := t.Context()
	cfg, err := clientcmd.BuildConfigFromFlags("", j.Agents[0].HubKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	works := workclient.NewForConfigOrDie(cfg).WorkV1()
	if _, err := works.ManifestWorks(framework.SpokeName(0)).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing ManifestWorks of its own cluster: %v", err)
	}
	if _, err := works.ManifestWorks(framework.SpokeName(1)).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing ManifestWorks of another cluster: got %v, want Forbidden", err)
	}
}

// TestWorkAgentWithRegisteredIdentity checks that the work agents, which run
// with the hub identity their registration agents obtained, apply a
// ManifestWork to their spoke and report it applied.
func TestWorkAgentWithRegisteredIdentity(t *testing.T) {
	joined(t)
	ctx := t.Context()
	cluster := framework.SpokeName(1)
	works := workclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).WorkV1().ManifestWorks(cluster)
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "registered-work"},
		Data:       map[string]string{"via": "registration"},
	}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "registered-work"},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
			Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: cm}}},
		}},
	}
	if _, err := works.Create(ctx, work, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := fleet.Spokes[1].AdminClient().CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Data["via"] != "registration" {
			return fmt.Errorf("config map data %v", got.Data)
		}
		w, err := works.Get(ctx, work.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) {
			return fmt.Errorf("work not reported Applied: %v", w.Status.Conditions)
		}
		return nil
	})
}
