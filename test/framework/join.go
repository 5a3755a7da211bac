package framework

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// The spoke side of OCM's registration, as a klusterlet lays it out.
const (
	// AgentNamespace is the spoke namespace of the registration agent's
	// Secrets: BootstrapKubeconfigSecret and HubKubeconfigSecret.
	AgentNamespace = "open-cluster-management-agent"
	// BootstrapKubeconfigSecret holds, under the key "kubeconfig", the
	// bootstrap kubeconfig `clusteradm join` writes. The registration agent
	// exits when it changes, to bootstrap again.
	BootstrapKubeconfigSecret = "bootstrap-hub-kubeconfig"
	// HubKubeconfigSecret is where the registration agent keeps the cluster's
	// hub credentials (keys kubeconfig, tls.crt, tls.key, cluster-name,
	// agent-name); it also writes them as files into its directory.
	HubKubeconfigSecret = "hub-kubeconfig-secret"
	// clusterNameLabel marks the CSRs of a managed cluster's agents.
	clusterNameLabel = "open-cluster-management.io/cluster-name"
	// defaultClusterSetLabel puts a cluster in a cluster set; OCM's admission
	// webhook sets it to "default" on ManagedClusters created without it.
	defaultClusterSetLabel = "cluster.open-cluster-management.io/clusterset"
	// Defaults that make a join take seconds rather than minutes.
	defaultHealthCheckPeriod    = 10 * time.Second
	defaultLeaseDurationSeconds = 5
)

// RegistrationAgentOptions tune a registration agent.
type RegistrationAgentOptions struct {
	// ClusterHealthCheckPeriod is how often the agent checks its cluster and
	// updates the ManagedCluster's status without a change to trigger it
	// (--cluster-healthcheck-period). Zero means 10s (OCM's default is 1m).
	ClusterHealthCheckPeriod time.Duration
	// ReservedClusterClaimSuffixes are suffixes of custom ClusterClaim names
	// that are always reported, beyond MaxCustomClusterClaims
	// (--reserved-cluster-claim-suffixes).
	ReservedClusterClaimSuffixes []string
	// MaxCustomClusterClaims caps the ClusterClaims reported other than OCM's
	// own and the reserved ones (--max-custom-cluster-claims); zero means
	// OCM's default, 20.
	MaxCustomClusterClaims int
	// ClientCertExpirationSeconds is the validity the agent asks for its
	// client certificates (--client-cert-expiration-seconds); OCM refuses
	// less than 3600. Zero leaves it to the signer: see
	// HubOptions.SigningDuration for shorter ones.
	ClientCertExpirationSeconds int32
}

// RegistrationAgent is OCM's registration agent of one managed cluster,
// running as a process against the hub and the spoke.
type RegistrationAgent struct {
	*Component
	// ClusterName is the managed cluster's name.
	ClusterName string
}

// HubKubeconfig is the path of the kubeconfig the agent keeps for its
// cluster's hub identity (its client certificate in tls.crt and tls.key
// beside it). It exists once the cluster is accepted and its first CSR
// signed, and is rewritten when the agent rotates its certificate.
func (a *RegistrationAgent) HubKubeconfig() string {
	return filepath.Join(a.Dir(), "hub-kubeconfig", "kubeconfig")
}

// StartOCMRegistrationAgent runs OCM's registration agent for the managed
// cluster clusterName, as the klusterlet that `clusteradm join` installs runs
// it: the spoke gets namespace AgentNamespace with bootstrapKubeconfig in
// Secret BootstrapKubeconfigSecret, and the agent runs as the spoke's admin
// with
//
//	registration agent --spoke-cluster-name=<clusterName> \
//	    --bootstrap-kubeconfig=<bootstrapKubeconfig> --kubeconfig=<spoke> \
//	    --hub-kubeconfig-dir=<dir>/hub-kubeconfig --cluster-healthcheck-period=10s \
//	    [--reserved-cluster-claim-suffixes=...] [--max-custom-cluster-claims=N] \
//	    [--client-cert-expiration-seconds=N] \
//	    --namespace=default --disable-leader-election --listen=127.0.0.1:<port>
//
// It returns once the agent serves its health endpoint; the agent then
// creates the ManagedCluster and a CSR on the hub and waits to be accepted
// (see Accept). It stops with the hub or the spoke, or with Stop.
func StartOCMRegistrationAgent(ctx context.Context, hub, spoke *ControlPlane, clusterName string, bootstrapKubeconfig []byte, opts RegistrationAgentOptions) (*RegistrationAgent, error) {
	if err := writeBootstrapSecret(ctx, spoke, bootstrapKubeconfig); err != nil {
		return nil, err
	}
	period := opts.ClusterHealthCheckPeriod
	if period <= 0 {
		period = defaultHealthCheckPeriod
	}
	c, err := startOCM(ctx, "registration", "OCM registration agent", spoke, []*ControlPlane{hub, spoke}, func(dir string) ([]string, error) {
		spokeKubeconfig, err := writeKubeconfig(spoke, dir, "spoke.kubeconfig")
		if err != nil {
			return nil, err
		}
		bootstrap := filepath.Join(dir, "bootstrap-kubeconfig")
		if err := os.WriteFile(bootstrap, bootstrapKubeconfig, 0o600); err != nil {
			return nil, err
		}
		args := []string{
			"agent",
			"--spoke-cluster-name=" + clusterName,
			"--bootstrap-kubeconfig=" + bootstrap,
			"--kubeconfig=" + spokeKubeconfig,
			"--hub-kubeconfig-dir=" + filepath.Join(dir, "hub-kubeconfig"),
			"--cluster-healthcheck-period=" + period.String(),
		}
		if len(opts.ReservedClusterClaimSuffixes) > 0 {
			args = append(args, "--reserved-cluster-claim-suffixes="+strings.Join(opts.ReservedClusterClaimSuffixes, ","))
		}
		if opts.MaxCustomClusterClaims > 0 {
			args = append(args, "--max-custom-cluster-claims="+strconv.Itoa(opts.MaxCustomClusterClaims))
		}
		if opts.ClientCertExpirationSeconds > 0 {
			args = append(args, "--client-cert-expiration-seconds="+strconv.Itoa(int(opts.ClientCertExpirationSeconds)))
		}
		return args, nil
	})
	if err != nil {
		return nil, err
	}
	return &RegistrationAgent{Component: c, ClusterName: clusterName}, nil
}

// writeBootstrapSecret creates AgentNamespace on spoke and writes
// bootstrapKubeconfig into BootstrapKubeconfigSecret there.
func writeBootstrapSecret(ctx context.Context, spoke *ControlPlane, bootstrapKubeconfig []byte) error {
	c := spoke.AdminClient().CoreV1()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AgentNamespace}}
	if _, err := c.Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s on %s: %w", AgentNamespace, spoke.Name, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: AgentNamespace, Name: BootstrapKubeconfigSecret},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"kubeconfig": bootstrapKubeconfig},
	}
	_, err := c.Secrets(AgentNamespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = c.Secrets(AgentNamespace).Update(ctx, secret, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing secret %s/%s on %s: %w", AgentNamespace, BootstrapKubeconfigSecret, spoke.Name, err)
	}
	return nil
}

// Accept does on hub what `clusteradm accept --clusters <cluster> --wait`
// does: it waits until the cluster's registration agent has created its
// ManagedCluster and a CSR, approves every pending CSR of the cluster made
// by the bootstrap identity (labelled with the cluster's name, asked for
// with the bootstrap ServiceAccount's token or a bootstrap token), and sets
// spec.hubAcceptsClient. It returns once at least one such CSR is approved
// and the cluster accepted, or with an error when StartTimeout passes.
func Accept(ctx context.Context, hub *ControlPlane, cluster string) error {
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig()).ClusterV1().ManagedClusters()
	var last error
	err := wait.PollUntilContextTimeout(ctx, PollInterval, StartTimeout, true, func(ctx context.Context) (bool, error) {
		if _, err := clusters.Get(ctx, cluster, metav1.GetOptions{}); err != nil {
			last = fmt.Errorf("getting ManagedCluster %s: %w", cluster, err)
			return false, nil
		}
		approved, err := approveBootstrapCSRs(ctx, hub, cluster)
		if err != nil || !approved {
			last = err
			if last == nil {
				last = fmt.Errorf("no CSR of cluster %s to approve yet", cluster)
			}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("accepting cluster %s: %w (last: %v)", cluster, err, last)
	}
	patch := []byte(`{"spec":{"hubAcceptsClient":true}}`)
	if _, err := clusters.Patch(ctx, cluster, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("accepting cluster %s: %w", cluster, err)
	}
	return nil
}

// approveBootstrapCSRs approves the cluster's CSRs made by a bootstrap
// identity that are neither approved nor denied yet, and reports whether the
// cluster has an approved one now. Like clusteradm, it approves nothing when
// the CSRs name more than one requester (two agents claiming one name).
func approveBootstrapCSRs(ctx context.Context, hub *ControlPlane, cluster string) (bool, error) {
	csrs := hub.AdminClient().CertificatesV1().CertificateSigningRequests()
	list, err := csrs.List(ctx, metav1.ListOptions{LabelSelector: clusterNameLabel + "=" + cluster})
	if err != nil {
		return false, fmt.Errorf("listing CSRs of cluster %s: %w", cluster, err)
	}
	var pending []certificatesv1.CertificateSigningRequest
	requesters := map[string]bool{}
	approved := false
	for _, csr := range list.Items {
		if !fromBootstrapIdentity(csr.Spec) {
			continue
		}
		cn, err := csrCommonName(csr.Spec.Request)
		if err != nil {
			continue
		}
		requesters[cn] = true
		switch {
		case csrHasCondition(csr, certificatesv1.CertificateDenied):
		case csrHasCondition(csr, certificatesv1.CertificateApproved):
			approved = true
		default:
			pending = append(pending, csr)
		}
	}
	if len(requesters) > 1 {
		return false, fmt.Errorf("CSRs of cluster %s come from %d requesters; approving none", cluster, len(requesters))
	}
	var errs []error
	for _, csr := range pending {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:           certificatesv1.CertificateApproved,
			Status:         corev1.ConditionTrue,
			Reason:         "AcceptedByTestFleet",
			Message:        "The managed cluster was accepted by the test fleet's hub admin.",
			LastUpdateTime: metav1.Now(),
		})
		if _, err := csrs.UpdateApproval(ctx, csr.Name, &csr, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("approving CSR %s: %w", csr.Name, err))
			continue
		}
		approved = true
	}
	return approved, errors.Join(errs...)
}

// fromBootstrapIdentity reports whether a CSR was made with the hub's
// bootstrap ServiceAccount or a bootstrap token, as clusteradm checks.
func fromBootstrapIdentity(spec certificatesv1.CertificateSigningRequestSpec) bool {
	saUser := "system:serviceaccount:" + HubBootstrapNamespace + ":" + HubBootstrapServiceAccount
	if spec.Username != saUser && !strings.HasPrefix(spec.Username, "system:bootstrap:") {
		return false
	}
	for _, g := range spec.Groups {
		if g == "system:serviceaccounts:"+HubBootstrapNamespace || g == "system:bootstrappers:managedcluster" {
			return true
		}
	}
	return false
}

func csrCommonName(request []byte) (string, error) {
	block, _ := pem.Decode(request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return "", errors.New("not a PEM certificate request")
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return "", err
	}
	return cr.Subject.CommonName, nil
}

func csrHasCondition(csr certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

// WaitClusterJoined waits until the ManagedCluster cluster on hub is Joined
// and Available (conditions ManagedClusterJoined and
// ManagedClusterConditionAvailable True, which its registration agent sets),
// or StartTimeout passes.
func WaitClusterJoined(ctx context.Context, hub *ControlPlane, cluster string) error {
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig()).ClusterV1().ManagedClusters()
	var last error
	err := wait.PollUntilContextTimeout(ctx, PollInterval, StartTimeout, true, func(ctx context.Context) (bool, error) {
		mc, err := clusters.Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		for _, t := range []string{clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionAvailable} {
			if !meta.IsStatusConditionTrue(mc.Status.Conditions, t) {
				last = fmt.Errorf("ManagedCluster %s is not %s: %v", cluster, t, meta.FindStatusCondition(mc.Status.Conditions, t))
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for cluster %s to join: %w (last: %v)", cluster, err, last)
	}
	return nil
}
