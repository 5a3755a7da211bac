package simulate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// A fleet file's Nodes, Pods and MachineGroups must be what a managed cluster could hold:
// its kubelets admit no pod beyond their node's allocatable, and its machine controller and
// injector create reservations and guests only of the shape and on the nodes of their type.
// Anything else would be counted as machines that no cluster could have, so it is refused
// with the place it was read; what the files hold is then counted by the machine controller's
// own rules (machinegroup.AvailableMachines).

// checkNodeRoom refuses a node whose bound pods, those that hold resources on it (as
// pkg/inventory counts them: bound and not terminated), request more of a resource its
// allocatable lists than it has: a kubelet admits no such pod, it fails with OutOf<resource>.
func (f *Fleet) checkNodeRoom(cluster string, nodes []*corev1.Node, pods []*corev1.Pod) error {
	onNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if holdsNode(p) {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
		}
	}
	for _, n := range nodes {
		bound := onNode[n.Name]
		if len(bound) == 0 {
			continue
		}
		var requested inventory.Vector
		for _, p := range bound {
			requested = requested.Add(inventory.PodRequests(p))
		}
		allocatable := inventory.NewVector(n.Status.Allocatable)
		for _, a := range allocatable {
			if r := requested.Get(a.Name); r > a.Milli {
				names := make([]string, 0, len(bound))
				for _, p := range bound {
					names = append(names, p.Namespace+"/"+p.Name)
				}
				return fmt.Errorf("Node %q%s of cluster %s has %s %s allocatable, but the pods bound to it (%s) request %s: a kubelet admits no pod beyond its node's allocatable; remove pods, or bind them to other nodes",
					n.Name, f.where("Node", "", n.Name), cluster, amount(a.Name, a.Milli), a.Name, listed(names), amount(a.Name, r))
			}
		}
	}
	return nil
}

// holdsNode says whether a pod takes room on the node it is bound to: bound and not
// terminated (a pod being deleted holds its room until it is gone).
func holdsNode(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// checkMachinePods refuses the machine pods of a cluster's groups that its controllers could
// never have made or placed: a guest or reservation bound to a node outside its type's pool
// (both carry the pool's node affinity), a reservation that does not request exactly what one
// machine has (the machine controller's StatefulSet sets the type's resources as requests and
// limits), and more reservations bound to nodes than the type has machines (the StatefulSet
// keeps at most that many). Pods of types a group does not define count nowhere, as for the
// machine controller, and are not looked at.
func (f *Fleet) checkMachinePods(cluster string, groups []*fleetfitv1alpha1.MachineGroup, pods []*corev1.Pod) error {
	for _, g := range groups {
		podsOf := machinegroup.PodsOf(pods, g.Name, "")
		for i := range g.Spec.MachineTypes {
			t := &g.Spec.MachineTypes[i]
			pool := machinegroup.PoolNodes(g, t.Name)
			var reserving []string
			for _, role := range []string{machinegroup.PodRoleReservation, machinegroup.PodRoleGuest} {
				for _, p := range podsOf(role, t.Name) {
					if machinegroup.StateOf(p) != machinegroup.PodRunning {
						continue
					}
					what := fmt.Sprintf("Pod %q%s, a %s of %s/%s in cluster %s,", p.Namespace+"/"+p.Name, f.wherePod(p), role, g.Name, t.Name, cluster)
					if !slices.Contains(pool, p.Spec.NodeName) {
						return fmt.Errorf("%s is bound (spec.nodeName) to node %q, which is not in the type's pool (%s): its node affinity allows only the pool's nodes; bind it to one of them, or remove it",
							what, p.Spec.NodeName, poolOf(pool))
					}
					if role != machinegroup.PodRoleReservation {
						continue
					}
					if err := sameAsMachine(t, p); err != "" {
						return fmt.Errorf("%s %s: the machine controller's reservations request what one machine has, the type's spec; fix the pod's requests or remove it", what, err)
					}
					reserving = append(reserving, p.Namespace+"/"+p.Name)
				}
			}
			if len(reserving) > int(t.Available) {
				return fmt.Errorf("MachineGroup %q%s of cluster %s: machine type %s has available %d, but %d of its reservation pods are bound to nodes (%s): the machine controller keeps at most available of them; remove %d",
					g.Name, f.where("MachineGroup", cluster, g.Name), cluster, t.Name, t.Available, len(reserving), listed(reserving), len(reserving)-int(t.Available))
			}
		}
	}
	return nil
}

// sameAsMachine says how a reservation pod's requests differ from one machine of type t, in
// the type's resource order, or returns "" when they are the same.
func sameAsMachine(t *fleetfitv1alpha1.MachineType, p *corev1.Pod) string {
	need := inventory.NewVector(machinegroup.Resources(t))
	has := inventory.PodRequests(p)
	for _, r := range machinegroup.ResourceOrder(t) {
		if n, h := need.Get(r), has.Get(r); n != h {
			return fmt.Sprintf("requests %s %s where one machine has %s", amount(r, h), r, amount(r, n))
		}
	}
	return ""
}

// reportMachineGroups is what the agent of a cluster with these groups, nodes and pods reports
// of them: each group's status.availableMachines counted from the pods by
// machinegroup.AvailableMachines, as the machine controller counts them (reservation pods in
// any namespace: a file says nothing of the agent's), and the groups turned into the report by
// machinegroup.Report. A group is reported ready unless its status says Ready=False or one of
// its types fits no pool node (machinegroup.Shortfalls), which the machine controller reports
// as MachineTypeTooLarge whatever the status of the file says; a group whose status has no
// Ready condition and whose types fit is taken as Ready, as its controller would find it (its
// nodes are the file's, its pods are running). The groups are not modified.
func reportMachineGroups(groups []*fleetfitv1alpha1.MachineGroup, nodes []*corev1.Node, pods []*corev1.Pod) ([]fleetfitv1alpha1.ReportedMachineGroup, int32) {
	if len(groups) == 0 {
		return nil, 0
	}
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	observed := make([]*fleetfitv1alpha1.MachineGroup, 0, len(groups))
	for _, g := range groups {
		g = g.DeepCopy()
		g.Status.AvailableMachines = machinegroup.AvailableMachines(g, machinegroup.PodsOf(pods, g.Name, ""))
		if msg := tooLarge(g, byName); msg != "" {
			meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{
				Type: machinegroup.ConditionReady, Status: metav1.ConditionFalse, Reason: "MachineTypeTooLarge", Message: msg,
			})
		}
		if meta.FindStatusCondition(g.Status.Conditions, machinegroup.ConditionReady) == nil {
			meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{
				Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: "FleetFile",
			})
		}
		observed = append(observed, g)
	}
	return machinegroup.Report(observed)
}

// tooLarge names the first machine type of g, in spec order, that no pool node of its type can
// hold one machine of (or that has machines available and no pool node), or returns "".
func tooLarge(g *fleetfitv1alpha1.MachineGroup, nodes map[string]*corev1.Node) string {
	for i := range g.Spec.MachineTypes {
		t := &g.Spec.MachineTypes[i]
		pool := machinegroup.PoolNodes(g, t.Name)
		if len(pool) == 0 {
			if t.Available > 0 {
				return fmt.Sprintf("machine type %s has %d available but no node in the pool", t.Name, t.Available)
			}
			continue
		}
		var (
			short     machinegroup.Shortfall
			shortNode string
			fits      bool
		)
		for _, name := range pool {
			n := nodes[name]
			if n == nil {
				continue
			}
			s := machinegroup.Shortfalls(t, n.Status.Allocatable)
			if len(s) == 0 {
				fits = true
				break
			}
			if shortNode == "" {
				short, shortNode = s[0], name
			}
		}
		if !fits && shortNode != "" {
			return fmt.Sprintf("machine type %s fits no pool node of that type: it needs %s %s, node %s has %s allocatable",
				t.Name, short.Need.String(), short.Resource, shortNode, short.Has.String())
		}
	}
	return ""
}

// amount prints milli-units of a resource as a quantity: cpu in cores or millicores, memory
// in binary units, counts as integers.
func amount(name corev1.ResourceName, milli int64) string {
	switch {
	case name == corev1.ResourceMemory || strings.HasSuffix(string(name), "storage"):
		if milli%1000 == 0 {
			return resource.NewQuantity(milli/1000, resource.BinarySI).String()
		}
	case milli%1000 == 0:
		return resource.NewQuantity(milli/1000, resource.DecimalSI).String()
	}
	return resource.NewMilliQuantity(milli, resource.DecimalSI).String()
}

// poolOf lists a pool's nodes for a message.
func poolOf(nodes []string) string {
	if len(nodes) == 0 {
		return "it has none"
	}
	return listed(nodes)
}

// listed joins names for a message, at most five of them.
func listed(names []string) string {
	const most = 5
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}

// checkReportedMachines refuses a ClusterInventory of the files that reports more machines of
// a type reserved than the type has (usage.reserved over usage.maximum): the machine
// controller keeps at most maximum reservation pods, so no agent reports more, and each would
// be counted as a free machine.
func (f *Fleet) checkReportedMachines() error {
	for _, inv := range f.Inventories {
		for i, g := range inv.Status.MachineGroups {
			for j, t := range g.MachineTypes {
				if u := t.Usage; u.Reserved > u.Maximum {
					return fmt.Errorf("ClusterInventory %q%s: status.machineGroups[%d].machineTypes[%d].usage (%s/%s): reserved %d is more than maximum %d: the machine controller keeps at most maximum reservation pods, so no agent reports more; fix the usage",
						inv.Namespace+"/"+inv.Name, f.where("ClusterInventory", inv.Namespace, inv.Name), i, j, g.Name, t.Name, u.Reserved, u.Maximum)
				}
			}
		}
	}
	return nil
}
