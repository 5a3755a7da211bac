// Package agent is the fleetfit-agent command, which runs in every managed
// cluster and reports what the cluster really has free to the hub.
package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/agent/clusterclaims"
	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/injector"
	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/machine"
	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/nodepool"
	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cmd"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/version"
)

// Options are the agent's command-line options.
type Options struct {
	ClusterName string
	// Namespace is the agent's own namespace, where its instance-type
	// ConfigMap is.
	Namespace       string
	HubKubeconfig   string
	Kubeconfig      string
	FeaturePrefixes []string
	MinInterval     time.Duration
	// DeviceIgnoredAttributes are the DRA device attributes left out of the
	// reported device kinds.
	DeviceIgnoredAttributes []string
	// InstanceTypesConfigMap names the ConfigMap in Namespace that lists the
	// instance types the cluster's node pools can launch; empty reads none.
	InstanceTypesConfigMap string
	// HubCertificateCheckInterval is how often open connections to the hub
	// are checked for a replaced client certificate file.
	HubCertificateCheckInterval time.Duration
	// UsageScore writes the AddOnPlacementScore resource-usage-score as OCM's
	// resource-usage-collect-addon does.
	UsageScore bool
	// ClusterClaims keeps ClusterClaims with the cluster's hardware facts.
	ClusterClaims bool
	Claims        clusterclaims.Options

	// MachineGroups runs the machine-group controllers and the pod resource
	// injector, and reports the groups to the hub.
	MachineGroups bool
	// MachineGroupWorkers is the number of workers of each machine-group controller.
	MachineGroupWorkers int
	Machine             machine.Options
	Injector            injector.Options
}

// maxDeviceIgnoredAttributes is how many ignored attributes status.devices
// can list: more would be ignored without saying so.
const maxDeviceIgnoredAttributes = 32

// defaultNamespace is the agent's namespace when --namespace is not given:
// $POD_NAMESPACE, else deploy/agent's.
func defaultNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return machine.DefaultNamespace
}

// NewCommand returns the fleetfit-agent command.
func NewCommand() *cobra.Command {
	o := &Options{
		Namespace:               defaultNamespace(),
		InstanceTypesConfigMap:  reporter.DefaultInstanceTypesConfigMap,
		FeaturePrefixes:         slices.Clone(inventory.DefaultFeatureLabelPrefixes),
		MinInterval:             reporter.DefaultMinInterval,
		DeviceIgnoredAttributes: slices.Clone(inventory.DefaultIgnoredDeviceAttributes),
		UsageScore:              true,
		// client-go's default is 5 minutes: a certificate OCM renews late in a
		// short validity could expire on an open connection meanwhile.
		HubCertificateCheckInterval: 30 * time.Second,
		ClusterClaims:               true,
		Claims:                      clusterclaims.Options{MinInterval: clusterclaims.DefaultMinInterval, MaxClaims: clusterclaims.DefaultClaims},

		MachineGroups:       true,
		MachineGroupWorkers: 2,
		Machine:             machine.Options{ReservationImage: machine.DefaultReservationImage, Namespace: machine.DefaultNamespace},
		Injector:            injector.NewOptions(),
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
	c.Flags().StringVar(&o.Namespace, "namespace", o.Namespace, "the agent's own namespace, where its instance-type ConfigMap is (default: $POD_NAMESPACE, else fleetfit-agent)")
	c.Flags().StringVar(&o.InstanceTypesConfigMap, "instance-types-configmap", o.InstanceTypesConfigMap, "ConfigMap in the agent's namespace whose key "+reporter.InstanceTypesKey+" lists, as JSON, the instance types the cluster's Karpenter NodePools can launch ({name, allocatable, labels}, or the {name, resources} entries of Karpenter's kwok provider); without it a pool's shapes are those of the nodes it launched (empty: read none)")
	c.Flags().StringVar(&o.HubKubeconfig, "hub-kubeconfig", "", "kubeconfig for the hub cluster")
	c.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of this managed cluster (default: in-cluster)")
	c.Flags().StringSliceVar(&o.FeaturePrefixes, "feature-prefixes", o.FeaturePrefixes, "node label prefixes reported as features (an exact key is its own prefix)")
	c.Flags().StringSliceVar(&o.DeviceIgnoredAttributes, "device-ignored-attributes", o.DeviceIgnoredAttributes, fmt.Sprintf("comma-separated Dynamic Resource Allocation device attributes left out of the reported device kinds, because they tell alike devices apart (a name without a domain matches it in every domain; empty: none; at most %d)", maxDeviceIgnoredAttributes))
	c.Flags().DurationVar(&o.MinInterval, "min-interval", o.MinInterval, "least time between two reports to the hub; changes in between are coalesced")
	c.Flags().DurationVar(&o.HubCertificateCheckInterval, "hub-certificate-check-interval", o.HubCertificateCheckInterval, "with a hub kubeconfig naming client certificate files (as OCM's add-on registration writes it), how often open connections are checked for a replaced certificate and reopened with it; new connections always use the files' current certificate")
	c.Flags().BoolVar(&o.UsageScore, "resource-usage-score", o.UsageScore, "also write the AddOnPlacementScore "+reporter.UsageScoreName+" with the scores of OCM's resource-usage-collect-addon; turn it off where that add-on runs too")
	c.Flags().BoolVar(&o.ClusterClaims, "cluster-claims", o.ClusterClaims, "keep ClusterClaims on the managed cluster with its hardware facts (node count, GPU models, allocatable totals and largest node, notable node features), for OCM's registration agent to expose on the hub")
	c.Flags().DurationVar(&o.Claims.MinInterval, "cluster-claims-interval", o.Claims.MinInterval, "least time between two updates of the ClusterClaims")
	c.Flags().IntVar(&o.Claims.MaxClaims, "max-cluster-claims", o.Claims.MaxClaims, fmt.Sprintf("most ClusterClaims the agent keeps, within [%d, %d] (OCM exposes 20 custom claims by default)", clusterclaims.MinClaims, clusterclaims.MaxClaims))
	c.Flags().BoolVar(&o.MachineGroups, "machine-groups", o.MachineGroups, "run the machine-group controllers (node pools, reservations) and the pod resource injector, and report MachineGroups to the hub")
	c.Flags().IntVar(&o.MachineGroupWorkers, "machine-group-workers", o.MachineGroupWorkers, "workers of each machine-group controller")
	c.Flags().StringVar(&o.Machine.ReservationImage, "reservation-image", o.Machine.ReservationImage, "image of the reservation pods' one container, which idles until stopped")
	c.Flags().StringVar(&o.Machine.Namespace, "reservation-namespace", o.Machine.Namespace, "namespace of the reservation StatefulSets and Services (it must exist)")
	o.Injector.AddFlags(c.Flags())
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
	if o.InstanceTypesConfigMap != "" {
		// The namespace is only where the ConfigMap is.
		if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespace %q: %v", o.Namespace, msgs))
		}
		if msgs := validation.IsDNS1123Subdomain(o.InstanceTypesConfigMap); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--instance-types-configmap %q: %v", o.InstanceTypesConfigMap, msgs))
		}
	}
	if o.HubCertificateCheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("--hub-certificate-check-interval must be positive, got %v", o.HubCertificateCheckInterval))
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
	if len(o.DeviceIgnoredAttributes) > maxDeviceIgnoredAttributes {
		errs = append(errs, fmt.Errorf("--device-ignored-attributes names %d attributes, at most %d can be reported", len(o.DeviceIgnoredAttributes), maxDeviceIgnoredAttributes))
	}
	for i, a := range o.DeviceIgnoredAttributes {
		if a == "" {
			errs = append(errs, fmt.Errorf("--device-ignored-attributes[%d] is empty", i))
		}
	}
	for i, p := range o.FeaturePrefixes {
		if p == "" {
			errs = append(errs, fmt.Errorf("--feature-prefixes[%d] is empty, which would report every label", i))
		}
	}
	if o.ClusterClaims {
		if o.Claims.MinInterval <= 0 {
			errs = append(errs, fmt.Errorf("--cluster-claims-interval must be positive, got %v", o.Claims.MinInterval))
		}
		if o.Claims.MaxClaims < clusterclaims.MinClaims || o.Claims.MaxClaims > clusterclaims.MaxClaims {
			errs = append(errs, fmt.Errorf("--max-cluster-claims must be within [%d, %d], got %d", clusterclaims.MinClaims, clusterclaims.MaxClaims, o.Claims.MaxClaims))
		}
	}
	if o.MachineGroups {
		if o.MachineGroupWorkers <= 0 {
			errs = append(errs, fmt.Errorf("--machine-group-workers must be positive, got %d", o.MachineGroupWorkers))
		}
		if o.Machine.ReservationImage == "" {
			errs = append(errs, errors.New("--reservation-image must not be empty"))
		}
		if msgs := validation.IsDNS1123Label(o.Machine.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--reservation-namespace %q: %v", o.Machine.Namespace, msgs))
		}
		if err := o.Injector.Validate(); err != nil {
			errs = append(errs, err)
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
	// client-go reads client certificate files named in a kubeconfig again
	// for every new connection (at most once a second), and closes its open
	// connections when a periodic check finds the certificate changed, so
	// the credentials OCM's add-on registration rotates in the mounted
	// Secret are taken up without a restart. The check's period is a
	// process-wide setting of client-go, read when a client is built.
	transport.CertCallbackRefreshDuration = o.HubCertificateCheckInterval
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
	spokeDynamic, err := dynamic.NewForConfig(spokeCfg)
	if err != nil {
		return err
	}
	clients := reporter.Clients{Spoke: spoke, Hub: hub, HubCluster: hubCluster, SpokeDynamic: spokeDynamic}
	var spokeFleetfit fleetfitclient.Interface
	if o.MachineGroups {
		if spokeFleetfit, err = fleetfitclient.NewForConfig(spokeCfg); err != nil {
			return err
		}
		clients.SpokeFleetfit = spokeFleetfit
	}
	ropts := reporter.Options{
		ClusterName: o.ClusterName, Inventory: cfg, MinInterval: o.MinInterval, MachineGroups: o.MachineGroups, UsageScore: o.UsageScore,
		DeviceIgnoredAttributes: o.DeviceIgnoredAttributes,
	}
	if o.InstanceTypesConfigMap != "" {
		ropts.InstanceTypesConfigMap = types.NamespacedName{Namespace: o.Namespace, Name: o.InstanceTypesConfigMap}
	}
	g, ctx := errgroup.WithContext(ctx)
	if o.ClusterClaims {
		served, err := clusterclaims.Served(spoke.Discovery())
		if err != nil {
			return fmt.Errorf("on the managed cluster: %w", err)
		}
		if !served {
			logger.Info("The managed cluster does not serve ClusterClaims: cluster claims are off until OCM's ClusterClaim CRD is installed (fleetfit install crds --side spoke) and the agent restarts")
			o.ClusterClaims = false
		}
	}
	if o.ClusterClaims {
		spokeClusters, err := clusterclient.NewForConfig(spokeCfg)
		if err != nil {
			return err
		}
		claims, err := clusterclaims.New(spokeClusters, o.Claims)
		if err != nil {
			return err
		}
		ropts.OnReport = claims.Observe
		g.Go(func() error { return named("cluster claims", claims.Run(ctx)) })
	}
	r, err := reporter.New(clients, ropts)
	if err != nil {
		return err
	}
	if !o.MachineGroups {
		g.Go(func() error { return r.Run(ctx) })
	} else {
		g.Go(func() error { return o.runWithMachineGroups(ctx, r, spoke, spokeFleetfit) })
	}
	return g.Wait()
}

// runWithMachineGroups runs the reporter beside the machine-group controllers
// and the injector; the first to fail stops the others. A managed cluster
// without the MachineGroup CRD runs the reporter alone and says so.
func (o *Options) runWithMachineGroups(ctx context.Context, r *reporter.Controller, spoke kubernetes.Interface, client fleetfitclient.Interface) error {
	logger := klog.FromContext(ctx)
	served, err := machinegroup.Served(spoke.Discovery())
	if err != nil {
		return fmt.Errorf("on the managed cluster: %w", err)
	}
	if !served {
		logger.Info("The managed cluster does not serve MachineGroups: machine groups are off until its CRDs are installed (fleetfit install crds --side spoke) and the agent restarts")
		return r.Run(ctx)
	}
	srv, err := injector.New(spoke, client, o.Injector)
	if err != nil {
		return fmt.Errorf("pod resource injector: %w", err)
	}
	pools := nodepool.New(spoke, client)
	machines := machine.New(spoke, client, o.Machine)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.Run(ctx) })
	g.Go(func() error { return named("node pool controller", pools.Run(ctx, o.MachineGroupWorkers)) })
	g.Go(func() error { return named("machine controller", machines.Run(ctx, o.MachineGroupWorkers)) })
	g.Go(func() error { return named("pod resource injector", srv.Run(ctx)) })
	return g.Wait()
}

func named(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
