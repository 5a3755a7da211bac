package hpa

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// Pod is the consumers whose targets name one workload object (the same
// apiVersion, kind and name): containers of one pod template. Each replica
// of the pod is one Kubernetes pod, so it needs one node with the sum of the
// consumers' mandatory amounts free and all their features at once
// (OpenStack's numbered request group: one provider). Fit checks, scores
// and reservations take pods; delivery still works per consumer, since each
// consumer mutates its own container.
type Pod struct {
	// Consumers are the pod's consumers in spec order; they point into
	// Resolved.Consumers.
	Consumers []*Consumer
	// Name is the consumers' names joined by "+", as messages name the pod.
	Name string
	// Replicas is the replicas of every one of its consumers: Resolve
	// refuses consumers of one object whose counts disagree.
	Replicas int32
	// Request is one replica of the whole pod as a fit query: the summed
	// mandatory amounts, the union of the features and the tolerations of
	// the pod, or one machine of the machine type of its consumer that takes
	// one. Compile sets it; it is nil in what Resolve returns.
	Request *inventory.Request
	// What names the pod in rejection reasons: "consumer <intent>/<name>"
	// for a pod of one consumer, "consumers <intent>/<a>+<b>" for more.
	// Compile sets it, so that a filter over a large fleet does not build it
	// per cluster.
	What string
	// Devices are the DRA devices each replica needs on its node: its
	// consumers' device requirements, then the requests of the
	// ResourceClaimTemplates its pod template claims. Request counts them.
	Devices []Device
	// ScaleUp says whether the pod's replicas may go to nodes a cluster's
	// autoscaling pools add (the intent's spec.scaleUp).
	ScaleUp bool
	// Split, when the intent divides the replicas among clusters, says how;
	// Replicas is then the total, and a cluster runs its share.
	Split *Split
}

// targetKey identifies the workload object a consumer targets.
type targetKey struct{ apiVersion, kind, name string }

func targetOf(c *Consumer) targetKey {
	return targetKey{c.Target.APIVersion, c.Target.Kind, c.Target.Name}
}

// groupPods puts the consumers into pods by target object, in the order of
// each pod's first consumer, and checks what a pod of several consumers
// needs: the same replica count for all, and a machine type only beside
// consumers of features alone.
//
// A consumer that takes a machine type (mandatory or optional) gets, as a
// guest, the machine's cpu and memory for its container; the machine is a
// reservation pod of that size, so a node has no known room for further
// containers of the same pod. Rather than over-estimate a cluster, a pod that
// would need both is refused.
func groupPods(r *Resolved) ([]Pod, problems) {
	var ps problems
	var pods []Pod
	index := map[targetKey]int{}
	for i := range r.Consumers {
		c := &r.Consumers[i]
		k, ok := index[targetOf(c)]
		if !ok {
			k = len(pods)
			index[targetOf(c)] = k
			pods = append(pods, Pod{Replicas: c.Replicas})
		}
		p := &pods[k]
		if first := p.firstConsumer(); first != nil && first.Replicas != c.Replicas {
			ps.add(ReasonInvalidRequirements, "",
				"consumers %q (%d replicas) and %q (%d replicas) target %s %s, so they are containers of one pod and run as many replicas; give them the same replicas, or leave replicas unset on both to take the workload's",
				first.Name, first.Replicas, c.Name, c.Replicas, c.Target.Kind, c.Target.Name)
		}
		p.Consumers = append(p.Consumers, c)
	}
	for k := range pods {
		p := &pods[k]
		names := make([]string, len(p.Consumers))
		for i, c := range p.Consumers {
			names[i] = c.Name
		}
		p.Name = strings.Join(names, "+")
		if msg := p.machineConflict(); msg != "" {
			ps.add(ReasonInvalidRequirements, "", "%s", msg)
		}
	}
	return pods, ps
}

func (p *Pod) firstConsumer() *Consumer {
	if len(p.Consumers) == 0 {
		return nil
	}
	return p.Consumers[0]
}

// machineConflict says why a pod of several consumers cannot take a machine
// type as it is, or returns "".
func (p *Pod) machineConflict() string {
	if len(p.Consumers) < 2 {
		return ""
	}
	var machine *Consumer
	for _, c := range p.Consumers {
		if takesMachine(c) {
			machine = c
			break
		}
	}
	if machine == nil {
		return ""
	}
	for _, c := range p.Consumers {
		if c == machine {
			continue
		}
		if takesMachine(c) || hasAmounts(c) {
			return fmt.Sprintf("consumers %q and %q target %s %s, one pod, but %q takes a machine type, which leaves no known room on the node for the amounts or machine type of %q; "+
				"keep only features in the other consumers of the pod, or move the amounts into a workload of their own",
				machine.Name, c.Name, c.Target.Kind, c.Target.Name, machine.Name, c.Name)
		}
	}
	return ""
}

// takesMachine reports whether a consumer's container may become a guest of
// a machine type: mandatory, or optional when met.
func takesMachine(c *Consumer) bool {
	if c.MachineType != nil {
		return true
	}
	for k := range c.Optional {
		if c.Optional[k].MachineType != nil {
			return true
		}
	}
	return false
}

// hasAmounts reports whether a consumer asks for any amount, mandatory or
// optional.
func hasAmounts(c *Consumer) bool {
	if len(c.Requests) > 0 {
		return true
	}
	for k := range c.Optional {
		if len(c.Optional[k].Requests) > 0 {
			return true
		}
	}
	return false
}

// podRequest is one replica of the pod as a fit query, with override, when
// not nil, standing for consumer c with one optional requirement met (its
// requests replace c's, and feature joins the others).
func (r *Resolved) podRequest(p *Pod, c *Consumer, requests corev1.ResourceList, feature *corev1.NodeSelectorRequirement,
	machine *v1alpha1.MachineTypeRequirement) (*inventory.Request, error) {
	var features []corev1.NodeSelectorRequirement
	sum := corev1.ResourceList{}
	for _, pc := range p.Consumers {
		features = append(features, pc.Features...)
		if machine == nil && pc.MachineType != nil {
			machine = pc.MachineType
		}
		own := pc.Requests
		if pc == c && requests != nil {
			own = requests
		}
		for name, q := range own {
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
	}
	if feature != nil {
		features = append(features, *feature)
	}
	if machine != nil {
		// groupPods has checked that the others ask for no amounts.
		return inventory.NewMachineRequest(machineType(machine), features)
	}
	// The pod tolerates its template's taints and those of every extended
	// resource any of its containers requests.
	whole := Consumer{Manifest: p.Consumers[0].Manifest, Requests: sum}
	return inventory.NewRequest(sum, features, r.Tolerations(&whole))
}

// Amounts is what the pod's replicas request in all (see Consumer.Amounts).
func (p *Pod) Amounts() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Consumers {
		c.addAmounts(out)
	}
	return out
}
