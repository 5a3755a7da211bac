// Package install applies fleetfit's manifests to a cluster with server-side
// apply. It is used by the CLI's install commands and by the test framework,
// so tests install exactly what users install.
package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// CRDTimeout bounds how long applied CRDs may take to be established.
const CRDTimeout = time.Minute

// ApplyCRDs applies the CRDs (see Applier.Apply) and waits until each is
// established and served.
func ApplyCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	a, err := NewApplier(cfg)
	if err != nil {
		return err
	}
	objs, err := CRDObjects(crds)
	if err != nil {
		return err
	}
	if _, err := a.Apply(ctx, objs, ApplyOptions{}); err != nil {
		return err
	}
	return WaitForCRDs(ctx, cfg, crds)
}

// CRDObjects turns CRDs into objects for Apply: only what the manifests
// say, without the empty status and creation time of a typed object, which
// an apply would otherwise claim.
func CRDObjects(crds []*apiextensionsv1.CustomResourceDefinition) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(crds))
	for _, crd := range crds {
		crd = crd.DeepCopy()
		crd.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		crd.Kind = "CustomResourceDefinition"
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return nil, fmt.Errorf("converting CRD %s: %w", crd.Name, err)
		}
		u := &unstructured.Unstructured{Object: m}
		delete(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		out = append(out, u)
	}
	return out, nil
}

// WaitForCRDs waits until each CRD is established, at most CRDTimeout.
func WaitForCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, CRDTimeout, true, func(ctx context.Context) (bool, error) {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
		}
	}
	return nil
}

// ocmGroupSuffix marks Open Cluster Management's API groups.
const ocmGroupSuffix = "open-cluster-management.io"

// KeptCRD is an OCM CRD that OCM installed on the cluster, which fleetfit
// leaves as it is.
type KeptCRD struct {
	Name string
	// Managers are the field managers that wrote it, sorted.
	Managers []string
}

// String is a kubectl-like report line.
func (k KeptCRD) String() string {
	line := "customresourcedefinition.apiextensions.k8s.io/" + k.Name + " unchanged (OCM's own"
	if len(k.Managers) > 0 {
		line += ", managed by " + strings.Join(quoteAll(k.Managers), ", ")
	}
	return line + ")"
}

// WithoutOCMsOwn drops from crds the Open Cluster Management CRDs that
// exist on the cluster and that fleetfit never wrote: OCM's cluster manager
// or klusterlet installed them and keeps them at its own version, which
// fleetfit's copies must not replace. fleetfit's own CRDs, OCM's that are
// missing, and those fleetfit installed before are returned to be applied.
func WithoutOCMsOwn(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) (apply []*apiextensionsv1.CustomResourceDefinition, kept []KeptCRD, err error) {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	for _, crd := range crds {
		if !strings.HasSuffix(crd.Spec.Group, ocmGroupSuffix) {
			apply = append(apply, crd)
			continue
		}
		got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			apply = append(apply, crd)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading CRD %s: %w", crd.Name, err)
		}
		var managers []string
		for _, f := range got.ManagedFields {
			if f.Subresource == "" { // not the API server's status
				managers = append(managers, f.Manager)
			}
		}
		slices.Sort(managers)
		managers = slices.Compact(managers)
		if slices.Contains(managers, FieldManager) {
			apply = append(apply, crd)
			continue
		}
		kept = append(kept, KeptCRD{Name: crd.Name, Managers: managers})
	}
	return apply, kept, nil
}
