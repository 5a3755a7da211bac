package mutation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// setResources sets m's amounts in the resources of c, the unstructured
// container at at.
func setResources(c map[string]any, at string, m *Mutation) error {
	cname, _ := c["name"].(string)
	requests, err := resourceMap(c, at, "requests")
	if err != nil {
		return err
	}
	limits, err := resourceMap(c, at, "limits")
	if err != nil {
		return err
	}
	// touched are the resources whose request and limit must agree afterwards.
	touched := map[string]bool{}
	for name, q := range m.Limits {
		limits[string(name)] = q.String()
		touched[string(name)] = true
		if _, ok := m.Requests[name]; !ok {
			// Kubernetes defaults an absent request to the limit; the
			// manifest's own request for it is replaced like any amount.
			requests[string(name)] = q.String()
		}
	}
	for name, q := range m.Requests {
		requests[string(name)] = q.String()
		touched[string(name)] = true
		if _, ok := m.Limits[name]; !ok && !overcommitAllowed(name) {
			// Kubernetes rejects an extended resource or huge pages without
			// a limit equal to the request.
			limits[string(name)] = q.String()
		}
	}
	if m.ExclusiveCPU {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if err := makeGuaranteed(name, m, requests, limits); err != nil {
				return fmt.Errorf("container %q: %w", cname, err)
			}
			touched[string(name)] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(touched)) {
		if err := checkRequestWithinLimit(name, at, requests, limits); err != nil {
			return fmt.Errorf("container %q: %w", cname, err)
		}
	}
	if len(requests) > 0 {
		setAt(c, requests, "resources", "requests")
	}
	if len(limits) > 0 {
		setAt(c, limits, "resources", "limits")
	}
	return nil
}

// makeGuaranteed gives one resource equal requests and limits, once m's
// amounts are in requests and limits: the mutation's limit, else its request,
// else the manifest's limit, else its request.
func makeGuaranteed(name corev1.ResourceName, m *Mutation, requests, limits map[string]any) error {
	n := string(name)
	_, mutationLimit := m.Limits[name]
	_, mutationRequest := m.Requests[name]
	var amount any
	switch {
	case mutationRequest && !mutationLimit:
		amount = requests[n]
	case limits[n] != nil:
		amount = limits[n]
	case requests[n] != nil:
		amount = requests[n]
	default:
		return fmt.Errorf("exclusiveCPU needs Guaranteed QoS, but the container has no %s amount; set a %s requirement", name, name)
	}
	requests[n] = amount
	limits[n] = amount
	return nil
}

// checkRequestWithinLimit reports a request above its limit, which Kubernetes
// rejects: it happens when the mutation raises a request above a limit the
// manifest keeps.
func checkRequestWithinLimit(name, at string, requests, limits map[string]any) error {
	if requests[name] == nil || limits[name] == nil {
		return nil
	}
	r, err := quantity(requests[name])
	if err != nil {
		return fmt.Errorf("%s.resources.requests[%s]: %w", at, name, err)
	}
	l, err := quantity(limits[name])
	if err != nil {
		return fmt.Errorf("%s.resources.limits[%s]: %w", at, name, err)
	}
	if r.Cmp(l) > 0 {
		return fmt.Errorf("%s request %s would exceed the manifest's limit %s; raise the limit in the manifest or give the requirement limits", name, r.String(), l.String())
	}
	return nil
}

// resourceMap returns a copy of resources.<field> of an unstructured
// container, empty when it has none.
func resourceMap(c map[string]any, at, field string) (map[string]any, error) {
	m, err := mapAt(c, at, "resources", field)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return map[string]any{}, nil
	}
	return maps.Clone(m), nil
}

// quantity parses an amount as unstructured holds it: a string, or a number
// where the manifest wrote one, such as cpu: 2.
func quantity(v any) (resource.Quantity, error) {
	switch v := v.(type) {
	case string:
		return resource.ParseQuantity(v)
	case int64:
		return *resource.NewQuantity(v, resource.DecimalSI), nil
	case float64:
		return resource.ParseQuantity(fmt.Sprint(v))
	}
	return resource.Quantity{}, fmt.Errorf("%s is not a quantity", describe(v))
}

// overcommitAllowed reports whether Kubernetes lets a container request less
// of a resource than its limit: true for its own resources except huge pages,
// false for extended resources such as nvidia.com/gpu.
func overcommitAllowed(name corev1.ResourceName) bool {
	return !inventory.IsExtendedResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
