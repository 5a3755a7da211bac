// Package agent is the fleetfit-agent command, which runs in every managed
// cluster and reports what the cluster really has free to the hub.
package agent

import (
	"context"
	"errors"
	"fmt"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"slices"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	"github.com/fleetfit/fleetfit/pkg/cmd"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/version"
)

// Options are the agent's command-line options.
type Options struct {
	ClusterName     string
	HubKubeconfig   string
	Kubeconfig      string
	FeaturePrefixes []string
	MinInterval     time.Duration
}

// NewCommand returns the fleetfit-agent command.
func NewCommand() *cobra.Command {
	o := &Options{
		FeaturePrefixes: slices.Clone(inventory.DefaultFeatureLabelPrefixes),
		MinInterval:     reporter.DefaultMinInterval,
	}
	c := &cobra.Command{
		Use:           "fleetfit-agent",
		Short:         "fleetfit's agent: reports a managed cluster's free resources and node features to the hub",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
	}
	c.Flags().StringVar(&o.ClusterName, "cluster-name", "", "name of this managed cluster on the hub (its namespace there)")
	c.Flags().StringVar(&o.HubKubeconfig, "hub-kubeconfig", "", "kubeconfig for the hub cluster")
	c.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of this managed cluster (default: in-cluster)")
	c.Flags().StringSliceVar(&o.FeaturePrefixes, "feature-prefixes", o.FeaturePrefixes, "node label prefixes reported as features (an exact key is its own prefix)")
	c.Flags().DurationVar(&o.MinInterval, "min-interval", o.MinInterval, "least time between two reports to the hub; changes in between are coalesced")
	cmd.AddLogFlags(c)
	return c
}

// Validate checks the options before anything is contacted.
func (o *Options) Validate() error {
	var errs []error
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--cluster-name is required"))
	} else if msgs := validation.IsDNS1123Label(o.ClusterName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--cluster-name %q is not a valid cluster name: %v", o.ClusterName, msgs))
	}
	if o.HubKubeconfig == "" {
		errs = append(errs, errors.New("--hub-kubeconfig is required"))
	}
	if o.MinInterval <= 0 {
		errs = append(errs, fmt.Errorf("--min-interval must be positive, got %v", o.MinInterval))
	} else if limit := v1alpha1.DefaultInventoryStaleAfter / 2; o.MinInterval > limit {
		// The hub takes an inventory older than its --inventory-stale-after (10m by default)
		// for a silent agent and chooses the cluster for nothing new: reports must come
		// clearly more often than that.
		errs = append(errs, fmt.Errorf("--min-interval %v is too long: at most %v, so that the hub (stale after %v by default) never takes this cluster's reports for silence",
			o.MinInterval, limit, v1alpha1.DefaultInventoryStaleAfter))
	}
	for i, p := range o.FeaturePrefixes {
		if p == "" {
			errs = append(errs, fmt.Errorf("--feature-prefixes[%d] is empty, which would report every label", i))
		}
	}
	return errors.Join(errs...)
}

// Run connects to both clusters and runs until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("cluster", o.ClusterName)
	spokeCfg, err := cmd.RESTConfig(o.Kubeconfig, "fleetfit-agent")
	if err != nil {
		return err
	}
	hubCfg, err := cmd.RESTConfig(o.HubKubeconfig, "fleetfit-agent")
	if err != nil {
		return err
	}
	spoke, err := kubernetes.NewForConfig(spokeCfg)
	if err != nil {
		return err
	}
	hub, err := fleetfitclient.NewForConfig(hubCfg)
	if err != nil {
		return err
	}
	hubCluster, err := clusterclient.NewForConfig(hubCfg)
	if err != nil {
		return err
	}
	if _, err := spoke.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("reaching the managed cluster at %s: %w", spokeCfg.Host, err)
	}
	if _, err := hub.FleetfitV1alpha1().ClusterInventories(o.ClusterName).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("reading inventories in namespace %s on the hub at %s (is the hub RBAC of deploy/agent installed for this cluster?): %w", o.ClusterName, hubCfg.Host, err)
	}
	logger.Info("Connected", "hub", hubCfg.Host, "spoke", spokeCfg.Host, "version", version.Get().GitVersion)

	cfg := inventory.DefaultConfig()
	cfg.FeatureLabelPrefixes = o.FeaturePrefixes
	r, err := reporter.New(
		reporter.Clients{Spoke: spoke, Hub: hub, HubCluster: hubCluster},
		reporter.Options{ClusterName: o.ClusterName, Inventory: cfg, MinInterval: o.MinInterval},
	)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}
