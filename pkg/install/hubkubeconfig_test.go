package install

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
)

// clientCert returns a self-signed client certificate and its key, in PEM.
func clientCert(t *testing.T, user string, groups []string, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    notAfter.Add(-time.Hour),
		NotAfter:     notAfter,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadHubKubeconfig reads kubeconfigs whose certificates, key and
// token are files next to them, as kubeadm and cloud providers write them,
// and checks that the result stands on its own.
func TestLoadHubKubeconfig(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	cert, key := clientCert(t, "system:fleetfit:agent:cluster1", []string{"fleetfit-agents"}, now.Add(24*time.Hour))
	writeFile(t, dir, "agent.crt", cert)
	writeFile(t, dir, "agent.key", key)
	writeFile(t, dir, "ca.crt", cert) // any PEM certificate will do as a CA here
	writeFile(t, dir, "token", []byte("s3cret"))

	// Relative paths are relative to the kubeconfig's own directory, wherever
	// the command runs.
	certConfig := writeFile(t, dir, "cert.kubeconfig", []byte(`apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster: {server: "https://hub.example.com:6443", certificate-authority: ca.crt}
- name: other
  cluster: {server: "https://other.example.com"}
users:
- name: agent
  user: {client-certificate: agent.crt, client-key: agent.key}
- name: admin
  user: {token: admin-token}
contexts:
- name: hub
  context: {cluster: hub, user: agent}
- name: other
  context: {cluster: other, user: admin}
current-context: hub
`))
	tokenConfig := writeFile(t, dir, "token.kubeconfig", []byte(`apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: agent, user: {tokenFile: token}}]
contexts: [{name: hub, context: {cluster: hub, user: agent}}]
current-context: hub
`))
	t.Chdir(t.TempDir())

	h, err := LoadHubKubeconfig(certConfig)
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Server, User string
		Groups       []string
		NotAfter     time.Time
		Warnings     []string
	}
	if diff := cmp.Diff(summary{
		Server: "https://hub.example.com:6443", User: "system:fleetfit:agent:cluster1", Groups: []string{"fleetfit-agents"},
		NotAfter: now.Add(24 * time.Hour),
	}, summary{h.Server, h.User, h.Groups, h.NotAfter.UTC(), h.Warnings("cluster1", now)}); diff != "" {
		t.Errorf("certificate kubeconfig (-want,+got):\n%s", diff)
	}
	cfg, err := clientcmd.Load(h.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != 1 || len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 {
		t.Errorf("the kubeconfig keeps other contexts: %d contexts, %d clusters, %d users", len(cfg.Contexts), len(cfg.Clusters), len(cfg.AuthInfos))
	}
	user, cluster := cfg.AuthInfos["agent"], cfg.Clusters["hub"]
	if user == nil || cluster == nil || string(user.ClientCertificateData) != string(cert) || string(user.ClientKeyData) != string(key) ||
		string(cluster.CertificateAuthorityData) != string(cert) || user.ClientCertificate != "" || cluster.CertificateAuthority != "" {
		t.Errorf("the files are not inlined:\n%s", h.Raw)
	}

	// Another cluster's identity, after the certificate expired.
	warnings := h.Warnings("cluster2", now.Add(48*time.Hour))
	for i, want := range []string{`authenticates as "system:fleetfit:agent:cluster1" (its client certificate's common name), not "system:fleetfit:agent:cluster2"`, "expired"} {
		if len(warnings) <= i || !strings.Contains(warnings[i], want) {
			t.Errorf("warnings %q: want #%d to say %q", warnings, i, want)
		}
	}

	h, err = LoadHubKubeconfig(tokenConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := clientcmd.Load(h.Raw); err != nil || cfg.AuthInfos["agent"].Token != "s3cret" || cfg.AuthInfos["agent"].TokenFile != "" {
		t.Errorf("the token file is not inlined (%v):\n%s", err, h.Raw)
	}
	warnings = h.Warnings("cluster1", now)
	if len(warnings) != 2 || !strings.Contains(warnings[0], "with a token, whose identity cannot be checked here") || !strings.Contains(warnings[1], "loopback") {
		t.Errorf("token kubeconfig warnings: %q, want that the identity cannot be checked and the server is a loopback address", warnings)
	}
}

func TestLoadHubKubeconfigErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		kubeconfig string
		want       string
	}{
		"missing certificate file": {
			kubeconfig: `apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://hub"}}]
users: [{name: a, user: {client-certificate: nope.crt, client-key: nope.key}}]
contexts: [{name: hub, context: {cluster: hub, user: a}}]
current-context: hub
`,
			want: "inlining its certificate files",
		},
		"no credentials": {
			kubeconfig: `apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://hub"}}]
users: [{name: a, user: {}}]
contexts: [{name: hub, context: {cluster: hub, user: a}}]
current-context: hub
`,
			want: `user "a" has neither a client certificate nor a token`,
		},
		"unknown context": {
			kubeconfig: `apiVersion: v1
kind: Config
current-context: gone
`,
			want: "cannot locate context gone",
		},
		"auth provider": {
			kubeconfig: `apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://hub"}}]
users: [{name: a, user: {auth-provider: {name: oidc}}}]
contexts: [{name: hub, context: {cluster: hub, user: a}}]
current-context: hub
`,
			want: `uses the "oidc" auth provider`,
		},
		"empty": {want: "no current-context"},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(name, " ", "-"), []byte(tc.kubeconfig))
			_, err := LoadHubKubeconfig(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("got error %v, want one naming the file and containing %q", err, tc.want)
			}
		})
	}
}
