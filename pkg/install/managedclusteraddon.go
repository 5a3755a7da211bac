package install

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetfit/fleetfit/pkg/apiserved"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// DefaultAddOnInstallNamespace is what `clusteradm addon enable` writes into
// a ManagedClusterAddOn's spec.installNamespace unless told otherwise. OCM
// deprecated the field; the add-on manager installs a template add-on in
// the namespace of its template's Deployment (fleetfit-agent) instead.
const DefaultAddOnInstallNamespace = "open-cluster-management-agent-addon"

// AddOnClients are the hub clients that enabling and disabling an add-on
// use.
type AddOnClients struct {
	Discovery discovery.DiscoveryInterface
	Cluster   clusterclient.Interface
	AddOn     addonclient.Interface
}

// EnableAddOnOptions say where to enable an add-on, as the flags of
// `clusteradm addon enable` do.
type EnableAddOnOptions struct {
	// AddOn is the add-on's name: its ClusterManagementAddOn's and each
	// ManagedClusterAddOn's.
	AddOn string
	// Clusters are the managed clusters to enable it in.
	Clusters []string
	// InstallNamespace is the ManagedClusterAddOn's spec.installNamespace.
	InstallNamespace string
	// Annotations and Labels are the ManagedClusterAddOn's, replacing those
	// it has.
	Annotations, Labels map[string]string
}

// EnableAddOn does what `clusteradm addon enable --names ADDON --clusters
// ...` does: it checks that the hub serves ManagedClusters, that every
// cluster is one of them and that the add-on's ClusterManagementAddOn
// exists, before it writes anything; then, for each cluster in turn, it
// creates the ManagedClusterAddOn in the cluster's namespace or, when there
// is one, sets its annotations, labels and install namespace to the
// options'. Enabling again changes nothing. It returns the clusters it
// enabled the add-on in, also when an error stops it.
func EnableAddOn(ctx context.Context, c AddOnClients, o EnableAddOnOptions) ([]string, error) {
	if len(o.Clusters) == 0 {
		return nil, errors.New("no cluster to enable the add-on in")
	}
	if err := checkHub(c.Discovery); err != nil {
		return nil, err
	}
	clusters, err := managedClusters(ctx, c.Cluster, o.Clusters)
	if err != nil {
		return nil, err
	}
	if _, err := c.AddOn.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, o.AddOn, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the hub has no add-on %s (ClusterManagementAddOn %s): install it first", o.AddOn, o.AddOn)
	} else if err != nil {
		return nil, fmt.Errorf("reading ClusterManagementAddOn %s: %w", o.AddOn, err)
	}
	var done []string
	for _, cluster := range clusters {
		if err := applyManagedClusterAddOn(ctx, c.AddOn, cluster, o); err != nil {
			return done, err
		}
		done = append(done, cluster)
	}
	return done, nil
}

func applyManagedClusterAddOn(ctx context.Context, client addonclient.Interface, cluster string, o EnableAddOnOptions) error {
	addons := client.AddonV1alpha1().ManagedClusterAddOns(cluster)
	want := &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: o.AddOn, Namespace: cluster, Annotations: o.Annotations, Labels: o.Labels},
		Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: o.InstallNamespace},
	}
	// Enabling again as before writes nothing.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := addons.Get(ctx, o.AddOn, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = addons.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if maps.Equal(got.Annotations, want.Annotations) && maps.Equal(got.Labels, want.Labels) &&
			got.Spec.InstallNamespace == want.Spec.InstallNamespace { //nolint:staticcheck // what clusteradm sets
			return nil // enabled as asked already: nothing to write
		}
		got.Annotations, got.Labels = want.Annotations, want.Labels
		got.Spec.InstallNamespace = want.Spec.InstallNamespace //nolint:staticcheck // what clusteradm sets
		_, err = addons.Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("enabling add-on %s in cluster %s: %w", o.AddOn, cluster, err)
	}
	return nil
}

// DisableAddOn does what `clusteradm addon disable --names ADDON` does: it
// checks that the hub serves ManagedClusters and that every cluster is one
// of them, then deletes the add-on's ManagedClusterAddOn in each cluster's
// namespace; without clusters, in every managed cluster's. It returns, per
// cluster, whether there was one to delete, also when an error stops it.
func DisableAddOn(ctx context.Context, c AddOnClients, addon string, clusters []string) (map[string]bool, error) {
	if err := checkHub(c.Discovery); err != nil {
		return nil, err
	}
	if len(clusters) == 0 {
		// Every managed cluster, as listed: none to check one by one.
		list, err := c.Cluster.ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing managed clusters: %w", err)
		}
		for _, mc := range list.Items {
			clusters = append(clusters, mc.Name)
		}
		slices.Sort(clusters)
	} else {
		var err error
		if clusters, err = managedClusters(ctx, c.Cluster, clusters); err != nil {
			return nil, err
		}
	}
	found := map[string]bool{}
	for _, cluster := range clusters {
		err := c.AddOn.AddonV1alpha1().ManagedClusterAddOns(cluster).Delete(ctx, addon, metav1.DeleteOptions{})
		switch {
		case apierrors.IsNotFound(err):
			found[cluster] = false
		case err != nil:
			return found, fmt.Errorf("disabling add-on %s in cluster %s: %w", addon, cluster, err)
		default:
			found[cluster] = true
		}
	}
	return found, nil
}

// checkHub refuses a cluster that serves no ManagedClusters: it is no OCM
// hub, and the add-on's objects would mean nothing there.
func checkHub(disc discovery.DiscoveryInterface) error {
	gv := clusterv1.GroupVersion.String()
	served, err := apiserved.Served(disc, gv, "managedclusters")
	if err != nil {
		return err
	}
	if !served {
		return fmt.Errorf("this cluster is not an Open Cluster Management hub: it serves no managedclusters in %s", gv)
	}
	return nil
}

// managedClusters returns names sorted and without repeats, after checking
// that each names a ManagedCluster; the error names every one that does not.
func managedClusters(ctx context.Context, client clusterclient.Interface, names []string) ([]string, error) {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	var unknown []string
	for _, name := range names {
		if err := ValidateClusterName(name); err != nil {
			return nil, err
		}
		_, err := client.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			unknown = append(unknown, name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading ManagedCluster %s: %w", name, err)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("no managed cluster %s on the hub (see kubectl get managedclusters)", strings.Join(quoteAll(unknown), ", "))
	}
	return names, nil
}
