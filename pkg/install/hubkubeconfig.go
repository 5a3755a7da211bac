package install

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
)

// HubKubeconfig is the kubeconfig an agent uses to reach the hub, made
// self-contained so that it works from a Secret inside the managed cluster.
type HubKubeconfig struct {
	// Path names it in messages: the file it was read from.
	Path string
	// Raw is the kubeconfig with only its current context, and every
	// certificate, key and token file's content inlined.
	Raw []byte
	// Server is the hub's API server address.
	Server string
	// User and Groups are the identity of its client certificate; User is
	// empty when it authenticates otherwise (a token), and the identity
	// cannot be read offline.
	User   string
	Groups []string
	// NotBefore and NotAfter are when the client certificate is valid.
	NotBefore, NotAfter time.Time
}

// LoadHubKubeconfig reads the kubeconfig at path and makes it
// self-contained. It fails when the file cannot be read or parsed, has no
// current context, refers to files that cannot be read, or authenticates in
// a way a pod cannot (exec plugins, auth providers).
func LoadHubKubeconfig(path string) (*HubKubeconfig, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig %s: %w", path, err)
	}
	return hubKubeconfig(cfg, path)
}

// ParseHubKubeconfig is LoadHubKubeconfig for a kubeconfig in memory, named
// name in errors and warnings; file references are relative to the current
// directory.
func ParseHubKubeconfig(raw []byte, name string) (*HubKubeconfig, error) {
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig %s: %w", name, err)
	}
	return hubKubeconfig(cfg, name)
}

func hubKubeconfig(cfg *clientcmdapi.Config, path string) (*HubKubeconfig, error) {
	wrap := func(err error) error { return fmt.Errorf("hub kubeconfig %s: %w", path, err) }
	if cfg.CurrentContext == "" {
		return nil, wrap(errors.New("no current-context: the agent uses the current context"))
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, wrap(err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, wrap(fmt.Errorf("inlining its certificate files: %w", err))
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	cluster, auth := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || cluster.Server == "" {
		return nil, wrap(fmt.Errorf("context %q names no cluster with a server", cfg.CurrentContext))
	}
	if auth == nil {
		return nil, wrap(fmt.Errorf("context %q names no user: the agent needs credentials for the hub", cfg.CurrentContext))
	}
	switch {
	case auth.Exec != nil:
		return nil, wrap(fmt.Errorf("user %q runs %q to get credentials, which the agent's container cannot: use a client certificate or a token", ctx.AuthInfo, auth.Exec.Command))
	case auth.AuthProvider != nil:
		return nil, wrap(fmt.Errorf("user %q uses the %q auth provider, which the agent's container cannot: use a client certificate or a token", ctx.AuthInfo, auth.AuthProvider.Name))
	}
	if auth.TokenFile != "" {
		token, err := os.ReadFile(clientcmdapi.ResolvePath(auth.TokenFile, dirOf(auth.LocationOfOrigin)))
		if err != nil {
			return nil, wrap(fmt.Errorf("reading its token file: %w", err))
		}
		auth.Token, auth.TokenFile = string(token), ""
	}
	if len(auth.ClientCertificateData) == 0 && auth.Token == "" {
		return nil, wrap(fmt.Errorf("user %q has neither a client certificate nor a token", ctx.AuthInfo))
	}
	// The result must be a usable client configuration on its own.
	if _, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig(); err != nil {
		return nil, wrap(err)
	}
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, wrap(err)
	}
	h := &HubKubeconfig{Path: path, Raw: raw, Server: cluster.Server}
	if len(auth.ClientCertificateData) > 0 {
		cert, err := leafCertificate(auth.ClientCertificateData)
		if err != nil {
			return nil, wrap(fmt.Errorf("reading its client certificate: %w", err))
		}
		h.User, h.Groups = cert.Subject.CommonName, slices.Clone(cert.Subject.Organization)
		h.NotBefore, h.NotAfter = cert.NotBefore, cert.NotAfter
	}
	return h, nil
}

// Warnings are what may keep the agent of cluster from reaching the hub with
// this kubeconfig, though nothing is wrong with the file itself.
func (h *HubKubeconfig) Warnings(cluster string, now time.Time) []string {
	var w []string
	want := deployagent.AgentUser(cluster)
	switch {
	case h.User == "":
		w = append(w, fmt.Sprintf("%s authenticates with a token, whose identity cannot be checked here: the hub's RBAC for the agent is granted to the user %s", h.Path, want))
	case h.User != want:
		w = append(w, fmt.Sprintf("%s authenticates as %q (its client certificate's common name), not %q: the hub's RBAC for the agent of %s does not apply to it", h.Path, h.User, want, cluster))
	}
	if !h.NotAfter.IsZero() && now.After(h.NotAfter) {
		w = append(w, fmt.Sprintf("the client certificate of %s expired at %s", h.Path, h.NotAfter.UTC().Format(time.RFC3339)))
	}
	if isLoopback(h.Server) {
		w = append(w, fmt.Sprintf("%s points at %s, a loopback address: inside the managed cluster's pods that is the pod itself, not the hub", h.Path, h.Server))
	}
	return w
}

// Fresh says whether the client certificate has more than a fifth of its
// lifetime left at now, which is when a kubelet renews its own.
func (h *HubKubeconfig) Fresh(now time.Time) bool {
	if h.NotAfter.IsZero() || now.Before(h.NotBefore) {
		return false
	}
	return h.NotAfter.Sub(now) > h.NotAfter.Sub(h.NotBefore)/5
}

func leafCertificate(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM certificate")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

func isLoopback(server string) bool {
	u, err := url.Parse(server)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

func dirOf(path string) string {
	abs, err := clientcmdapi.MakeAbs(path, "")
	if err != nil {
		return ""
	}
	return filepath.Dir(abs)
}
