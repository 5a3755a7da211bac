package framework

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// The hub side of OCM's registration, as `clusteradm init` sets it up.
const (
	// HubBootstrapNamespace holds the hub's bootstrap ServiceAccount.
	HubBootstrapNamespace = "open-cluster-management"
	// HubBootstrapServiceAccount is the identity of bootstrap kubeconfigs.
	HubBootstrapServiceAccount = "agent-registration-bootstrap"
	// bootstrapTokenLifetime is how long a bootstrap token is valid, as
	// clusteradm init asks for it: long enough for a join, not for a cluster's life.
	bootstrapTokenLifetime = time.Hour
	// defaultSigningDuration is the longest validity of the client certificates the
	// hub signs when HubOptions.SigningDuration is zero.
	defaultSigningDuration = 24 * time.Hour
)

// bootstrapRBAC is the bootstrap ServiceAccount and the ClusterRole it is
// bound to.
//
//go:embed ocm-bootstrap.yaml
var bootstrapRBAC []byte

// HubOptions tune the hub side of OCM's registration.
type HubOptions struct {
	// SigningDuration is the longest validity of the client certificates the
	// hub signs (kube-controller-manager's --cluster-signing-duration), for
	// registration and add-on agents alike: a short one makes them rotate
	// their credentials during a test. Zero means 24h.
	SigningDuration time.Duration
	// ClusterProfile turns on OCM's ClusterProfile feature gate in the
	// registration controller, which then keeps a SIG-Multicluster
	// ClusterProfile per ManagedCluster. The ClusterProfile CRD must be on the
	// hub before InitHub.
	ClusterProfile bool
}

// HubRegistration is OCM's registration on a hub: the processes InitHub
// starts. They stop with the hub, or with Stop.
type HubRegistration struct {
	// Controller is OCM's registration hub controller.
	Controller *Component
	// Signer is kube-controller-manager running only the CSR signing
	// controller, which signs kube-apiserver-client CSRs with the hub's
	// client CA once they are approved.
	Signer *Component
	// AddOnManager is OCM's add-on manager.
	AddOnManager *Component
}

// InitHub prepares hub for clusters to join as `clusteradm init` does: it
// applies the bootstrap ServiceAccount and its RBAC (HubBootstrapServiceAccount,
// ClusterRole open-cluster-management:bootstrap), and starts, concurrently,
// OCM's registration controller, the hub's CSR signer and OCM's add-on
// manager, waiting until each serves its health endpoint. The hub needs OCM's
// hub CRDs, which StartFleet installs. On error, whatever was started is
// stopped again.
func InitHub(ctx context.Context, hub *ControlPlane, opts HubOptions) (*HubRegistration, error) {
	if err := Apply(ctx, hub.AdminConfig(), bootstrapRBAC); err != nil {
		return nil, fmt.Errorf("applying the bootstrap identity on %s: %w", hub.Name, err)
	}
	r := &HubRegistration{}
	var (
		wg                      sync.WaitGroup
		ctrlErr, signErr, adErr error
	)
	wg.Go(func() { r.Controller, ctrlErr = StartOCMRegistrationController(ctx, hub, opts.ClusterProfile) })
	wg.Go(func() { r.Signer, signErr = StartHubCSRSigner(ctx, hub, opts.SigningDuration) })
	wg.Go(func() { r.AddOnManager, adErr = StartOCMAddOnManager(ctx, hub) })
	wg.Wait()
	if err := errors.Join(ctrlErr, signErr, adErr); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// Stop stops the processes.
func (r *HubRegistration) Stop() {
	for _, c := range r.components() {
		c.Stop()
	}
}

// LogTails returns the end of each process's log, to explain a failure.
func (r *HubRegistration) LogTails(lines int) string {
	return logTails(lines, r.components()...)
}

func (r *HubRegistration) components() []*Component {
	var cs []*Component
	for _, c := range []*Component{r.Controller, r.Signer, r.AddOnManager} {
		if c != nil {
			cs = append(cs, c)
		}
	}
	return cs
}

// StartOCMRegistrationController runs OCM's registration hub controller
// against hub as its admin:
//
//	registration controller --kubeconfig=<hub> [--feature-gates=ClusterProfile=true] \
//	    --namespace=default --disable-leader-election --listen=127.0.0.1:<port>
//
// It creates the namespace, RBAC and cluster-set membership of each accepted
// ManagedCluster, approves the renewal CSRs of accepted clusters' agents,
// turns a ManagedCluster's condition to Unknown when its agent's lease
// expires, and labels clusters with the add-ons they have. Its default
// feature gates create the ManagedClusterSets "default" and "global".
func StartOCMRegistrationController(ctx context.Context, hub *ControlPlane, clusterProfile bool) (*Component, error) {
	return startOCM(ctx, "registration", "OCM registration controller", hub, []*ControlPlane{hub}, func(dir string) ([]string, error) {
		kubeconfig, err := writeKubeconfig(hub, dir, "hub.kubeconfig")
		if err != nil {
			return nil, err
		}
		args := []string{"controller", "--kubeconfig=" + kubeconfig}
		if clusterProfile {
			args = append(args, "--feature-gates=ClusterProfile=true")
		}
		return args, nil
	})
}

// StartOCMAddOnManager runs OCM's add-on manager against hub as its admin:
//
//	addon manager --kubeconfig=<hub> \
//	    --namespace=default --disable-leader-election --listen=127.0.0.1:<port>
//
// It renders the ManifestWorks of AddOnTemplate add-ons enabled by a
// ManagedClusterAddOn, grants their hub permissions, and approves their
// agents' CSRs.
func StartOCMAddOnManager(ctx context.Context, hub *ControlPlane) (*Component, error) {
	return startOCM(ctx, "addon", "OCM add-on manager", hub, []*ControlPlane{hub}, func(dir string) ([]string, error) {
		kubeconfig, err := writeKubeconfig(hub, dir, "hub.kubeconfig")
		if err != nil {
			return nil, err
		}
		return []string{"manager", "--kubeconfig=" + kubeconfig}, nil
	})
}

// StartHubCSRSigner runs kube-controller-manager against hub with only the
// CSR signing controller, signing kubernetes.io/kube-apiserver-client CSRs
// with the CA the hub's API server trusts for clients, for at most
// signingDuration (24h when zero):
//
//	kube-controller-manager --kubeconfig=<hub> --leader-elect=false \
//	    --controllers=certificatesigningrequest-signing-controller \
//	    --cluster-signing-kube-apiserver-client-cert-file=<ca.crt> \
//	    --cluster-signing-kube-apiserver-client-key-file=<ca.key> \
//	    --cluster-signing-duration=<signingDuration> \
//	    --bind-address=127.0.0.1 --secure-port=<port>
//
// A CSR's spec.expirationSeconds, when shorter, wins, but the API server
// refuses less than ten minutes there: a shorter signingDuration is how a
// test gets certificates that expire within it. It signs only what is
// approved: Accept approves registration CSRs, OCM's registration controller
// their renewals and OCM's add-on manager add-on CSRs.
func StartHubCSRSigner(ctx context.Context, hub *ControlPlane, signingDuration time.Duration) (*Component, error) {
	if signingDuration <= 0 {
		signingDuration = defaultSigningDuration
	}
	return startComponent(ctx, componentSpec{
		binary: "kube-controller-manager",
		name:   "hub CSR signer",
		home:   hub,
		planes: []*ControlPlane{hub},
		args: func(dir, addr string) ([]string, error) {
			kubeconfig, err := writeKubeconfig(hub, dir, "kubeconfig")
			if err != nil {
				return nil, err
			}
			// The CA's key is written only into the signer's own directory.
			certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
			if err := hub.ca.Config.WriteCertConfigFile(certFile, keyFile); err != nil {
				return nil, fmt.Errorf("writing the signing CA: %w", err)
			}
			return append(kubeArgs(kubeconfig, dir, addr),
				"--controllers=certificatesigningrequest-signing-controller",
				"--cluster-signing-kube-apiserver-client-cert-file="+certFile,
				"--cluster-signing-kube-apiserver-client-key-file="+keyFile,
				"--cluster-signing-duration="+signingDuration.String(),
			), nil
		},
		ready: healthz("https://%s/healthz"),
	})
}

// BootstrapKubeconfig returns a kubeconfig for hub's bootstrap identity as
// `clusteradm join` writes it from what `clusteradm init` prints: a token of
// HubBootstrapServiceAccount valid for an hour, the hub's address and the CA
// that signs its serving certificate. InitHub must have run.
func BootstrapKubeconfig(ctx context.Context, hub *ControlPlane) ([]byte, error) {
	tr, err := hub.AdminClient().CoreV1().ServiceAccounts(HubBootstrapNamespace).CreateToken(ctx, HubBootstrapServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(int64(bootstrapTokenLifetime / time.Second)),
		}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token of %s/%s: %w", HubBootstrapNamespace, HubBootstrapServiceAccount, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: hub.URL(), CertificateAuthorityData: hub.caPEM}
	kc.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap", Namespace: "default"}
	kc.CurrentContext = "bootstrap"
	return clientcmd.Write(*kc)
}

// logTails returns the end of each component's log under its name.
func logTails(lines int, cs ...*Component) string {
	var s string
	for _, c := range cs {
		s += "--- " + c.Name() + " ---\n" + c.LogTail(lines) + "\n"
	}
	return s
}
