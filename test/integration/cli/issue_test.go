package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestInstallAgentIssuesIdentity has agent-access, and install agent with
// only the hub's admin credentials, issue the agent its hub identity through
// the hub's CertificateSigningRequest API. The test control planes run no
// signer; the test plays kube-controller-manager's, with a CA of its own, so
// it checks the request, approval and kubeconfig, not that the hub trusts the
// certificate.
func TestInstallAgentIssuesIdentity(t *testing.T) {
	ctx := t.Context()
	fleet, err := framework.StartFleet(ctx, 1, framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Stop)
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	cluster := framework.SpokeName(0)
	hubAdmin := kubeconfigFile(t, "hub-admin", fleet.Hub.AdminConfig())
	spokeAdmin := kubeconfigFile(t, cluster, fleet.Spokes[0].AdminConfig())
	hubKube := fleet.Hub.AdminClient()
	signed := signClientCSRs(t, hubKube)

	agentKubeconfig := t.TempDir() + "/agent-hub.kubeconfig"
	accessArgs := []string{"install", "agent-access", "--kubeconfig", hubAdmin, "--cluster-name", cluster,
		"--agent-kubeconfig", agentKubeconfig, "--certificate-validity", "1h"}
	out, stderr, err := runFleetfit(t, accessArgs...)
	if err != nil {
		t.Fatal(err)
	}
	csrLine := regexp.MustCompile(`^certificatesigningrequest\.certificates\.k8s\.io/(fleetfit-agent-` + cluster + `-\w+) approved$`)
	got := lines(out)
	if diff := cmp.Diff(agentAccessRefs(cluster), refsOf(got[:len(got)-1])); diff != "" {
		t.Errorf("applied objects (-want,+got):\n%s", diff)
	}
	m := csrLine.FindStringSubmatch(got[len(got)-1])
	if m == nil {
		t.Fatalf("last line %q does not report an approved CertificateSigningRequest", got[len(got)-1])
	}
	if want := "fleetfit install agent --cluster-name " + cluster + " --hub-kubeconfig " + agentKubeconfig; !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say to run %q next:\n%s", want, stderr)
	}

	csr, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(ctx, m[1], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type request struct {
		Signer     string
		Usages     []certificatesv1.KeyUsage
		Expiration int32
		Requester  string
		CommonName string
		Approved   bool
	}
	gotReq := request{Signer: csr.Spec.SignerName, Usages: csr.Spec.Usages, Requester: csr.Spec.Username}
	if csr.Spec.ExpirationSeconds != nil {
		gotReq.Expiration = *csr.Spec.ExpirationSeconds
	}
	if block, _ := pem.Decode(csr.Spec.Request); block != nil {
		if req, err := x509.ParseCertificateRequest(block.Bytes); err == nil {
			gotReq.CommonName = req.Subject.CommonName
		}
	}
	for _, c := range csr.Status.Conditions {
		gotReq.Approved = gotReq.Approved || c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue
	}
	if diff := cmp.Diff(request{
		Signer: certificatesv1.KubeAPIServerClientSignerName, Usages: []certificatesv1.KeyUsage{"digital signature", "client auth"},
		Expiration: 3600, Requester: "fleetfit-admin", CommonName: deployagent.AgentUser(cluster), Approved: true,
	}, gotReq); diff != "" {
		t.Errorf("the CertificateSigningRequest (-want,+got):\n%s", diff)
	}

	h, err := install.LoadHubKubeconfig(agentKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if h.Server != fleet.Hub.URL() || h.User != deployagent.AgentUser(cluster) {
		t.Errorf("the agent's kubeconfig: server %s, user %q; want %s, %q", h.Server, h.User, fleet.Hub.URL(), deployagent.AgentUser(cluster))
	}
	agentCfg, err := clientcmd.BuildConfigFromFlags("", agentKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(agentCfg.CertData, agentCfg.KeyData); err != nil {
		t.Errorf("the agent's certificate and key do not match: %v", err)
	}
	if string(agentCfg.CAData) != string(fleet.Hub.AdminConfig().CAData) {
		t.Errorf("the agent's kubeconfig does not trust the hub's CA")
	}

	// An existing file is never overwritten, and nothing is requested.
	before := signed()
	if _, _, err := runFleetfit(t, accessArgs...); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("agent-access over an existing --agent-kubeconfig: got error %v, want one saying it exists", err)
	}
	if after := signed(); after != before {
		t.Errorf("%d certificates signed by a refused agent-access", after-before)
	}

	// The address the managed cluster's pods reach the hub at.
	elsewhere := t.TempDir() + "/agent-hub.kubeconfig"
	if _, _, err := runFleetfit(t, "install", "agent-access", "--kubeconfig", hubAdmin, "--cluster-name", cluster,
		"--agent-kubeconfig", elsewhere, "--hub-server", "https://hub.example.com:6443"); err != nil {
		t.Fatal(err)
	}
	if h, err := install.LoadHubKubeconfig(elsewhere); err != nil || h.Server != "https://hub.example.com:6443" {
		t.Errorf("with --hub-server: got %+v, %v; want the server https://hub.example.com:6443", h, err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"short validity": {[]string{"--certificate-validity", "1m"}, "--certificate-validity must be at least 10m0s, not 1m0s"},
		"plain http":     {[]string{"--hub-server", "http://hub:6443"}, `--hub-server "http://hub:6443" is not an https:// URL`},
		"dry run":        {[]string{"--dry-run"}, "--agent-kubeconfig issues a certificate, which a --dry-run cannot"},
	} {
		args := append([]string{"install", "agent-access", "--kubeconfig", hubAdmin, "--cluster-name", cluster, "--agent-kubeconfig", t.TempDir() + "/k"}, tc.args...)
		if _, _, err := runFleetfit(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", name, err, tc.want)
		}
	}
	if after := signed(); after != before+1 {
		t.Errorf("%d certificates signed for one more agent-access with --agent-kubeconfig", after-before)
	}

	// install agent with only the hub's admin credentials issues the
	// identity itself, and keeps it when run again.
	installArgs := []string{"install", "agent", "--kubeconfig", spokeAdmin, "--cluster-name", cluster, "--hub-admin-kubeconfig", hubAdmin, "--image", "registry.example.com/fleetfit:test"}
	out, _, err = runFleetfit(t, installArgs...)
	if err != nil {
		t.Fatal(err)
	}
	if !slicesContainsMatch(lines(out), csrLine) {
		t.Errorf("install agent without --hub-kubeconfig approved no CertificateSigningRequest:\n%s", out)
	}
	secret, err := fleet.Spokes[0].AdminClient().CoreV1().Secrets(deployagent.Namespace).Get(ctx, deployagent.HubKubeconfigSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err = install.ParseHubKubeconfig(secret.Data[deployagent.HubKubeconfigSecretKey], "the Secret's")
	if err != nil {
		t.Fatal(err)
	}
	if h.User != deployagent.AgentUser(cluster) || h.Server != fleet.Hub.URL() {
		t.Errorf("the Secret's kubeconfig: server %s, user %q; want %s, %q", h.Server, h.User, fleet.Hub.URL(), deployagent.AgentUser(cluster))
	}
	before = signed()
	out, _, err = runFleetfit(t, installArgs...)
	if err != nil {
		t.Fatal(err)
	}
	if slicesContainsMatch(lines(out), csrLine) || signed() != before {
		t.Errorf("installing again issued a new certificate, though the agent's is fresh:\n%s", out)
	}
	again, err := fleet.Spokes[0].AdminClient().CoreV1().Secrets(deployagent.Namespace).Get(ctx, deployagent.HubKubeconfigSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != secret.ResourceVersion {
		t.Errorf("the Secret changed when installing again: resourceVersion %s, then %s", secret.ResourceVersion, again.ResourceVersion)
	}
}

func refsOf(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimSuffix(l, " serverside-applied")
	}
	return out
}

func slicesContainsMatch(lines []string, re *regexp.Regexp) bool {
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// signClientCSRs signs approved kubernetes.io/kube-apiserver-client
// requests with a CA of its own, as kube-controller-manager's signer would
// with the cluster's, until the test ends. It returns how many it signed so
// far.
func signClientCSRs(t *testing.T, kube kubernetes.Interface) (signed func() int) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test signer"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		count int
	)
	sign := func(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
		block, _ := pem.Decode(csr.Spec.Request)
		if block == nil {
			return nil
		}
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return err
		}
		lifetime := 365 * 24 * time.Hour
		if s := csr.Spec.ExpirationSeconds; s != nil {
			lifetime = time.Duration(*s) * time.Second
		}
		now := time.Now()
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(now.UnixNano()), Subject: req.Subject,
			NotBefore: now.Add(-time.Minute), NotAfter: now.Add(lifetime),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		}, ca, req.PublicKey, caKey)
		if err != nil {
			return err
		}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			return err
		}
		mu.Lock()
		count++
		mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			list, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range list.Items {
				csr := &list.Items[i]
				approved := false
				for _, c := range csr.Status.Conditions {
					approved = approved || c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue
				}
				if approved && len(csr.Status.Certificate) == 0 && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName {
					if err := sign(ctx, csr); err != nil && ctx.Err() == nil {
						t.Logf("signing %s: %v", csr.Name, err)
					}
				}
			}
			return false, nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return count
	}
}
