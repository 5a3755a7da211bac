package action

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/mutation"
)

// Delivery of device requirements.
//
// A consumer's device requirements (hpa.Consumer.Devices) reach the managed cluster as
// Dynamic Resource Allocation objects its kube-scheduler allocates devices for: one
// ResourceClaimTemplate per consumer, in its workload's namespace, with one request per
// requirement (ExactCount of the class, with its selectors), and a claim of the template in
// the pod template, which the consumer's container gets all of. The names are in names.go.
// The ManifestWork holds the template before the workload, so that OCM's work agent, which
// applies a ManifestWork's manifests in order, creates it before the workload's pods need it.
//
// The requests of templates the workload carries itself (hpa.Device.FromWorkload) need none
// of this: the workload is delivered with its claims as written.

// claimTemplate is the ResourceClaimTemplate of the device requirements of consumer c, whose
// workload is in namespace, and the claim its pod template gets; nil when c has none.
func claimTemplate(in *fleetfitv1alpha1.HPAIntent, c *hpa.Consumer, namespace string) (*unstructured.Unstructured, *mutation.PodClaim) {
	if len(c.Devices) == 0 {
		return nil, nil
	}
	requests := make([]any, 0, len(c.Devices))
	for _, d := range c.Devices {
		exactly := map[string]any{
			"deviceClassName": d.Class,
			"allocationMode":  string(resourcev1.DeviceAllocationModeExactCount),
			"count":           d.Count,
		}
		if len(d.Selectors) > 0 {
			selectors := make([]any, 0, len(d.Selectors))
			for _, s := range d.Selectors {
				selectors = append(selectors, map[string]any{"cel": map[string]any{"expression": s}})
			}
			exactly["selectors"] = selectors
		}
		requests = append(requests, map[string]any{"name": requestName(d.Name), "exactly": exactly})
	}
	t := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"spec": map[string]any{"devices": map[string]any{"requests": requests}}},
	}}
	t.SetAPIVersion(resourcev1.SchemeGroupVersion.String())
	t.SetKind(hpa.ResourceClaimTemplateKind)
	t.SetName(ClaimTemplateName(in, c.Name))
	t.SetNamespace(namespace)
	t.SetLabels(intentLabels(in))
	return t, &mutation.PodClaim{Name: PodClaimName(c.Name), TemplateName: t.GetName()}
}

// checkClaimTemplates refuses a workload that carries a ResourceClaimTemplate of the name and
// namespace of one fleetfit delivers for a consumer's device requirements: the ManifestWork
// would hold two objects in one place.
func checkClaimTemplates(objs, templates []*unstructured.Unstructured, defaultNamespace string) error {
	for _, o := range objs {
		if o.GetKind() != hpa.ResourceClaimTemplateKind || o.GroupVersionKind().Group != resourcev1.GroupName {
			continue
		}
		ns := o.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		for _, t := range templates {
			if t.GetName() == o.GetName() && t.GetNamespace() == ns {
				return fmt.Errorf("the workload's ResourceClaimTemplate %s/%s has the name fleetfit gives the ResourceClaimTemplate of a consumer's device requirements; rename it", ns, o.GetName())
			}
		}
	}
	return nil
}
