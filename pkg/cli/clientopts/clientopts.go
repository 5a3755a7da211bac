// Package clientopts holds what every fleetfit CLI command shares to reach a cluster: kubectl's
// connection flags (--kubeconfig, --context, --namespace/-n, --server, --as, ...) registered once
// on the root command, and the client configuration and namespace they resolve to.
package clientopts

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/fleetfit/fleetfit/pkg/version"
)

// Flags are the connection flags of the fleetfit CLI.
type Flags struct {
	config *genericclioptions.ConfigFlags
}

// New returns the flags with kubectl's defaults.
func New() *Flags {
	return &Flags{config: genericclioptions.NewConfigFlags(true)}
}

// AddFlags registers the flags, as kubectl does, on a root command's persistent flags.
func (f *Flags) AddFlags(fs *pflag.FlagSet) { f.config.AddFlags(fs) }

// SetKubeconfig points the flags at a kubeconfig file, as --kubeconfig would.
func (f *Flags) SetKubeconfig(path string) { *f.config.KubeConfig = path }

// RESTConfig resolves the flags, $KUBECONFIG and ~/.kube/config, in kubectl's order, into a
// client configuration for the fleetfit CLI. A kubeconfig user with an exec credential plugin
// has it run first, bounded by --request-timeout (DefaultExecPluginTimeout without it): a
// plugin that never answers is an error that names it, not a command that hangs.
func (f *Flags) RESTConfig() (*rest.Config, error) {
	if err := f.configured(); err != nil {
		return nil, err
	}
	cfg, err := f.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("no usable cluster credentials (pass --kubeconfig or --context, or set KUBECONFIG): %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultExecPluginTimeout
	}
	if err := execAnswers(cfg, timeout); err != nil {
		return nil, err
	}
	cfg.UserAgent = "fleetfit/" + version.Get().GitVersion
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	return cfg, nil
}

// ErrNoCluster is returned, wrapped, when nothing says which cluster to talk to.
var ErrNoCluster = errors.New("no cluster to talk to: no kubeconfig was found ($KUBECONFIG is unset or names no file, and ~/.kube/config does not exist); pass --kubeconfig or --context, set KUBECONFIG, or read a fleet file with -f")

// configured returns ErrNoCluster when neither the flags, nor a kubeconfig, nor the pod the
// command runs in say which cluster to talk to. kubectl's loading rules would then quietly
// talk to http://localhost:8080, which is never the hub a user means.
func (f *Flags) configured() error {
	if f.config.APIServer != nil && *f.config.APIServer != "" {
		return nil
	}
	raw, err := f.config.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig (pass --kubeconfig or --context, or set KUBECONFIG): %w", err)
	}
	if len(raw.Clusters) > 0 {
		return nil
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != "" {
		return nil // in a pod: its service account's cluster
	}
	return ErrNoCluster
}

// Namespace is the namespace of --namespace, else that of the kubeconfig's context, else
// "default"; explicit says whether the user chose it.
func (f *Flags) Namespace() (ns string, explicit bool, err error) {
	ns, explicit, err = f.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", false, fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, explicit, nil
}
