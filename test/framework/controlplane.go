// Package framework runs real Kubernetes control planes for fleetfit's
// integration and end-to-end tests and for the local demo: for each one an
// etcd and a kube-apiserver process on free loopback ports, with a private CA,
// an admin identity and as many restricted identities as a test needs.
// Around them it runs, as processes too (Component), what a test needs: OCM's
// placement controller and work agent, kube-controller-manager, kube-scheduler
// and kwok to run pods on simulated nodes (StartPodRuntime), and fleetfit's
// own hub and agent.
//
// The binaries come from `make tools`, which builds them from Go modules, and
// `make build` for fleetfit's. Every process is killed and every directory
// removed when the control plane is stopped, when the test binary receives
// SIGINT or SIGTERM (see Main), and — through the kernel's parent-death
// signal — when the test binary dies.
package framework

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openshift/library-go/pkg/crypto"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Named timeouts, sized for a loaded 2-core machine.
const (
	// StartTimeout bounds how long one control plane may take to be ready.
	StartTimeout = 2 * time.Minute
	// StopGrace is how long a process gets to exit after SIGTERM.
	StopGrace     = 10 * time.Second
	certLifetime  = 48 * time.Hour
	startAttempts = 3
)

// ControlPlane is a running etcd + kube-apiserver pair.
type ControlPlane struct {
	// Name identifies the control plane in logs and directory names.
	Name string

	dir       string
	url       string
	ca        *crypto.CA
	caPEM     []byte
	etcd      *process
	apiserver *process
	admin     *rest.Config
	stopOnce  sync.Once

	// attached are processes run against this control plane (OCM's
	// components): Stop stops them first, before their API server goes away
	// and their logs are removed. stopping refuses new ones once Stop began.
	mu       sync.Mutex
	attached map[stopper]struct{}
	stopping bool
}

// stopper is something Stop must stop with the control plane.
type stopper interface{ Stop() }

// attach makes Stop stop s first. It fails when the control plane is
// already stopping.
func (cp *ControlPlane) attach(s stopper) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopping {
		return fmt.Errorf("control plane %q is stopped", cp.Name)
	}
	if cp.attached == nil {
		cp.attached = map[stopper]struct{}{}
	}
	cp.attached[s] = struct{}{}
	return nil
}

// detach forgets s, which has stopped on its own.
func (cp *ControlPlane) detach(s stopper) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	delete(cp.attached, s)
}

// Options tune a control plane.
type Options struct {
	// ServiceAccountAdmission keeps the ServiceAccount admission plugin on.
	// It is off by default because it refuses pods until a controller manager
	// has created the namespace's default ServiceAccount, and most tests
	// create pods as plain API objects without one.
	ServiceAccountAdmission bool
	// ExtraAPIServerArgs are appended to kube-apiserver's command line.
	ExtraAPIServerArgs []string
}

// StartControlPlane starts etcd and kube-apiserver and waits until the API
// server is ready. The caller must Stop it.
func StartControlPlane(ctx context.Context, name string, opts Options) (*ControlPlane, error) {
	cp, err := retryOnPortLoss(ctx, func() (*ControlPlane, error) { return startOnce(ctx, name, opts) })
	if err != nil {
		return nil, fmt.Errorf("starting control plane %q: %w", name, err)
	}
	return cp, nil
}

func startOnce(ctx context.Context, name string, opts Options) (cp *ControlPlane, err error) {
	etcdBin, err := BinaryPath("etcd")
	if err != nil {
		return nil, err
	}
	apiserverBin, err := BinaryPath("kube-apiserver")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fleetfit-"+name+"-")
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{Name: name, dir: dir}
	register(cp)
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()

	if err := cp.writeCredentials(); err != nil {
		return nil, fmt.Errorf("writing credentials: %w", err)
	}

	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	cp.etcd, err = startProcess("etcd", filepath.Join(dir, "etcd.log"), etcdBin,
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, cp.etcd, http.DefaultClient, clientURL+"/health"); err != nil {
		return nil, fmt.Errorf("etcd not healthy: %w\n%s", err, cp.etcd.logTail(20))
	}

	securePort, err := freePort()
	if err != nil {
		return nil, err
	}
	cp.url = fmt.Sprintf("https://127.0.0.1:%d", securePort)
	disabled := []string{}
	if !opts.ServiceAccountAdmission {
		disabled = append(disabled, "ServiceAccount")
	}
	args := []string{
		"--etcd-servers=" + clientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", securePort),
		"--tls-cert-file=" + cp.path("serving.crt"),
		"--tls-private-key-file=" + cp.path("serving.key"),
		"--client-ca-file=" + cp.path("ca.crt"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + cp.path("sa.pub"),
		"--service-account-signing-key-file=" + cp.path("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins=" + strings.Join(disabled, ","),
		"--cert-dir=" + cp.path("certs"),
		"--v=1",
	}
	args = append(args, opts.ExtraAPIServerArgs...)
	cp.apiserver, err = startProcess("kube-apiserver", filepath.Join(dir, "kube-apiserver.log"), apiserverBin, args...)
	if err != nil {
		return nil, err
	}

	cp.admin, err = cp.UserConfig("fleetfit-admin", "system:masters")
	if err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(cp.admin)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, cp.apiserver, httpClient, cp.url+"/readyz"); err != nil {
		return nil, fmt.Errorf("kube-apiserver not ready: %w\n%s", err, cp.apiserver.logTail(30))
	}
	return cp, nil
}

func (cp *ControlPlane) path(name string) string { return filepath.Join(cp.dir, name) }

// writeCredentials creates the control plane's CA, serving certificate and
// service-account signing key.
func (cp *ControlPlane) writeCredentials() error {
	caConfig, err := crypto.MakeSelfSignedCAConfigForDuration("fleetfit-test-"+cp.Name, certLifetime)
	if err != nil {
		return err
	}
	cp.ca = &crypto.CA{Config: caConfig, SerialGenerator: &crypto.RandomSerialGenerator{}}
	cp.caPEM, _, err = caConfig.GetPEMBytes()
	if err != nil {
		return err
	}
	if err := os.WriteFile(cp.path("ca.crt"), cp.caPEM, 0o600); err != nil {
		return err
	}
	serving, err := cp.ca.MakeServerCertForDuration(sets.New("127.0.0.1", "localhost"), certLifetime)
	if err != nil {
		return err
	}
	if err := serving.WriteCertConfigFile(cp.path("serving.crt"), cp.path("serving.key")); err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cp.path("sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(cp.path("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// waitHTTP polls url until it answers 200, the process exits, or the start
// timeout passes.
func waitHTTP(ctx context.Context, p *process, client *http.Client, url string) error {
	return waitReady(ctx, p, func(ctx context.Context) error { return getOK(ctx, client, url) })
}

// URL is the API server's address.
func (cp *ControlPlane) URL() string { return cp.url }

// Dir is the directory holding the control plane's data, certificates and
// process logs; it is removed by Stop.
func (cp *ControlPlane) Dir() string { return cp.dir }

// AdminConfig returns a config for a cluster-admin (system:masters) identity.
func (cp *ControlPlane) AdminConfig() *rest.Config { return rest.CopyConfig(cp.admin) }

// AdminClient returns a Kubernetes clientset for the admin identity.
func (cp *ControlPlane) AdminClient() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(cp.AdminConfig())
}

// UserConfig returns a config that authenticates as userName in groups with a
// client certificate signed by the control plane's CA. The identity has no
// permissions beyond what RBAC grants it, which is how tests check what an
// agent or a hub component may and may not do.
func (cp *ControlPlane) UserConfig(userName string, groups ...string) (*rest.Config, error) {
	cert, err := cp.ca.MakeClientCertificateForDuration(&user.DefaultInfo{Name: userName, Groups: groups}, certLifetime)
	if err != nil {
		return nil, fmt.Errorf("making client certificate for %s: %w", userName, err)
	}
	certPEM, keyPEM, err := cert.GetPEMBytes()
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host: cp.url,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   cp.caPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		QPS:   200,
		Burst: 400,
	}, nil
}

// LogTail returns the end of the API server's log, to explain a failure.
func (cp *ControlPlane) LogTail(lines int) string {
	if cp.apiserver == nil {
		return ""
	}
	return cp.apiserver.logTail(lines)
}

// Stop kills the processes, those attached to the control plane first, and
// removes the control plane's directory. It is safe to call more than once
// and from several goroutines.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		cp.mu.Lock()
		cp.stopping = true
		attached := make([]stopper, 0, len(cp.attached))
		for s := range cp.attached {
			attached = append(attached, s)
		}
		cp.mu.Unlock()
		var wg sync.WaitGroup
		for _, s := range attached {
			wg.Go(s.Stop)
		}
		wg.Wait()
		if cp.apiserver != nil {
			cp.apiserver.stop(StopGrace)
		}
		if cp.etcd != nil {
			cp.etcd.stop(StopGrace)
		}
		if os.Getenv("FLEETFIT_KEEP_CONTROL_PLANES") == "" {
			_ = os.RemoveAll(cp.dir)
		}
		unregister(cp)
	})
}
