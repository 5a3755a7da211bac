package machine

import (
	"context"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// sync reconciles one group: the Service and StatefulSet of each machine
// type, the removal of those of types no longer in the group, and the
// group's status. It returns an error only for failed writes, which are
// worth retrying; a reservation object that someone else owns is a problem
// in the Ready condition instead, since retrying cannot fix it.
func (c *Controller) sync(ctx context.Context, key string) error {
	g, err := c.groups.Get(key)
	if apierrors.IsNotFound(err) {
		// The garbage collector removes what the group owned.
		return nil
	}
	if err != nil {
		return err
	}
	if g.DeletionTimestamp != nil {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("machineGroup", klog.KObj(g))
	ctx = klog.NewContext(ctx, logger)

	var (
		errs     []error
		problems []problem
	)
	usage := machinegroup.AvailableMachines(g, c.podsOfType(g.Name))
	for i := range g.Spec.MachineTypes {
		t := &g.Spec.MachineTypes[i]
		u := usage[i].Usage
		p, err := c.syncService(ctx, desiredService(g, t, c.opts.Namespace), g)
		errs = append(errs, err)
		if p != nil {
			problems = append(problems, *p)
		}
		p, err = c.syncStatefulSet(ctx, desiredStatefulSet(g, t, machinegroup.ReservationReplicas(u), c.opts), g)
		errs = append(errs, err)
		if p != nil {
			problems = append(problems, *p)
		}
	}
	errs = append(errs, c.deleteRemoved(ctx, g))

	if p := poolProblem(g, c.pool(g)); p != nil {
		problems = append(problems, *p)
	}
	problems = append(problems, fitProblems(g, c.node)...)
	errs = append(errs, c.writeStatus(ctx, g, computeStatus(g, usage, problems, c.opts.Clock.Now())))
	return errors.Join(errs...)
}

// podsOfType serves the cached guests of a group's machine types, in the
// namespaces opted in to machine groups, and their reservations in the
// controller's namespace, from the
// index: classifying every pod of a large group on each sync would cost more
// than the rest of the sync.
func (c *Controller) podsOfType(group string) machinegroup.PodsOfType {
	return func(role, machineType string) []*corev1.Pod {
		keep := c.countsAsGuest
		if role == machinegroup.PodRoleReservation {
			keep = func(p *corev1.Pod) bool { return p.Namespace == c.opts.Namespace }
		}
		return c.podsOf(podKey(role, group, machineType), keep)
	}
}

// podsOf are the cached pods under an index key that keep accepts.
func (c *Controller) podsOf(key string, keep func(*corev1.Pod) bool) []*corev1.Pod {
	objs, err := c.pods.ByIndex(byMachineType, key)
	if err != nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && keep(p) {
			pods = append(pods, p)
		}
	}
	return pods
}

func (c *Controller) pool(g *v1alpha1.MachineGroup) *v1alpha1.MachineNodePool {
	p, err := c.pools.Get(machinegroup.NodePoolName(g.Name))
	if err != nil || p.Spec.MachineGroup != g.Name {
		return nil
	}
	return p
}

func (c *Controller) node(name string) *corev1.Node {
	n, err := c.nodes.Get(name)
	if err != nil {
		return nil
	}
	return n
}

// notOwned is the problem of a reservation object of the group's name that
// the group does not control.
func notOwned(kind string, obj metav1.Object, g *v1alpha1.MachineGroup) *problem {
	return &problem{ReasonReservationConflict, fmt.Sprintf(
		"%s %s/%s exists and is not controlled by machine group %s; delete it or rename the machine type",
		kind, obj.GetNamespace(), obj.GetName(), g.Name)}
}

// hasLabels reports whether have holds every label of want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (c *Controller) syncService(ctx context.Context, want *corev1.Service, g *v1alpha1.MachineGroup) (*problem, error) {
	services := c.kube.CoreV1().Services(want.Namespace)
	cur, err := c.services.Services(want.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = services.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			klog.FromContext(ctx).V(logs.Changes).Info("Created reservation Service", "service", klog.KObj(want))
			return nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, explainCreateError(err)
		}
		// The cache is behind, or the Service lost the label the cache
		// selects on: look at the live object.
		cur, err = services.Get(ctx, want.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(cur, g) {
		return notOwned("Service", cur, g), nil
	}
	if cur.Spec.ClusterIP != corev1.ClusterIPNone {
		// A Service's cluster IP cannot change: make it again.
		return nil, c.deleteService(ctx, cur, "its cluster IP is not None")
	}
	if hasLabels(cur.Labels, want.Labels) && equality.Semantic.DeepEqual(cur.Spec.Selector, want.Spec.Selector) {
		return nil, nil
	}
	next := cur.DeepCopy()
	next.Labels = mergeLabels(cur.Labels, want.Labels)
	next.Spec.Selector = want.Spec.Selector
	if _, err := services.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("updating Service %s/%s: %w", cur.Namespace, cur.Name, err)
	}
	klog.FromContext(ctx).V(logs.Changes).Info("Updated reservation Service", "service", klog.KObj(cur))
	return nil, nil
}

func (c *Controller) syncStatefulSet(ctx context.Context, want *appsv1.StatefulSet, g *v1alpha1.MachineGroup) (*problem, error) {
	logger := klog.FromContext(ctx)
	sets := c.kube.AppsV1().StatefulSets(want.Namespace)
	cur, err := c.statefulSets.StatefulSets(want.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err = sets.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			logger.V(logs.Changes).Info("Created reservation StatefulSet", "statefulSet", klog.KObj(want), "replicas", *want.Spec.Replicas)
			return nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, explainCreateError(err)
		}
		// The cache is behind, or the StatefulSet lost the label the cache
		// selects on: look at the live object.
		cur, err = sets.Get(ctx, want.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(cur, g) {
		return notOwned("StatefulSet", cur, g), nil
	}
	if !equality.Semantic.DeepEqual(cur.Spec.Selector, want.Spec.Selector) || cur.Spec.ServiceName != want.Spec.ServiceName ||
		cur.Spec.PodManagementPolicy != want.Spec.PodManagementPolicy {
		// Immutable fields: make it again. Its deletion event brings the group back.
		return nil, c.deleteStatefulSet(ctx, cur, "its selector, service name or pod management policy differ")
	}
	hash := want.Annotations[AnnotationTemplateHash]
	sameReplicas := ptr.Deref(cur.Spec.Replicas, 1) == *want.Spec.Replicas
	sameTemplate := cur.Annotations[AnnotationTemplateHash] == hash
	if sameReplicas && sameTemplate && hasLabels(cur.Labels, want.Labels) {
		return nil, nil
	}
	next := cur.DeepCopy()
	next.Labels = mergeLabels(cur.Labels, want.Labels)
	next.Spec.Replicas = want.Spec.Replicas
	if !sameTemplate {
		next.Annotations = mergeLabels(cur.Annotations, want.Annotations)
		next.Spec.Template = want.Spec.Template
	}
	if _, err := sets.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("updating StatefulSet %s/%s: %w", cur.Namespace, cur.Name, err)
	}
	logger.V(logs.Changes).Info("Updated reservation StatefulSet", "statefulSet", klog.KObj(cur),
		"replicas", *want.Spec.Replicas, "previousReplicas", ptr.Deref(cur.Spec.Replicas, 1), "templateChanged", !sameTemplate)
	return nil, nil
}

// deleteRemoved deletes the reservation StatefulSets and Services the group
// controls whose machine type it no longer has.
func (c *Controller) deleteRemoved(ctx context.Context, g *v1alpha1.MachineGroup) error {
	types := make(map[string]bool, len(g.Spec.MachineTypes))
	for _, t := range g.Spec.MachineTypes {
		types[t.Name] = true
	}
	sel := labels.SelectorFromSet(labels.Set{machinegroup.LabelMachineGroup: g.Name})
	removed := func(obj metav1.Object) bool {
		return metav1.IsControlledBy(obj, g) && !types[obj.GetLabels()[machinegroup.LabelMachineType]]
	}
	var errs []error
	sets, err := c.statefulSets.StatefulSets(c.opts.Namespace).List(sel)
	errs = append(errs, err)
	for _, s := range sets {
		if removed(s) {
			errs = append(errs, c.deleteStatefulSet(ctx, s, "its machine type was removed from the group"))
		}
	}
	services, err := c.services.Services(c.opts.Namespace).List(sel)
	errs = append(errs, err)
	for _, s := range services {
		if removed(s) {
			errs = append(errs, c.deleteService(ctx, s, "its machine type was removed from the group"))
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) deleteStatefulSet(ctx context.Context, s *appsv1.StatefulSet, why string) error {
	err := c.kube.AppsV1().StatefulSets(s.Namespace).Delete(ctx, s.Name, deleteOptions(s))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone already, or replaced meanwhile: its event brings the group back.
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting StatefulSet %s/%s: %w", s.Namespace, s.Name, err)
	}
	klog.FromContext(ctx).V(logs.Changes).Info("Deleted reservation StatefulSet", "statefulSet", klog.KObj(s), "reason", why)
	return nil
}

func (c *Controller) deleteService(ctx context.Context, s *corev1.Service, why string) error {
	err := c.kube.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, deleteOptions(s))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting Service %s/%s: %w", s.Namespace, s.Name, err)
	}
	klog.FromContext(ctx).V(logs.Changes).Info("Deleted reservation Service", "service", klog.KObj(s), "reason", why)
	return nil
}

// deleteOptions delete exactly the object seen, never one made again
// meanwhile, and its pods in the background.
func deleteOptions(obj metav1.Object) metav1.DeleteOptions {
	return metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: ptr.To(obj.GetUID())},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	}
}

// writeStatus writes st when it differs from the group's status.
func (c *Controller) writeStatus(ctx context.Context, g *v1alpha1.MachineGroup, st v1alpha1.MachineGroupStatus) error {
	if equality.Semantic.DeepEqual(g.Status, st) {
		return nil
	}
	next := g.DeepCopy()
	next.Status = st
	if _, err := c.client.FleetfitV1alpha1().MachineGroups().UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating status of MachineGroup %s: %w", g.Name, err)
	}
	klog.FromContext(ctx).V(logs.Changes).Info("Updated MachineGroup status", "ready", machinegroup.IsReady(st.Conditions), "machines", st.AvailableMachines)
	return nil
}

// mergeLabels is have with want's entries set.
func mergeLabels(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = make(map[string]string, len(want))
	}
	maps.Copy(out, want)
	return out
}

// explainCreateError says so when a create failed because the reservation
// namespace is missing or being deleted.
func explainCreateError(err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return fmt.Errorf("the reservation namespace is missing or being deleted: %w", err)
	}
	return err
}
