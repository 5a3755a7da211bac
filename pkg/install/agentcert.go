package install

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"os"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
)

// AgentCertificateTimeout bounds how long an approved certificate request
// may wait for the hub's signer.
const AgentCertificateTimeout = time.Minute

// AgentKubeconfig is a hub kubeconfig issued for an agent.
type AgentKubeconfig struct {
	// Raw is the kubeconfig: the hub's server and CA, the agent's client
	// certificate and key, all inline.
	Raw []byte
	// Request names the CertificateSigningRequest it came from.
	Request string
	// NotAfter is when the certificate expires.
	NotAfter time.Time
}

// IssueOptions tune IssueAgentKubeconfig.
type IssueOptions struct {
	// Validity, when not zero, asks for a shorter certificate lifetime than
	// the signer's default.
	Validity time.Duration
	// Server is the hub's address in the kubeconfig, as the agent reaches
	// it; empty means the one the request is made to.
	Server string
}

// IssueAgentKubeconfig gets the agent of cluster a client certificate for
// the hub of cfg, whose identity is deploy/agent's AgentUser(cluster): it
// makes a key, asks the hub's kubernetes.io/kube-apiserver-client signer
// (the one OCM's own registration uses) for a certificate, approves the
// request with cfg's rights and waits for the signature, at most
// AgentCertificateTimeout. The key never leaves this process but in the
// returned kubeconfig. The request stays on the hub, where
// kube-controller-manager removes it once it is an hour old.
func IssueAgentKubeconfig(ctx context.Context, cfg *rest.Config, cluster string, opts IssueOptions) (*AgentKubeconfig, error) {
	if err := ValidateClusterName(cluster); err != nil {
		return nil, err
	}
	user := deployagent.AgentUser(cluster)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user}}, key)
	if err != nil {
		return nil, fmt.Errorf("making a certificate request for %s: %w", user, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "fleetfit-agent-" + cluster + "-",
			Labels:       map[string]string{"app.kubernetes.io/part-of": "fleetfit", "fleetfit.io/cluster": cluster},
		},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
	if opts.Validity > 0 {
		seconds := int32(opts.Validity / time.Second)
		csr.Spec.ExpirationSeconds = &seconds
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	csrs := kube.CertificatesV1().CertificateSigningRequests()
	csr, err = csrs.Create(ctx, csr, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("requesting a certificate for %s on the hub at %s: %w", user, cfg.Host, err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:    certificatesv1.CertificateApproved,
		Status:  corev1.ConditionTrue,
		Reason:  "FleetfitInstallAgentAccess",
		Message: "approved by fleetfit install agent-access for the agent of " + cluster,
	})
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return nil, fmt.Errorf("approving CertificateSigningRequest %s: %w", csr.Name, err)
	}

	var certPEM []byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, AgentCertificateTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status == corev1.ConditionTrue {
				return false, fmt.Errorf("CertificateSigningRequest %s %s: %s %s", csr.Name, c.Type, c.Reason, c.Message)
			}
		}
		certPEM = got.Status.Certificate
		return len(certPEM) > 0, nil
	})
	if wait.Interrupted(err) {
		return nil, fmt.Errorf("CertificateSigningRequest %s is approved but was not signed within %v: does the hub sign %s certificates (kube-controller-manager's --cluster-signing-cert-file)?",
			csr.Name, AgentCertificateTimeout, certificatesv1.KubeAPIServerClientSignerName)
	}
	if err != nil {
		return nil, err
	}
	cert, err := leafCertificate(certPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the certificate of CertificateSigningRequest %s: %w", csr.Name, err)
	}
	if cert.Subject.CommonName != user {
		return nil, fmt.Errorf("CertificateSigningRequest %s was signed for %q, not %q", csr.Name, cert.Subject.CommonName, user)
	}

	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the hub's CA: %w", err)
		}
	}
	server := opts.Server
	if server == "" {
		server = cfg.Host
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: ca,
		TLSServerName:            cfg.ServerName,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: user}
	kc.CurrentContext = "hub"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, err
	}
	return &AgentKubeconfig{Raw: raw, Request: csr.Name, NotAfter: cert.NotAfter}, nil
}
