package reporter

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
)

// unschedulablePods follows the pods that fleetfit delivered and that have no node yet, for
// status.unschedulable (inventory.SummarizeUnschedulable). The reporter's other pod informer
// sees only bound pods, which are the ones that take room; these are the others, and only
// those of HPAIntents, so a cluster with many pending pods of its own costs the agent nothing.
// A pod that is bound, finishes or is deleted leaves the watch as a deletion.
type unschedulablePods struct {
	factory informers.SharedInformerFactory
	lister  corelisters.PodLister
	synced  cache.InformerSynced
}

// newUnschedulablePods builds the informer; enqueue asks for a sync, which it does only when a
// pod's change can change the summary.
func newUnschedulablePods(client kubernetes.Interface, enqueue func()) (*unschedulablePods, error) {
	selector := labels.NewSelector()
	for _, key := range []string{v1alpha1.LabelIntentNamespace, v1alpha1.LabelIntentName} {
		req, err := labels.NewRequirement(key, selection.Exists, nil)
		if err != nil {
			return nil, fmt.Errorf("selecting delivered pods: %w", err)
		}
		selector = selector.Add(*req)
	}
	u := &unschedulablePods{
		factory: informers.NewSharedInformerFactoryWithOptions(client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.LabelSelector = selector.String()
				o.FieldSelector = fields.AndSelectors(
					fields.OneTermEqualSelector("spec.nodeName", ""),
					fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
					fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
				).String()
			})),
	}
	inf := u.factory.Core().V1().Pods().Informer()
	if err := inf.SetTransform(stripManagedFields); err != nil {
		return nil, fmt.Errorf("setting informer transform: %w", err)
	}
	if _, err := inf.AddEventHandler(handler.Funcs[*corev1.Pod]{
		Add:    func(p *corev1.Pod) { u.changed(nil, p, enqueue) },
		Update: func(old, p *corev1.Pod) { u.changed(old, p, enqueue) },
		Delete: func(p *corev1.Pod) { u.changed(p, nil, enqueue) },
	}); err != nil {
		return nil, fmt.Errorf("adding unscheduled pod handler: %w", err)
	}
	u.lister, u.synced = u.factory.Core().V1().Pods().Lister(), inf.HasSynced
	return u, nil
}

// changed asks for a sync when a pod's event changes what the summary reads of it.
func (u *unschedulablePods) changed(old, new *corev1.Pod, enqueue func()) {
	if inventory.UnschedulableChanged(old, new) {
		enqueue()
	}
}

// report returns status.unschedulable and status.omittedUnschedulable from the cache.
func (u *unschedulablePods) report() ([]v1alpha1.UnschedulableWorkload, int32) {
	// The lister of an informer cannot fail.
	pods, _ := u.lister.List(labels.Everything())
	return inventory.SummarizeUnschedulable(pods, v1alpha1.MaxReportedUnschedulable)
}
