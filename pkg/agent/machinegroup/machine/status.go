package machine

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// Reasons of the Ready condition.
const (
	ReasonReady                = "Ready"
	ReasonReservationConflict  = "ReservationConflict"
	ReasonNodePoolMissing      = "NodePoolMissing"
	ReasonNodePoolNotReady     = "NodePoolNotReady"
	ReasonMachineTypeTooLarge  = "MachineTypeTooLarge"
	ReasonMachineTypeNoNode    = "MachineTypeWithoutNodes"
	readyMessage               = "Every machine type has its reservation StatefulSet and fits a node of the ready node pool"
	maxConditionMessageLength  = 32768
	conditionMessageSeparator  = "; "
	conditionMessageTruncation = " …"
)

// problem is one reason why a group is not Ready: a condition reason and a
// message that says what to fix.
type problem struct {
	reason, message string
}

// poolProblem says what keeps the group's MachineNodePool, pool (nil when it
// does not exist), from being Ready; nil when it is Ready. The node pool
// controller's Ready condition is the contract: its message is passed on.
func poolProblem(g *v1alpha1.MachineGroup, pool *v1alpha1.MachineNodePool) *problem {
	name := machinegroup.NodePoolName(g.Name)
	if pool == nil {
		return &problem{ReasonNodePoolMissing, fmt.Sprintf("MachineNodePool %s does not exist yet; the node pool controller creates it from the group", name)}
	}
	c := meta.FindStatusCondition(pool.Status.Conditions, machinegroup.ConditionReady)
	switch {
	case c == nil:
		return &problem{ReasonNodePoolNotReady, fmt.Sprintf("MachineNodePool %s has no Ready condition yet", name)}
	case c.Status != metav1.ConditionTrue:
		msg := fmt.Sprintf("MachineNodePool %s is not Ready", name)
		if c.Message != "" {
			msg += ": " + c.Message
		}
		return &problem{ReasonNodePoolNotReady, msg}
	}
	return nil
}

// fitProblems says, for each machine type in spec order, why no pool node of
// that type can hold one machine: the resource that is short on every node
// (compared with the largest node for it), or, when every resource is there
// on some node but on none all at once, what the first node lacks. Types whose
// pool nodes do not exist are skipped (the node pool's condition names
// missing nodes); a type with machines available but no pool node at all is
// a problem of its own. node returns a pool node, nil when it does not exist.
func fitProblems(g *v1alpha1.MachineGroup, node func(name string) *corev1.Node) []problem {
	var problems []problem
	for i := range g.Spec.MachineTypes {
		t := &g.Spec.MachineTypes[i]
		names := machinegroup.PoolNodes(g, t.Name)
		if len(names) == 0 {
			if t.Available > 0 {
				problems = append(problems, problem{ReasonMachineTypeNoNode,
					fmt.Sprintf("machine type %s has %d available but no node in the pool", t.Name, t.Available)})
			}
			continue
		}
		if p := fitProblem(t, names, node); p != nil {
			problems = append(problems, *p)
		}
	}
	return problems
}

func fitProblem(t *v1alpha1.MachineType, names []string, node func(string) *corev1.Node) *problem {
	var nodes []*corev1.Node
	for _, name := range names {
		if n := node(name); n != nil {
			if len(machinegroup.Shortfalls(t, n.Status.Allocatable)) == 0 {
				return nil
			}
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	need := machinegroup.Resources(t)
	for _, r := range machinegroup.ResourceOrder(t) {
		var largest resource.Quantity
		for _, n := range nodes {
			if a := n.Status.Allocatable[r]; a.Cmp(largest) > 0 {
				largest = a
			}
		}
		if n := need[r]; largest.Cmp(n) < 0 {
			return &problem{ReasonMachineTypeTooLarge, fmt.Sprintf(
				"machine type %s needs %s %s but the largest pool node of that type has %s allocatable",
				t.Name, n.String(), r, largest.String())}
		}
	}
	first := nodes[0]
	s := machinegroup.Shortfalls(t, first.Status.Allocatable)[0]
	return &problem{ReasonMachineTypeTooLarge, fmt.Sprintf(
		"machine type %s fits no pool node of that type: each has some of what it needs, none all of it (node %s has %s %s allocatable, it needs %s)",
		t.Name, first.Name, s.Has.String(), s.Resource, s.Need.String())}
}

// computeStatus is the group's status for the usage of its types (in spec
// order) and the problems found, with the Ready condition's transition time
// kept from cur when its status does not change.
func computeStatus(g *v1alpha1.MachineGroup, usage []v1alpha1.AvailableMachine, problems []problem, now time.Time) v1alpha1.MachineGroupStatus {
	st := v1alpha1.MachineGroupStatus{
		ObservedGeneration: g.Generation,
		NodeCount:          int32(len(g.Spec.NodePools)),
		AvailableMachines:  usage,
	}
	for _, c := range g.Status.Conditions {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
	}
	cond := metav1.Condition{
		Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, Message: readyMessage,
		ObservedGeneration: g.Generation, LastTransitionTime: metav1.NewTime(now),
	}
	if len(problems) > 0 {
		msgs := make([]string, 0, len(problems))
		for _, p := range problems {
			msgs = append(msgs, p.message)
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, problems[0].reason, conditionMessage(msgs)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

// conditionMessage joins messages, cut to what a condition's message may hold.
func conditionMessage(msgs []string) string {
	m := strings.Join(msgs, conditionMessageSeparator)
	if len(m) > maxConditionMessageLength {
		m = strings.ToValidUTF8(m[:maxConditionMessageLength-len(conditionMessageTruncation)], "") + conditionMessageTruncation
	}
	return m
}
