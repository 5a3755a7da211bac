package hpa

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Tolerations are the tolerations a consumer's pods will have on the managed cluster: those of
// the workload's pod template, plus one for each extended resource the pod requests, keyed by
// the resource name with effect NoSchedule — what Kubernetes' ExtendedResourceToleration
// admission adds, and what the action controller adds so that, for example, pods asking for
// nvidia.com/gpu tolerate the usual nvidia.com/gpu:NoSchedule taint of GPU nodes.
func (r *Resolved) Tolerations(c *Consumer) []corev1.Toleration {
	var out []corev1.Toleration
	if c.Manifest >= 0 && c.Manifest < len(r.Manifests) {
		if spec, msg := podSpecOf(r.Manifests[c.Manifest]); msg == "" {
			out = slices.Clone(spec.Tolerations)
		}
	}
	names := make([]string, 0, len(c.Requests))
	for name := range c.Requests {
		if isExtended(name) {
			names = append(names, string(name))
		}
	}
	slices.Sort(names)
	for _, name := range names {
		t := corev1.Toleration{Key: name, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
		if !slices.ContainsFunc(out, func(o corev1.Toleration) bool { return o.MatchToleration(&t) }) {
			out = append(out, t)
		}
	}
	return out
}

// isExtended reports whether a resource is an extended resource: a domain-qualified name
// outside the kubernetes.io domain, such as nvidia.com/gpu, as Kubernetes defines it.
func isExtended(name corev1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, "kubernetes.io/") && !strings.HasPrefix(n, "requests.")
}
