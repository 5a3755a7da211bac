package addoncmd

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/install"
)

// checkEveryCluster asks the hub, with a server-side dry run, whether it would take the
// ManagedClusterAddOn of every cluster that has none yet, before any is written: a cluster
// whose namespace does not exist, or whose add-on an admission check refuses, would otherwise
// stop `addon enable` halfway, with the clusters before it enabled. It returns every refusal,
// each naming its cluster. A cluster that is no ManagedCluster, or a hub that serves no
// add-ons, is left to install.EnableAddOn, which checks those first and writes nothing either.
func checkEveryCluster(ctx context.Context, c install.AddOnClients, o install.EnableAddOnOptions) error {
	var errs []error
	for _, cluster := range o.Clusters {
		addons := c.AddOn.AddonV1alpha1().ManagedClusterAddOns(cluster)
		_, err := addons.Get(ctx, o.AddOn, metav1.GetOptions{})
		if err == nil {
			continue // updated, if at all, in a namespace that exists
		}
		if !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("cluster %s: reading ManagedClusterAddOn %s: %w", cluster, o.AddOn, err))
			continue
		}
		want := &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: o.AddOn, Namespace: cluster, Annotations: o.Annotations, Labels: o.Labels},
			Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: o.InstallNamespace},
		}
		_, err = addons.Create(ctx, want, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
		case namespaceMissing(err):
			errs = append(errs, missingNamespace(ctx, c, cluster))
		case apierrors.IsNotFound(err):
			// The hub serves no ManagedClusterAddOns: install.EnableAddOn says so.
		default:
			errs = append(errs, fmt.Errorf("cluster %s: the hub refuses its ManagedClusterAddOn %s: %w", cluster, o.AddOn, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nothing was written: %w", err)
	}
	return nil
}

// namespaceMissing reports whether err is the API server's answer for a namespace that does not
// exist.
func namespaceMissing(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// missingNamespace says what a cluster without a namespace on the hub lacks, or returns nil
// when the cluster is no ManagedCluster at all (install.EnableAddOn names those).
func missingNamespace(ctx context.Context, c install.AddOnClients, cluster string) error {
	if _, err := c.Cluster.ClusterV1().ManagedClusters().Get(ctx, cluster, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("cluster %s has no namespace %s on the hub, where its ManagedClusterAddOn lives: OCM's registration creates it once the hub accepts the cluster (spec.hubAcceptsClient: true) and the cluster joins", cluster, cluster)
}
