// Package hub is the fleetfit-hub command: the hub side of fleetfit, which
// runs next to the OCM hub and turns Placements and HPAIntents into
// decisions and deliveries.
package hub

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cmd"
	"github.com/fleetfit/fleetfit/pkg/version"
)

// Options are the hub's command-line options.
type Options struct {
	Kubeconfig string
}

// NewCommand returns the fleetfit-hub command.
func NewCommand() *cobra.Command {
	o := &Options{}
	c := &cobra.Command{
		Use:           "fleetfit-hub",
		Short:         "fleetfit's hub: hardware-aware scheduling and delivery of OCM Placements",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(c *cobra.Command, _ []string) error {
			return o.Run(c.Context())
		},
	}
	c.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	cmd.AddLogFlags(c)
	return c
}

// Run connects to the hub, checks that the APIs fleetfit needs are served,
// and runs until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	cfg, err := cmd.RESTConfig(o.Kubeconfig, "fleetfit-hub")
	if err != nil {
		return err
	}
	if err := RequireAPIs(cfg.Host, discovery.NewDiscoveryClientForConfigOrDie(cfg)); err != nil {
		return err
	}
	logger.Info("Hub APIs served", "host", cfg.Host, "version", version.Get().GitVersion)
	<-ctx.Done()
	return nil
}

// requiredAPIs are the group versions and resources the hub works with, in
// the order they are checked.
var requiredAPIs = []struct {
	groupVersion string
	resources    []string
}{
	{v1alpha1.SchemeGroupVersion.String(), []string{"hpaintents", "clusterinventories"}},
	{"cluster.open-cluster-management.io/v1", []string{"managedclusters"}},
	{"cluster.open-cluster-management.io/v1beta1", []string{"placements", "placementdecisions"}},
	{"cluster.open-cluster-management.io/v1beta2", []string{"managedclustersets", "managedclustersetbindings"}},
	{"cluster.open-cluster-management.io/v1alpha1", []string{"addonplacementscores"}},
	{"work.open-cluster-management.io/v1", []string{"manifestworks"}},
}

// RequireAPIs fails with an actionable message when the hub does not serve
// an API fleetfit needs.
func RequireAPIs(host string, dc discovery.DiscoveryInterface) error {
	for _, api := range requiredAPIs {
		gv, resources := api.groupVersion, api.resources
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			return fmt.Errorf("hub %s does not serve %s (%v): install the CRDs with `fleetfit install crds --side hub`", host, gv, err)
		}
		served := map[string]bool{}
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
		for _, r := range resources {
			if !served[r] {
				return fmt.Errorf("hub %s does not serve %s in %s: install the CRDs with `fleetfit install crds --side hub`", host, r, gv)
			}
		}
	}
	return nil
}
