package framework

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	deployhub "github.com/fleetfit/fleetfit/deploy/hub"
	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// Fleet is a hub and its managed ("spoke") clusters, each a real control
// plane: the hub has the OCM hub CRDs and fleetfit's, the spokes the CRDs a
// managed cluster has.
type Fleet struct {
	Hub    *ControlPlane
	Spokes []*ControlPlane
}

// SpokeName is the managed-cluster name of the i-th spoke: cluster1, cluster2, …
func SpokeName(i int) string { return fmt.Sprintf("cluster%d", i+1) }

// StartFleet starts a hub and n spokes concurrently and installs their CRDs, and on the hub the
// admission policy of deploy/hub.
// On error, whatever was started is stopped again.
func StartFleet(ctx context.Context, spokes int, opts Options) (*Fleet, error) {
	names := []string{"hub"}
	for i := range spokes {
		names = append(names, SpokeName(i))
	}
	planes := make([]*ControlPlane, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			cp, err := StartControlPlane(ctx, name, opts)
			if err == nil {
				load := manifests.SpokeCRDs
				if i == 0 {
					load = manifests.HubCRDs
				}
				var crds []*apiextensionsv1.CustomResourceDefinition
				if crds, err = load(); err == nil {
					err = install.ApplyCRDs(ctx, cp.AdminConfig(), crds)
				}
				if err == nil && i == 0 {
					// The hub's admission policy for OCM's objects, as install hub applies it.
					err = Apply(ctx, cp.AdminConfig(), deployhub.Admission)
				}
				if err != nil {
					err = fmt.Errorf("%s: %w", name, err)
				}
			}
			planes[i], errs[i] = cp, err
		})
	}
	wg.Wait()
	f := &Fleet{Hub: planes[0], Spokes: planes[1:]}
	for _, err := range errs {
		if err != nil {
			f.Stop()
			return nil, err
		}
	}
	return f, nil
}

// Stop stops every control plane of the fleet.
func (f *Fleet) Stop() {
	var wg sync.WaitGroup
	for _, cp := range append([]*ControlPlane{f.Hub}, f.Spokes...) {
		if cp != nil {
			wg.Go(cp.Stop)
		}
	}
	wg.Wait()
}

// Kubeconfig renders cfg as a kubeconfig file, for binaries run as processes.
func Kubeconfig(cfg *rest.Config, contextName string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[contextName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	kc.CurrentContext = contextName
	return clientcmd.Write(*kc)
}

// RegisterSpokes makes each spoke a managed cluster of the hub as OCM's
// registration would leave it: a namespace named after the cluster, an
// accepted ManagedCluster labelled with its name and the default cluster set.
func (f *Fleet) RegisterSpokes(ctx context.Context) error {
	admin := f.Hub.AdminClient()
	clusters := clusterclient.NewForConfigOrDie(f.Hub.AdminConfig()).ClusterV1().ManagedClusters()
	for i := range f.Spokes {
		name := SpokeName(i)
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
		mc := &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				"name": name,
				"cluster.open-cluster-management.io/clusterset": "default",
			}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		}
		if _, err := clusters.Create(ctx, mc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ManagedCluster %s: %w", name, err)
		}
	}
	return nil
}
