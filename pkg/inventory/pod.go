package inventory

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
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
//
// Most pods are counted by podAccumulator.podRequests, which follows
// resourcehelper.PodRequests (with podOptions) rule for rule on milli-amounts
// instead of maps of Quantities; pods it cannot count exactly that way go
// through the helper itself. TestFastPodRequestsMatchesHelper checks that
// the two agree.
func PodRequests(pod *corev1.Pod) Vector {
	a := accumulators.Get().(*podAccumulator)
	v, ok := a.podRequests(pod)
	if ok {
		v = slices.Clone(v)
	}
	accumulators.Put(a)
	if ok {
		return v
	}
	return slowPodRequests(pod)
}

// slowPodRequests is PodRequests computed by Kubernetes' own helper.
func slowPodRequests(pod *corev1.Pod) Vector {
	pod = withHugeAmountsCapped(pod)
	opts := podOptions
	opts.Reuse = requestLists.Get().(corev1.ResourceList)
	list := resourcehelper.PodRequests(pod, opts)
	v := make(Vector, 0, len(list)+1)
	v = append(v, Amount{Name: corev1.ResourcePods, Milli: 1000})
	for name, q := range list {
		if m := MilliOf(q); m > 0 && name != corev1.ResourcePods {
			v = append(v, Amount{Name: name, Milli: m})
		}
	}
	sortAmounts(v)
	clear(opts.Reuse)
	requestLists.Put(opts.Reuse)
	return v
}

// withHugeAmountsCapped returns pod, or a copy of it in which every amount
// beyond MaxInt64 thousandths is that much, which MilliOf reads alike. The
// helper adds amounts with Quantity.Add, which for an amount such as
// 1e709551616 (ParseQuantity accepts it) builds a number with that many
// digits; capped, a pod requesting it still fills its node.
func withHugeAmountsCapped(pod *corev1.Pod) *corev1.Pod {
	var lists []corev1.ResourceList
	collect := func(p *corev1.Pod) {
		lists = lists[:0]
		for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				lists = append(lists, cs[i].Resources.Requests, cs[i].Resources.Limits)
			}
		}
		for _, ss := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
			for i := range ss {
				lists = append(lists, ss[i].AllocatedResources)
				if r := ss[i].Resources; r != nil {
					lists = append(lists, r.Requests, r.Limits)
				}
			}
		}
		lists = append(lists, p.Spec.Overhead)
		if r := p.Spec.Resources; r != nil {
			lists = append(lists, r.Requests, r.Limits)
		}
	}
	huge := func(q resource.Quantity) bool {
		return v1alpha1.CompareQuantities(q, maxMilli) > 0 || v1alpha1.CompareQuantities(q, minMilli) < 0
	}
	collect(pod)
	found := false
	for _, l := range lists {
		for _, q := range l {
			found = found || huge(q)
		}
	}
	if !found {
		return pod
	}
	pod = pod.DeepCopy()
	collect(pod)
	for _, l := range lists {
		for name, q := range l {
			switch {
			case v1alpha1.CompareQuantities(q, maxMilli) > 0:
				l[name] = maxMilli.DeepCopy()
			case v1alpha1.CompareQuantities(q, minMilli) < 0:
				// Negative amounts count as zero, as MilliOf counts them.
				l[name] = resource.Quantity{}
			}
		}
	}
	return pod
}

// fastAmountLimit bounds every amount the fast path takes and
// fastSumLimit every sum it keeps, so that no addition overflows (each adds
// two numbers below 2^61) and MilliOf of the helper's result is the same
// exact milli-amount (results stay below 2^61, far under maxUnits×1000).
// 2^55 thousandths is about 36 TB.
const (
	fastAmountLimit = 1 << 55
	fastSumLimit    = 1 << 61
)

// exactMilli returns q in thousandths when that is exact, non-negative and
// below fastAmountLimit; otherwise false.
func exactMilli(q *resource.Quantity) (int64, bool) {
	m := q.MilliValue() // rounded up, or garbage on overflow
	if m < 0 || m >= fastAmountLimit {
		return 0, false
	}
	// The comparison is exact whatever the representations, so this also
	// catches an overflowed or rounded m.
	var exact resource.Quantity
	exact.SetMilli(m)
	if v1alpha1.CompareQuantities(*q, exact) != 0 {
		return 0, false
	}
	return m, true
}

// amounts is a small unsorted set of milli-amounts, absent meaning zero.
type amounts []Amount

func (s amounts) find(name corev1.ResourceName) int {
	for i := range s {
		if s[i].Name == name {
			return i
		}
	}
	return -1
}

// add adds m to name. It reports false when the sum leaves the fast range.
func (s *amounts) add(name corev1.ResourceName, m int64) bool {
	if i := s.find(name); i >= 0 {
		(*s)[i].Milli += m
		return (*s)[i].Milli < fastSumLimit
	}
	*s = append(*s, Amount{Name: name, Milli: m})
	return true
}

// max raises name to at least m.
func (s *amounts) max(name corev1.ResourceName, m int64) {
	if i := s.find(name); i >= 0 {
		(*s)[i].Milli = max((*s)[i].Milli, m)
		return
	}
	*s = append(*s, Amount{Name: name, Milli: m})
}

// addList adds every quantity of list; false when one is not exact.
func (s *amounts) addList(list corev1.ResourceList) bool {
	for name, q := range list {
		m, ok := exactMilli(&q)
		if !ok || !s.add(name, m) {
			return false
		}
	}
	return true
}

// maxList raises s to list per resource; false when a quantity is not exact.
func (s *amounts) maxList(list corev1.ResourceList) bool {
	for name, q := range list {
		m, ok := exactMilli(&q)
		if !ok {
			return false
		}
		s.max(name, m)
	}
	return true
}

func (s *amounts) addAll(o amounts) bool {
	for _, a := range o {
		if !s.add(a.Name, a.Milli) {
			return false
		}
	}
	return true
}

func (s *amounts) maxAll(o amounts) {
	for _, a := range o {
		s.max(a.Name, a.Milli)
	}
}

// podAccumulator holds the scratch space of podRequests.
type podAccumulator struct {
	reqs, restartable, initPeak, cur amounts
	out                              Vector
}

var accumulators = sync.Pool{New: func() any { return &podAccumulator{} }}

// podRequests computes PodRequests like resourcehelper.PodRequests with
// podOptions does, in milli-amounts, into a's scratch: the result is valid
// until the next call. It returns false, leaving the pod to the
// helper, for pod-level requests and for any quantity that is negative, not
// a whole number of thousandths, or huge; then the helper's Quantity
// arithmetic and MilliOf's rounding could differ from milli arithmetic.
//
// The rules, from AggregateContainerRequests (KEP-753) and PodRequests:
//   - an app container adds its effective requests;
//   - a restartable init container (sidecar) adds its effective requests to
//     the app total and to a running sidecar total, which is what it needs
//     while the pod initialises;
//   - an ordinary init container needs its spec requests plus the sidecars
//     started before it;
//   - the pod needs, per resource, the larger of the app total and the
//     largest need of an init container or sidecar, plus overhead.
//
// A container's effective requests are its spec requests unless its status
// (init container statuses taking precedence over container statuses, the
// last of a name winning) reports resources; then they are the per-resource
// maximum of spec, status and allocated requests, or of status and
// allocated only when the pod's resize is infeasible.
func (a *podAccumulator) podRequests(pod *corev1.Pod) (Vector, bool) {
	// Read all of pod's fields involved up front: pods are large and
	// rarely in cache, and these loads do not depend on each other, so the
	// processor can wait for all of them at once.
	var (
		podLevel     = pod.Spec.Resources
		containers   = pod.Spec.Containers
		inits        = pod.Spec.InitContainers
		overhead     = pod.Spec.Overhead
		statuses     = pod.Status.ContainerStatuses
		initStatuses = pod.Status.InitContainerStatuses
	)
	if podLevel != nil && len(podLevel.Requests) > 0 {
		return nil, false // pod-level requests
	}
	withStatus := len(statuses)+len(initStatuses) > 0
	a.reqs, a.restartable, a.initPeak = a.reqs[:0], a.restartable[:0], a.initPeak[:0]
	for i := range containers {
		c := &containers[i]
		if !withStatus {
			if !a.reqs.addList(c.Resources.Requests) {
				return nil, false
			}
			continue
		}
		if !a.addEffective(&a.reqs, pod, c) {
			return nil, false
		}
	}
	for i := range inits {
		c := &inits[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			a.cur = a.cur[:0]
			if !a.addEffective(&a.cur, pod, c) ||
				!a.reqs.addAll(a.cur) || !a.restartable.addAll(a.cur) {
				return nil, false
			}
			a.initPeak.maxAll(a.restartable)
			continue
		}
		a.cur = a.cur[:0]
		if !a.cur.addList(c.Resources.Requests) || !a.cur.addAll(a.restartable) {
			return nil, false
		}
		a.initPeak.maxAll(a.cur)
	}
	a.reqs.maxAll(a.initPeak)
	if !a.reqs.addList(overhead) {
		return nil, false
	}

	v := append(a.out[:0], Amount{Name: corev1.ResourcePods, Milli: 1000})
	for _, r := range a.reqs {
		if r.Milli > 0 && r.Name != corev1.ResourcePods {
			v = append(v, r)
		}
	}
	sortAmounts(v)
	a.out = v
	return v, true
}

// addEffective adds c's effective requests to dst.
func (a *podAccumulator) addEffective(dst *amounts, pod *corev1.Pod, c *corev1.Container) bool {
	cs := containerStatus(pod, c.Name)
	if cs == nil || cs.Resources == nil {
		return dst.addList(c.Resources.Requests)
	}
	var eff amounts
	var buf [4]Amount
	eff = buf[:0]
	if !resourcehelper.IsPodResizeInfeasible(pod) && !eff.maxList(c.Resources.Requests) {
		return false
	}
	if !eff.maxList(cs.Resources.Requests) || !eff.maxList(cs.AllocatedResources) {
		return false
	}
	return dst.addAll(eff)
}

// containerStatus finds the status the helper would use for a container
// name: the last init container status of that name, else the last
// container status.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [2][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// occupiesNode reports whether pod holds resources on a node: it is bound
// and has not terminated. Pods being deleted still hold their resources
// until they are gone, as kube-scheduler assumes.
func occupiesNode(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}
