package inventory

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podOptions make PodRequests count a pod the way kube-scheduler's fit
// filter does on a current cluster: container requests with the sidecar
// rule (app containers plus restartable init containers, or the largest
// init container's peak if that is larger), pod-level requests when the pod
// sets them, overhead added, and resized requests taken from the pod's status
// (in-place resize is on by default since Kubernetes 1.33).
var podOptions = resourcehelper.PodResourcesOptions{UseStatusResources: true}

// requestLists recycles the map PodRequests fills, which is most of the
// garbage of ingesting a pod.
var requestLists = sync.Pool{New: func() any { return corev1.ResourceList{} }}

// PodRequests returns what pod takes from its node: its effective requests
// as kube-scheduler computes them, plus one "pods" slot (whatever the pod
// itself says about "pods" is ignored).
func PodRequests(pod *corev1.Pod) Vector {
	opts := podOptions
	opts.Reuse = requestLists.Get().(corev1.ResourceList)
	list := resourcehelper.PodRequests(pod, opts)
	v := make(Vector, 0, len(list)+1)
	v = append(v, Amount{Name: corev1.ResourcePods, Milli: 1000})
	for name, q := range list {
		if m := milliOf(q); m > 0 && name != corev1.ResourcePods {
			v = append(v, Amount{Name: name, Milli: m})
		}
	}
	sortAmounts(v)
	clear(opts.Reuse)
	requestLists.Put(opts.Reuse)
	return v
}

// occupiesNode reports whether pod holds resources on a node: it is bound
// and has not terminated. Pods being deleted still hold their resources
// until they are gone, as kube-scheduler assumes.
func occupiesNode(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}
