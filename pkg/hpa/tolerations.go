package hpa

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/inventory"
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
	names := make([]corev1.ResourceName, 0, len(c.Requests))
	for name := range c.Requests {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, t := range inventory.ExtendedResourceTolerations(names) {
		if !slices.ContainsFunc(out, func(o corev1.Toleration) bool { return o.MatchToleration(&t) }) {
			out = append(out, t)
		}
	}
	return out
}
