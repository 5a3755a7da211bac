package mutation

import (
	"fmt"
)

// PodClaim is a Dynamic Resource Allocation claim the pods get: an entry of
// the pod spec's resourceClaims that makes each pod a ResourceClaim from the
// ResourceClaimTemplate TemplateName, and an entry of the target container's
// resources.claims that gives the container all of the claim's devices.
type PodClaim struct {
	// Name is the claim's name in the pod, a DNS label.
	Name string
	// TemplateName is the ResourceClaimTemplate in the pod's namespace.
	TemplateName string
}

// addPodClaims appends to an unstructured pod spec, at at, the claims it does
// not already have, in the order given. A claim of the same name that the pod
// spec has already, from the same template, counts as there; one from another
// template or from a ResourceClaim is an error: the pods would get other
// devices than fleetfit counted for them.
func addPodClaims(spec map[string]any, at string, claims []PodClaim) error {
	if len(claims) == 0 {
		return nil
	}
	list, err := sliceAt(spec, at, "resourceClaims")
	if err != nil {
		return err
	}
	have := map[string]int{}
	for i, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s.resourceClaims[%d] is %s, not an object", at, i, describe(raw))
		}
		if name, ok := m["name"].(string); ok {
			have[name] = i
		}
	}
	added := false
	for _, c := range claims {
		i, ok := have[c.Name]
		if !ok {
			list = append(list, map[string]any{"name": c.Name, "resourceClaimTemplateName": c.TemplateName})
			have[c.Name] = len(list) - 1
			added = true
			continue
		}
		existing := list[i].(map[string]any)
		if tmpl, _ := existing["resourceClaimTemplateName"].(string); tmpl == c.TemplateName && existing["resourceClaimName"] == nil {
			continue
		}
		return fmt.Errorf("%s.resourceClaims[%d] %q claims %s where fleetfit delivers the pods with the claim %q of the ResourceClaimTemplate %q for the intent's device requirements; rename the claim in the manifest",
			at, i, c.Name, claimSource(existing), c.Name, c.TemplateName)
	}
	if added {
		spec["resourceClaims"] = list
	}
	return nil
}

// claimSource describes what an unstructured pod resource claim claims.
func claimSource(claim map[string]any) string {
	if v, ok := claim["resourceClaimName"]; ok && v != nil {
		if s, ok := v.(string); ok {
			return fmt.Sprintf("the ResourceClaim %q", s)
		}
		return fmt.Sprintf("a ResourceClaim named by %s", describe(v))
	}
	if v, ok := claim["resourceClaimTemplateName"]; ok && v != nil {
		if s, ok := v.(string); ok {
			return fmt.Sprintf("the ResourceClaimTemplate %q", s)
		}
		return fmt.Sprintf("a ResourceClaimTemplate named by %s", describe(v))
	}
	return "neither a ResourceClaim nor a ResourceClaimTemplate"
}

// addContainerClaims appends to resources.claims of c, the unstructured
// container at at, an entry for each claim it does not reference yet. An
// entry of the claim's name that references one of its requests only
// counts as there: the user chose what the container gets of the claim.
func addContainerClaims(c map[string]any, at string, claims []PodClaim) error {
	if len(claims) == 0 {
		return nil
	}
	list, err := sliceAt(c, at, "resources", "claims")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for i, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s.resources.claims[%d] is %s, not an object", at, i, describe(raw))
		}
		if name, ok := m["name"].(string); ok {
			have[name] = true
		}
	}
	added := false
	for _, cl := range claims {
		if have[cl.Name] {
			continue
		}
		list = append(list, map[string]any{"name": cl.Name})
		have[cl.Name] = true
		added = true
	}
	if added {
		setAt(c, list, "resources", "claims")
	}
	return nil
}
