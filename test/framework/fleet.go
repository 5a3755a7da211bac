package framework

import (
	"context"
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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

// StartFleet starts a hub and n spokes concurrently and installs their CRDs.
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
