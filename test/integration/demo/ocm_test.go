package demo

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"strconv"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/agent/clusterclaims"
	"github.com/fleetfit/fleetfit/test/demo"
)

// ocmFieldManager is the field manager of OCM's registration controller and agent (one
// binary): the only writer of a ManagedCluster's status when the clusters joined as OCM's
// users join them.
const ocmFieldManager = "registration"

// wantGPUProducts is the claim gpu-products.fleetfit.io of each cluster once the machine
// groups' nodes joined.
var wantGPUProducts = map[string]string{
	"cluster1": "A100,NVIDIA-GeForce-RTX-3090",
	"cluster2": "NVIDIA-GeForce-RTX-3090,Tesla-T4",
	"cluster3": "",
}

// checkJoined checks that the cluster joined through OCM's registration: its ManagedCluster's
// status is written by OCM alone, with the spoke's version and allocatable summed from the
// spoke's nodes by OCM's agent, and Available.
func checkJoined(t *testing.T, hub *rest.Config, spoke kubernetes.Interface, cluster string) {
	t.Helper()
	ctx := t.Context()
	mc, err := clusterclient.NewForConfigOrDie(hub).ClusterV1().ManagedClusters().Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ManagedCluster %s: %v", cluster, err)
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("%s: condition Available is %v, want True", cluster, c)
	}
	for _, f := range mc.ManagedFields {
		if f.Subresource == "status" && f.Manager != ocmFieldManager {
			t.Errorf("%s: status written by %q (%s), want OCM's %q only", cluster, f.Manager, f.Operation, ocmFieldManager)
		}
	}
	version, err := spoke.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if got := mc.Status.Version.Kubernetes; got != version.GitVersion {
		t.Errorf("%s: status.version.kubernetes = %q, want the spoke's %q", cluster, got, version.GitVersion)
	}
	nodes, err := spoke.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, demo.ResourceGPU, demo.ResourceQAT} {
		var want resource.Quantity
		for _, n := range nodes.Items {
			want.Add(n.Status.Allocatable[name])
		}
		got := mc.Status.Allocatable[clusterv1.ResourceName(name)]
		if got.Cmp(want) != 0 {
			t.Errorf("%s: status.allocatable[%s] = %s, want %s summed from the spoke's %d nodes", cluster, name, got.String(), want.String(), len(nodes.Items))
		}
	}
}

// checkAddOn checks that fleetfit-agent runs as the enabled add-on: its ManagedClusterAddOn
// is Available and registered for the add-on's hub user, the hub kubeconfig OCM's
// registration agent wrote on the spoke holds a certificate of that user, and on the hub that
// user — and no identity of `fleetfit install agent` — may write the cluster's
// ClusterInventory.
func checkAddOn(t *testing.T, hub *rest.Config, spoke kubernetes.Interface, cluster string) {
	t.Helper()
	ctx := t.Context()
	mca, err := addonclient.NewForConfigOrDie(hub).AddonV1alpha1().ManagedClusterAddOns(cluster).Get(ctx, deployaddon.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: the add-on is not enabled: %v", cluster, err)
	}
	if c := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("%s: ManagedClusterAddOn %s is not Available: %v", cluster, deployaddon.Name, c)
	}
	wantPrefix := "system:open-cluster-management:cluster:" + cluster + ":addon:" + deployaddon.Name + ":agent:"
	if len(mca.Status.Registrations) != 1 || !strings.HasPrefix(mca.Status.Registrations[0].Subject.User, wantPrefix) {
		t.Fatalf("%s: registrations %+v, want one for a user %s...", cluster, mca.Status.Registrations, wantPrefix)
	}
	user := mca.Status.Registrations[0].Subject.User

	secret, err := spoke.CoreV1().Secrets(deployagent.Namespace).Get(ctx, deployaddon.HubKubeconfigSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: the add-on's hub kubeconfig: %v", cluster, err)
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatalf("%s: Secret %s has no PEM certificate in tls.crt", cluster, deployaddon.HubKubeconfigSecret)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != user {
		t.Errorf("%s: the agent's hub certificate is for %q, want %q", cluster, cert.Subject.CommonName, user)
	}

	review := func(user string, groups []string) bool {
		t.Helper()
		sar, err := kubernetes.NewForConfigOrDie(hub).AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: cluster, Verb: "update", Group: "fleetfit.io", Resource: "clusterinventories", Subresource: "status", Name: cluster,
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	if !review(cert.Subject.CommonName, cert.Subject.Organization) {
		t.Errorf("%s: the add-on's hub user %s may not write the cluster's ClusterInventory", cluster, user)
	}
	if review(deployagent.AgentUser(cluster), nil) {
		t.Errorf("%s: %s, the hub user of `fleetfit install agent`, may write the ClusterInventory: the demo should grant it nothing", cluster, deployagent.AgentUser(cluster))
	}
}

// checkClaims checks the hardware facts fleetfit-agent keeps as ClusterClaims, as OCM's
// registration agent reports them in the ManagedCluster's status.
func checkClaims(t *testing.T, hub *rest.Config, spoke kubernetes.Interface, cluster string) {
	t.Helper()
	ctx := t.Context()
	mc, err := clusterclient.NewForConfigOrDie(hub).ClusterV1().ManagedClusters().Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]string{}
	for _, c := range mc.Status.ClusterClaims {
		claims[c.Name] = c.Value
	}
	nodes, err := spoke.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := claims[clusterclaims.NodeCountClaim], len(nodes.Items); got != strconv.Itoa(want) {
		t.Errorf("%s: claim %s = %q, want %d", cluster, clusterclaims.NodeCountClaim, got, want)
	}
	if got, want := claims[clusterclaims.GPUProductsClaim], wantGPUProducts[cluster]; got != want {
		t.Errorf("%s: claim %s = %q, want %q", cluster, clusterclaims.GPUProductsClaim, got, want)
	}
	var facts struct {
		Allocatable map[string]resource.Quantity `json:"allocatable"`
	}
	if err := json.Unmarshal([]byte(claims[clusterclaims.ResourcesClaim]), &facts); err != nil {
		t.Fatalf("%s: claim %s = %q: %v", cluster, clusterclaims.ResourcesClaim, claims[clusterclaims.ResourcesClaim], err)
	}
	var cpu resource.Quantity
	for _, n := range nodes.Items {
		cpu.Add(n.Status.Allocatable[corev1.ResourceCPU])
	}
	if got := facts.Allocatable["cpu"]; got.Cmp(cpu) != 0 {
		t.Errorf("%s: claim %s says %s cpu allocatable, the nodes have %s", cluster, clusterclaims.ResourcesClaim, got.String(), cpu.String())
	}
}
