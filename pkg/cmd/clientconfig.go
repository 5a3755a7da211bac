// Package cmd holds what fleetfit's three commands share: how they find
// their cluster credentials and how they register logging flags.
package cmd

import (
	"flag"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/version"
)

// RESTConfig loads a client config from kubeconfig, or — when it is empty —
// from $KUBECONFIG, ~/.kube/config or the in-cluster service account, in the
// order kubectl uses.
func RESTConfig(kubeconfig, userAgent string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if kubeconfig == "" {
			return nil, fmt.Errorf("no cluster credentials: pass --kubeconfig, set KUBECONFIG, or run in a pod: %w", err)
		}
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = userAgent + "/" + version.Get().GitVersion
	return cfg, nil
}

// AddLogFlags adds klog's flags (-v, --vmodule, …) to the command.
func AddLogFlags(c *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	c.PersistentFlags().AddGoFlagSet(fs)
}
