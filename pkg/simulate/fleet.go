// Package simulate schedules Placements and HPAIntents offline, with the hub's own scheduler,
// against a fleet held in memory: read from a fleet file (the objects the hub holds, or plain
// Nodes, Pods and MachineGroups turned into inventories by the agent's code) or listed from a
// live hub.
// Nothing is written anywhere: a fleet file is a complete, portable scheduling test case.
package simulate

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/labelkeys"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
)

// ClusterLabel (or an annotation of the same key) marks a Node, a Pod or a MachineGroup in a
// fleet file with the managed cluster it belongs to. A Pod without it belongs to the cluster
// of its node.
const ClusterLabel = "fleetfit.io/cluster"

// Fleet is what the hub's scheduler reads: clusters, cluster sets and bindings, add-on scores,
// inventories, placements with their decisions, and HPAIntents.
type Fleet struct {
	// Objects are what the hub's scheduler cache follows: clusters, sets, bindings, scores,
	// inventories and the current decisions.
	cache.Objects
	Placements []*clusterv1beta1.Placement
	Intents    []*fleetfitv1alpha1.HPAIntent

	// Nodes, Pods and MachineGroups are what a fleet file gives instead of inventories,
	// nodes and groups by cluster.
	Nodes         map[string][]*corev1.Node
	Pods          []*corev1.Pod
	MachineGroups map[string][]*fleetfitv1alpha1.MachineGroup
	// Devices are the DRA objects of each cluster given by its Nodes.
	Devices map[string]*devices

	// places are where each object of a file was read, by objectKey, for messages.
	places map[string]place
	// fromFiles is set on a fleet read from files, where a cluster without an inventory is
	// one the files give no Nodes for, not one without an agent.
	fromFiles bool
}

// Add adds one object of a kind a fleet holds. Namespaces are accepted and ignored.
func (f *Fleet) Add(obj any) error {
	switch o := obj.(type) {
	case *clusterv1.ManagedCluster:
		f.Clusters = append(f.Clusters, o)
	case *clusterv1beta2.ManagedClusterSet:
		f.Sets = append(f.Sets, o)
	case *clusterv1beta2.ManagedClusterSetBinding:
		f.Bindings = append(f.Bindings, o)
	case *clusterv1alpha1.AddOnPlacementScore:
		f.Scores = append(f.Scores, o)
	case *fleetfitv1alpha1.ClusterInventory:
		f.Inventories = append(f.Inventories, o)
	case *clusterv1beta1.Placement:
		f.Placements = append(f.Placements, o)
	case *clusterv1beta1.PlacementDecision:
		f.Decisions = append(f.Decisions, o)
	case *fleetfitv1alpha1.HPAIntent:
		f.Intents = append(f.Intents, o)
	case *corev1.Node:
		cluster := marker(&o.ObjectMeta)
		if cluster == "" {
			return fmt.Errorf("Node %q has no %s label or annotation: say which managed cluster it belongs to", o.Name, ClusterLabel)
		}
		if f.Nodes == nil {
			f.Nodes = map[string][]*corev1.Node{}
		}
		f.Nodes[cluster] = append(f.Nodes[cluster], o)
	case *corev1.Pod:
		f.Pods = append(f.Pods, o)
	case *fleetfitv1alpha1.MachineGroup:
		cluster := marker(&o.ObjectMeta)
		if cluster == "" {
			return fmt.Errorf("MachineGroup %q has no %s label or annotation: say which managed cluster it belongs to", o.Name, ClusterLabel)
		}
		if f.MachineGroups == nil {
			f.MachineGroups = map[string][]*fleetfitv1alpha1.MachineGroup{}
		}
		f.MachineGroups[cluster] = append(f.MachineGroups[cluster], o)
	case *resourcev1.ResourceSlice:
		return f.addDevices("ResourceSlice", &o.ObjectMeta, o)
	case *resourcev1.DeviceClass:
		return f.addDevices("DeviceClass", &o.ObjectMeta, o)
	case *resourcev1.ResourceClaim:
		return f.addDevices("ResourceClaim", &o.ObjectMeta, o)
	case *corev1.Namespace:
	default:
		kind := "this kind"
		if o, ok := obj.(interface {
			GetObjectKind() schema.ObjectKind
		}); ok && o.GetObjectKind().GroupVersionKind().Kind != "" {
			gvk := o.GetObjectKind().GroupVersionKind()
			kind = fmt.Sprintf("%s (%s)", gvk.Kind, gvk.GroupVersion())
		}
		return fmt.Errorf("a fleet holds no objects of %s: it holds %s", kind, supportedKinds)
	}
	return nil
}

func marker(m *metav1.ObjectMeta) string {
	if c := m.Labels[ClusterLabel]; c != "" {
		return c
	}
	return m.Annotations[ClusterLabel]
}

// BuildInventories turns the fleet's Nodes and Pods into ClusterInventories, observed at now,
// with the same pkg/inventory code the agent runs in each cluster (reporting, besides cfg's
// prefixes, the label keys of the fleet's intents, as agents do once the hub asks), and its
// MachineGroups into their status.machineGroups with the agent's pkg/machinegroup code (see
// reportMachineGroups). It checks that the fleet is consistent: every cluster named by nodes,
// pods, machine groups and inventories exists, no cluster has both nodes and an inventory, a
// cluster with machine groups has nodes, names are unique, every pod is counted on a node of
// its cluster, no node holds pods beyond its allocatable, and machine pods are what the
// cluster's machine controller and injector could have made (checkMachinePods). Its errors say
// where the objects were read.
func (f *Fleet) BuildInventories(cfg inventory.Config, now time.Time) error {
	clusters := map[string]bool{}
	for _, c := range f.Clusters {
		if clusters[c.Name] {
			return fmt.Errorf("ManagedCluster %q appears twice", c.Name)
		}
		clusters[c.Name] = true
	}
	hasInventory := map[string]bool{}
	for _, inv := range f.Inventories {
		if !clusters[inv.Namespace] {
			return fmt.Errorf("ClusterInventory %q%s: there is no ManagedCluster %q (an inventory lives in its cluster's namespace)",
				inv.Namespace+"/"+inv.Name, f.where("ClusterInventory", inv.Namespace, inv.Name), inv.Namespace)
		}
		if hasInventory[inv.Namespace] {
			return fmt.Errorf("cluster %q has more than one ClusterInventory, the second %q%s: give it one, named like the cluster",
				inv.Namespace, inv.Namespace+"/"+inv.Name, f.where("ClusterInventory", inv.Namespace, inv.Name))
		}
		hasInventory[inv.Namespace] = true
	}
	if err := f.checkReportedMachines(); err != nil {
		return err
	}
	nodeCluster := map[string]string{}
	var names []string
	for name := range f.Nodes {
		names = append(names, name)
	}
	// Sorted, so that the first problem reported is the same on every run.
	slices.Sort(names)
	for _, name := range names {
		first := f.Nodes[name][0].Name
		if !clusters[name] {
			return fmt.Errorf("Node %q%s is marked %s=%s, but there is no ManagedCluster %q: add it, or fix the mark",
				first, f.where("Node", "", first), ClusterLabel, name, name)
		}
		if hasInventory[name] {
			return fmt.Errorf("cluster %q has both Nodes and a ClusterInventory%s: give one or the other",
				name, f.where("ClusterInventory", name, name))
		}
		for _, n := range f.Nodes[name] {
			if other, dup := nodeCluster[n.Name]; dup {
				return fmt.Errorf("Node %q appears twice (clusters %s and %s): give each node a name of its own", n.Name, other, name)
			}
			nodeCluster[n.Name] = name
		}
	}
	// The hub asks every agent for the label keys the intents use (pkg/controller/labelkeys),
	// and agents report them from their next report on: the inventories built here are those
	// of agents that have answered, and say so in reportedLabels. Inventories given as such
	// say themselves what they report.
	if len(cfg.FeatureLabelKeys) == 0 {
		cfg.FeatureLabelKeys, _ = labelkeys.Keys(f.Intents)
	}
	if err := f.checkMachineGroups(clusters, hasInventory); err != nil {
		return err
	}
	builders := map[string]*inventory.Cluster{}
	for cluster := range f.Devices {
		if len(f.Nodes[cluster]) == 0 {
			return fmt.Errorf("the files give DRA objects (ResourceSlices, DeviceClasses, ResourceClaims) of cluster %q but none of its Nodes: add its Nodes, marked %s=%s", cluster, ClusterLabel, cluster)
		}
	}
	for _, name := range names {
		b, err := inventory.NewCluster(cfg)
		if err != nil {
			return err
		}
		for _, n := range f.Nodes[name] {
			b.UpsertNode(n)
		}
		if d := f.Devices[name]; d != nil {
			sum := d.summary()
			b.SetDevices(sum.Nodes, &sum.Report)
		}
		builders[name] = b
	}
	podsOf := map[string][]*corev1.Pod{}
	podAt := map[string]string{}
	for _, p := range f.Pods {
		cluster, err := f.clusterOfPod(p, nodeCluster, hasInventory)
		if err != nil {
			return err
		}
		// Pods of different clusters may share a name; pods of one cluster may not, however
		// the files say where they are.
		key := cluster + "/" + p.Namespace + "/" + p.Name
		if before, dup := podAt[key]; dup {
			return fmt.Errorf("Pod %q of cluster %q appears twice:%s and%s; give each pod a name of its own, or remove one",
				p.Namespace+"/"+p.Name, cluster, before, f.wherePod(p))
		}
		podAt[key] = f.wherePod(p)
		builders[cluster].UpsertPod(p)
		podsOf[cluster] = append(podsOf[cluster], p)
	}
	for _, name := range names {
		if err := f.checkNodeRoom(name, f.Nodes[name], podsOf[name]); err != nil {
			return err
		}
		if err := f.checkMachinePods(name, f.MachineGroups[name], podsOf[name]); err != nil {
			return err
		}
	}
	for _, name := range names {
		inv := &fleetfitv1alpha1.ClusterInventory{}
		inv.APIVersion, inv.Kind = fleetfitv1alpha1.SchemeGroupVersion.String(), "ClusterInventory"
		inv.Name, inv.Namespace = name, name
		inv.Status = builders[name].Summarize()
		inv.Status.ObservedAt = metav1.NewTime(now)
		inv.Status.Revision = 1
		inv.Status.MachineGroups, inv.Status.OmittedMachineGroups = reportMachineGroups(f.MachineGroups[name], f.Nodes[name], podsOf[name])
		f.Inventories = append(f.Inventories, inv)
	}
	f.Nodes, f.Pods, f.MachineGroups, f.Devices = nil, nil, nil, nil
	slices.SortFunc(f.Inventories, func(a, b *fleetfitv1alpha1.ClusterInventory) int { return cmp.Compare(a.Namespace, b.Namespace) })
	return nil
}

// checkMachineGroups checks that every machine group belongs to a cluster of the fleet given
// by its Nodes (a ClusterInventory reports its groups itself) and that the nodes of its pool
// are Nodes of that cluster: a group is reported ready, which it could not be without them.
func (f *Fleet) checkMachineGroups(clusters, hasInventory map[string]bool) error {
	names := make([]string, 0, len(f.MachineGroups))
	for name := range f.MachineGroups {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		g := f.MachineGroups[name][0]
		what := fmt.Sprintf("MachineGroup %q%s", g.Name, f.where("MachineGroup", name, g.Name))
		switch {
		case !clusters[name]:
			return fmt.Errorf("%s is marked %s=%s, but there is no ManagedCluster %q: add it, or fix the mark", what, ClusterLabel, name, name)
		case hasInventory[name]:
			return fmt.Errorf("%s is marked %s=%s, a cluster given by its ClusterInventory, which reports its machine groups itself (status.machineGroups): remove the group, or give the cluster's Nodes instead of its inventory",
				what, ClusterLabel, name)
		case len(f.Nodes[name]) == 0:
			return fmt.Errorf("%s is marked %s=%s, but the files have no Node of cluster %s: add its Nodes", what, ClusterLabel, name, name)
		}
		nodes := map[string]bool{}
		for _, n := range f.Nodes[name] {
			nodes[n.Name] = true
		}
		for _, g := range f.MachineGroups[name] {
			for i, p := range g.Spec.NodePools {
				if !nodes[p.Name] {
					return fmt.Errorf("MachineGroup %q%s: spec.nodePools[%d] names node %q, which is no Node of cluster %s in the files: add the node, marked %s=%s, or fix the entry",
						g.Name, f.where("MachineGroup", name, g.Name), i, p.Name, name, ClusterLabel, name)
				}
			}
		}
	}
	return nil
}

// clusterOfPod returns the cluster whose inventory counts a pod: the cluster of the node it is
// bound to, which its mark, when it has one, must agree with. A pod that would be counted on
// no node is an error, never a pod silently left out: its node would look free.
func (f *Fleet) clusterOfPod(p *corev1.Pod, nodeCluster map[string]string, hasInventory map[string]bool) (string, error) {
	what := fmt.Sprintf("Pod %q%s", p.Namespace+"/"+p.Name, f.wherePod(p))
	marked := marker(&p.ObjectMeta)
	bound, onNode := nodeCluster[p.Spec.NodeName]
	switch {
	case marked != "" && onNode && bound != marked:
		return "", fmt.Errorf("%s is marked %s=%s but bound (spec.nodeName) to node %q of cluster %s: fix the mark or the node",
			what, ClusterLabel, marked, p.Spec.NodeName, bound)
	case onNode:
		return bound, nil
	case marked != "" && hasInventory[marked]:
		return "", fmt.Errorf("%s is marked %s=%s, a cluster given by its ClusterInventory, which already counts its pods: remove the pod, or give the cluster's Nodes instead of its inventory",
			what, ClusterLabel, marked)
	case marked != "" && p.Spec.NodeName != "":
		return "", fmt.Errorf("%s is bound (spec.nodeName) to node %q, which is no Node of the files: add the node, marked %s=%s, or fix spec.nodeName",
			what, p.Spec.NodeName, ClusterLabel, marked)
	case marked != "" && nodeClusterHas(nodeCluster, marked):
		// A pending pod of a cluster of the file: it takes no node's resources yet.
		return marked, nil
	case marked != "":
		return "", fmt.Errorf("%s is marked %s=%s, but the files have no Node of cluster %s: add its Nodes", what, ClusterLabel, marked, marked)
	default:
		return "", fmt.Errorf("%s belongs to no cluster of the files: mark it %s=<cluster> or bind it (spec.nodeName) to one of the files' nodes", what, ClusterLabel)
	}
}

// wherePod says where a pod was read, as where does.
func (f *Fleet) wherePod(p *corev1.Pod) string {
	if c := marker(&p.ObjectMeta); c != "" {
		return f.where("Pod", podScope(c, p.Namespace), p.Name)
	}
	return f.where("Pod", p.Namespace, p.Name)
}

func nodeClusterHas(nodeCluster map[string]string, cluster string) bool {
	for _, c := range nodeCluster {
		if c == cluster {
			return true
		}
	}
	return false
}

// LatestObservation is the newest observedAt of the fleet's inventories, or the zero time.
// A fleet file is simulated at that time by default, so that the inventories it holds are as
// fresh as when they were recorded, however old the file is.
func (f *Fleet) LatestObservation() time.Time {
	var t time.Time
	for _, inv := range f.Inventories {
		if inv.Status.ObservedAt.After(t) {
			t = inv.Status.ObservedAt.Time
		}
	}
	return t
}

// Apply adds the objects of other to f as if they were applied to the hub: a Placement or an
// HPAIntent replaces f's of the same namespace and name; everything else is added.
func (f *Fleet) Apply(other *Fleet) {
	for _, p := range other.Placements {
		f.Placements = slices.DeleteFunc(f.Placements, func(q *clusterv1beta1.Placement) bool {
			return q.Namespace == p.Namespace && q.Name == p.Name
		})
		f.Placements = append(f.Placements, p)
	}
	for _, in := range other.Intents {
		f.Intents = slices.DeleteFunc(f.Intents, func(q *fleetfitv1alpha1.HPAIntent) bool {
			return q.Namespace == in.Namespace && q.Name == in.Name
		})
		f.Intents = append(f.Intents, in)
	}
	f.Clusters = append(f.Clusters, other.Clusters...)
	f.Sets = append(f.Sets, other.Sets...)
	f.Bindings = append(f.Bindings, other.Bindings...)
	f.Scores = append(f.Scores, other.Scores...)
	f.Inventories = append(f.Inventories, other.Inventories...)
	f.Decisions = append(f.Decisions, other.Decisions...)
}
