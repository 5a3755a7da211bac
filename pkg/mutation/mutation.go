// Package mutation sets a consumer's requirements on the pod template of a
// workload object: resources on one container, required node affinity for the
// features, the tolerations the pods need, the Dynamic Resource Allocation
// claims of its devices and, for a consumer that takes a machine type, the
// labels of a machine group's guest. The action controller applies it to the
// manifests it delivers to a cluster; the managed cluster's pod resource
// injector applies it to the guest pods of its machine groups.
//
// It works on unstructured objects, so every apiVersion of the supported kinds
// works and fields this package does not know survive untouched. Mutate adds to
// what the user wrote and never takes anything away, except the amounts of the
// resources the consumer sets, and it is idempotent: mutating an object it has
// already mutated changes nothing.
package mutation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetfit/fleetfit/pkg/hpa"
)

// Mutation is what to set on a pod template.
type Mutation struct {
	// Container names the container that gets Requests, Limits and Claims;
	// empty means the first container. It need not be set when there are no
	// amounts and no claims.
	Container string
	// Requests and Limits replace the container's amounts of these resources;
	// the container's other resources stay as they are. A resource with a
	// limit but no request gets the limit as its request, as Kubernetes would
	// default it, and an extended resource with a request but no limit gets
	// the request as its limit, as Kubernetes requires.
	Requests, Limits corev1.ResourceList
	// ExclusiveCPU makes the container's cpu and memory requests equal to
	// their limits, for Guaranteed QoS.
	ExclusiveCPU bool
	// Features are ANDed into every term of the pod's required node affinity.
	Features []corev1.NodeSelectorRequirement
	// Tolerations are added to the pod's tolerations unless already there.
	Tolerations []corev1.Toleration
	// Labels are added to the pod template's labels (a Pod's own). A label
	// the template already has with another value is an error, never
	// overwritten.
	Labels map[string]string
	// Claims are added to the pod's resourceClaims, each from its template,
	// and to the container's resources.claims, unless already there. A pod
	// claim of the same name from anything else is an error; the pod's other
	// claims stay as they are.
	Claims []PodClaim
}

// Mutate applies m to the pod template of obj, one of the kinds
// hpa.PodSpecKinds names. On error obj is unchanged; the error says what is
// wrong with the object (an unsupported kind, a missing pod spec or container,
// a field of the wrong type), with the amounts (a request above a limit the
// manifest keeps), with the labels (one the template has with another value)
// or with the claims (one the pod has of the same name and another source).
func Mutate(obj *unstructured.Unstructured, m Mutation) error {
	kind, name := obj.GetKind(), obj.GetName()
	path, ok := hpa.PodSpecPath(kind)
	if !ok {
		return fmt.Errorf("%s %s: kind %s has no pod template to mutate; supported kinds: %s",
			kind, name, kind, strings.Join(hpa.PodSpecKinds(), ", "))
	}
	at := strings.Join(path, ".")
	spec, err := mapAt(obj.Object, "", path...)
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	if spec == nil {
		return fmt.Errorf("%s %s has no pod spec at %s", kind, name, at)
	}
	// Edit a copy and put it in place only when every edit succeeded, so that
	// a failed Mutate leaves obj as it was.
	spec = runtime.DeepCopyJSON(spec)
	if err := mutateContainer(spec, at, &m); err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	if err := addFeatures(spec, at, m.Features); err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	if err := addTolerations(spec, at, m.Tolerations); err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	if err := addPodClaims(spec, at, m.Claims); err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	metaPath := podMetadataPath(path)
	podMeta, err := mapAt(obj.Object, "", metaPath...)
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	labels, err := addLabels(podMeta, strings.Join(metaPath, "."), m.Labels)
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	setAt(obj.Object, spec, path...)
	if labels != nil {
		setAt(obj.Object, labels, append(metaPath, "labels")...)
	}
	return nil
}

// mutateContainer sets the amounts and claims on the container m names in
// spec, the pod spec at at. A mutation without amounts or claims touches no
// container, but a container it names must exist.
func mutateContainer(spec map[string]any, at string, m *Mutation) error {
	if m.Container == "" && len(m.Requests) == 0 && len(m.Limits) == 0 && !m.ExclusiveCPU && len(m.Claims) == 0 {
		return nil
	}
	containers, err := sliceAt(spec, at, "containers")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(containers))
	for i, raw := range containers {
		c, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s.containers[%d] is %s, not an object", at, i, describe(raw))
		}
		cname, _ := c["name"].(string)
		names = append(names, fmt.Sprintf("%q", cname))
		if m.Container != "" && cname != m.Container {
			continue
		}
		// spec is a copy, so the container can be edited in place.
		cat := fmt.Sprintf("%s.containers[%d]", at, i)
		if err := setResources(c, cat, m); err != nil {
			return err
		}
		return addContainerClaims(c, cat, m.Claims)
	}
	if len(containers) == 0 {
		return fmt.Errorf("the pod has no containers at %s.containers to set resources on", at)
	}
	return fmt.Errorf("no container %q (containers: %s)", m.Container, strings.Join(names, ", "))
}
