package injector

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"

	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
)

// injectorWriteCert writes a new self-signed certificate for 127.0.0.1 to
// dir, as a mounted Secret would hold it, and returns it.
func injectorWriteCert(t *testing.T, dir string) []byte {
	t.Helper()
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Write both files under temporary names and rename them into place,
	// as the kubelet swaps a Secret volume's contents.
	for name, b := range map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key} {
		tmp := filepath.Join(dir, "."+name)
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return crt
}

// TestServeFromCertDir runs the server with a certificate from a directory,
// admits a guest over TLS, and serves a replaced certificate without a
// restart.
func TestServeFromCertDir(t *testing.T) {
	dir := t.TempDir()
	first := injectorWriteCert(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := NewOptions()
	opts.CertDir = dir
	opts.Listener = ln
	srv, err := New(kubefake.NewClientset(), fleetfitfake.NewSimpleClientset(injectorGroup(groupName)), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	client := func(caPEM []byte) *http.Client {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	raw, err := json.Marshal(makePod("p", "train").Guest(groupName, xlarge, "").Obj())
	if err != nil {
		t.Fatal(err)
	}
	admitOver := func(c *http.Client) (*admissionv1.AdmissionResponse, error) {
		resp, err := c.Post("https://"+ln.Addr().String()+Path, "application/json", bytes.NewReader(injectorReview(t, raw)))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
			return nil, err
		}
		return review.Response, nil
	}
	var resp *admissionv1.AdmissionResponse
	injectorPoll(t, func() error {
		var err error
		resp, err = admitOver(client(first))
		return err
	})
	if !resp.Allowed || len(resp.Patch) == 0 {
		t.Fatalf("allowed %v, patch %s; want the guest injected", resp.Allowed, resp.Patch)
	}

	second := injectorWriteCert(t, dir)
	injectorPoll(t, func() error {
		_, err := admitOver(client(second))
		return err
	})
	if _, err := admitOver(client(first)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("the replaced certificate is still served: %v", err)
	}
}

// injectorPoll retries fn for up to 30 seconds.
func injectorPoll(t *testing.T, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		change  func(*Options)
		wantErr string
	}{
		"defaults":           {change: func(*Options) {}},
		"bad address":        {change: func(o *Options) { o.BindAddress = "9443" }, wantErr: `--injector-bind-address "9443"`},
		"bad namespace":      {change: func(o *Options) { o.Namespace = "A_B" }, wantErr: `--injector-namespace "A_B"`},
		"bad service":        {change: func(o *Options) { o.Service = "" }, wantErr: `--injector-service ""`},
		"bad configuration":  {change: func(o *Options) { o.WebhookConfiguration = "x/y" }, wantErr: `--injector-webhook-configuration "x/y"`},
		"bad hostname":       {change: func(o *Options) { o.ExtraHostnames = []string{"a b"} }, wantErr: `"a b" is neither an IP address nor a DNS name`},
		"IP hostname":        {change: func(o *Options) { o.ExtraHostnames = []string{"127.0.0.1", "::1", "webhook.example.com"} }},
		"cert dir, no names": {change: func(o *Options) { o.CertDir = "/certs"; o.Service = "" }},
		"negative validity":  {change: func(o *Options) { o.ServingValidity = -time.Hour }, wantErr: "must not be negative"},
	} {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			tc.change(&o)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
