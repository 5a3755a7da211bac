package action

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/delivery"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/mutation"
)

// desiredWork builds the ManifestWork for a cluster: the intent's manifests, each consumer's
// target mutated, objects without a namespace put in the intent's namespace, the namespaces
// they need (those of machine-group guests opted in to the injector), the
// ResourceClaimTemplates of the consumers' device requirements before the workloads that claim
// them (devices.go), and status feedback of the workloads' replicas. For an intent that splits
// its replicas, the workload runs the cluster's share (split.go); a cluster without a share
// gets errNoShare, never the total.
func desiredWork(in *fleetfitv1alpha1.HPAIntent, r *hpa.Resolved, cluster string, optional map[string][]string) (*workv1.ManifestWork, error) {
	objs := make([]*unstructured.Unstructured, len(r.Manifests))
	for i, m := range r.Manifests {
		objs[i] = m.DeepCopy()
	}
	var applied []string
	// guests are the namespaces of workloads whose pods are guests of a machine group.
	guests := sets.New[string]()
	// templates are the ResourceClaimTemplates of the consumers' device requirements, and
	// claiming the index of the first manifest that claims one.
	var templates []*unstructured.Unstructured
	claiming := len(objs)
	for k := range r.Consumers {
		cs := &r.Consumers[k]
		if cs.Manifest < 0 || cs.Manifest >= len(objs) {
			continue
		}
		ns := objs[cs.Manifest].GetNamespace()
		if ns == "" {
			ns = in.Namespace
		}
		opt := optional[cs.Name]
		m, err := mutation.ForConsumer(r, cs, opt)
		if err != nil {
			return nil, fmt.Errorf("consumer %q: %w", cs.Name, err)
		}
		if t, claim := claimTemplate(in, cs, ns); t != nil {
			templates = append(templates, t)
			m.Claims = append(m.Claims, *claim)
			claiming = min(claiming, cs.Manifest)
		}
		if err := mutation.Mutate(objs[cs.Manifest], m); err != nil {
			return nil, fmt.Errorf("consumer %q: %w", cs.Name, err)
		}
		if cs.MachineGuest() {
			guests.Insert(ns)
		}
		for _, o := range opt {
			applied = append(applied, cs.Name+"/"+o)
		}
	}
	sort.Strings(applied)
	if in.Spec.Split != nil {
		// The cluster runs its share of the replicas, never the total (split.go).
		i, ok := splitTarget(r)
		if !ok {
			return nil, errors.New("the intent splits its replicas, but its consumers target no manifest")
		}
		if err := setShare(in, objs[i], cluster); err != nil {
			return nil, err
		}
	}
	if err := labelPods(in, objs); err != nil {
		return nil, err
	}
	if err := checkClaimTemplates(objs, templates, in.Namespace); err != nil {
		return nil, err
	}
	// The templates go just before the first workload that claims one (after the objects the
	// intent lists before it, such as its Namespace): the work agent applies the manifests in
	// order.
	objs = slices.Insert(objs, claiming, templates...)
	om := WorkMeta(in, cluster)
	om.Annotations[AnnotationOptional] = strings.Join(applied, ",")
	w := &workv1.ManifestWork{
		ObjectMeta: om,
		// The work agent applies the manifests only as far as the intent namespace's
		// ServiceAccount may: an intent's author gets no more on the cluster than that.
		Spec: workv1.ManifestWorkSpec{Executor: delivery.Executor(in.Namespace)},
	}
	// The work agent does not create namespaces: deliver the ones the objects need.
	have := sets.New[string]()
	need := sets.New[string]()
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			have.Insert(o.GetName())
		} else if namespaced(o) {
			if o.GetNamespace() == "" {
				o.SetNamespace(in.Namespace)
			}
			need.Insert(o.GetNamespace())
		}
	}
	added := sets.List(need.Difference(have).Delete("default", "kube-system"))
	for _, n := range slices.Backward(added) {
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(n)
		objs = append([]*unstructured.Unstructured{ns}, objs...)
	}
	if err := optInToInjection(objs, guests); err != nil {
		return nil, err
	}
	for _, o := range objs {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Object: o}})
		if resource, ok := feedbackResources[o.GetKind()]; ok {
			w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: o.GroupVersionKind().Group, Resource: resource, Name: o.GetName(), Namespace: o.GetNamespace()},
				FeedbackRules:      feedbackRules(o.GetKind()),
			})
		}
	}
	// A namespace may hold other things: it stays when the work goes, whether fleetfit added
	// it or the workload holds it. (So the executor never needs to delete a namespace.)
	if orphaned := sets.List(have.Union(sets.New(added...))); len(orphaned) > 0 {
		opt := &workv1.SelectivelyOrphan{}
		for _, n := range orphaned {
			opt.OrphaningRules = append(opt.OrphaningRules, workv1.OrphaningRule{Resource: "namespaces", Name: n})
		}
		w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan, SelectivelyOrphan: opt}
	}
	return w, nil
}

// labelPods puts the intent's labels (intentLabels) on the pods of every workload among objs,
// consumers' targets or not, so that the managed cluster's agent finds the intent's pods and
// reports those that wait for a node (ClusterInventoryStatus.Unschedulable). A workload whose
// pods already have one of those labels with another value is an error, as a conflicting label
// of a machine group's guest is: its pods would be counted as another intent's.
func labelPods(in *fleetfitv1alpha1.HPAIntent, objs []*unstructured.Unstructured) error {
	m := mutation.Mutation{Labels: intentLabels(in)}
	for _, o := range objs {
		if !hasPods(o) {
			continue
		}
		if err := mutation.Mutate(o, m); err != nil {
			return err
		}
	}
	return nil
}

// hasPods reports whether o is one of the Kubernetes kinds with a pod template (or a Pod). A
// custom resource that happens to share a kind's name (another group's Job) is left alone:
// where it keeps its pods is its own.
func hasPods(o *unstructured.Unstructured) bool {
	if _, ok := hpa.PodSpecPath(o.GetKind()); !ok {
		return false
	}
	switch o.GroupVersionKind().Group {
	case "", "apps", "batch", "extensions":
		return true
	}
	return false
}

// optInToInjection labels the Namespaces among objs that hold guests of machine groups so
// that the managed cluster's pod resource injector gives those guests their machines: it acts
// only in namespaces labelled machinegroup.LabelInjectResource=enabled. A Namespace of the
// intent's workload that says otherwise is an error, as a conflicting label of a pod template
// is; OCM's work agent adds the label to a Namespace that exists without it and keeps the
// namespace's other labels.
func optInToInjection(objs []*unstructured.Unstructured, guests sets.Set[string]) error {
	for _, o := range objs {
		if o.GetKind() != "Namespace" || !guests.Has(o.GetName()) {
			continue
		}
		l := o.GetLabels()
		if v, ok := l[machinegroup.LabelInjectResource]; ok && v != machinegroup.InjectResourceEnabled {
			return fmt.Errorf("the workload's Namespace %s has the label %s=%q, but its pods take machine types, which the managed cluster's agent gives only to pods of namespaces labelled %s=%s; remove the label",
				o.GetName(), machinegroup.LabelInjectResource, v, machinegroup.LabelInjectResource, machinegroup.InjectResourceEnabled)
		}
		if l == nil {
			l = map[string]string{}
		}
		l[machinegroup.LabelInjectResource] = machinegroup.InjectResourceEnabled
		o.SetLabels(l)
	}
	return nil
}

// feedbackResources are the kinds whose replica counts the work agent reports back.
var feedbackResources = map[string]string{
	"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets",
	"ReplicaSet": "replicasets", "Job": "jobs", "Pod": "pods",
}

// Status feedback of a Job's pods that are ready now, beside OCM's well-known JobComplete and
// JobSucceeded.
const feedbackJobReady = "JobReady"

// replicaPaths are the status fields OCM's well-known rule reports for a Deployment, under the
// same names, for the kinds it has no rule for.
var replicaPaths = []workv1.JsonPath{
	{Name: "ReadyReplicas", Path: ".status.readyReplicas"},
	{Name: "Replicas", Path: ".status.replicas"},
	{Name: "AvailableReplicas", Path: ".status.availableReplicas"},
}

// feedbackRules are the status feedback rules of a kind of feedbackResources. OCM's work agent
// has well-known rules for Deployment, DaemonSet, Job and Pod only: a StatefulSet or a
// ReplicaSet gets a Deployment's replica counts through JSON paths (a well-known rule would
// fail there), and a Job its ready pods besides its well-known completion.
func feedbackRules(kind string) []workv1.FeedbackRule {
	switch kind {
	case "StatefulSet", "ReplicaSet":
		return []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: slices.Clone(replicaPaths)}}
	case "Job":
		return []workv1.FeedbackRule{
			{Type: workv1.WellKnownStatusType},
			{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: feedbackJobReady, Path: ".status.ready"}}},
		}
	}
	return []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}
}

// namespaced reports whether an object's kind is namespaced, for the kinds an intent carries;
// cluster-scoped kinds keep no namespace.
func namespaced(o *unstructured.Unstructured) bool {
	switch o.GetKind() {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PriorityClass", "StorageClass", "PersistentVolume":
		return false
	}
	return true
}
