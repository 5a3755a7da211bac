package hpa

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// Split is spec.split in resolved form: the intent's one pod (validation
// refuses a split of several objects) runs Total replicas in all, divided
// among the decided clusters, each at least Min.
type Split struct {
	Policy       v1alpha1.SplitPolicy
	Total, Min   int32
	AllOrNothing bool
	// Weights are the static weights of SplitByWeights, in spec order.
	Weights []Weight
}

// Weight is a compiled entry of spec.split.weights.
type Weight struct {
	Selector labels.Selector
	Weight   int32
}

// WeightOf returns the weight of the first entry whose selector matches the
// cluster's labels, 0 when none does (or the split is not by weights, 1).
func (s *Split) WeightOf(clusterLabels map[string]string) int32 {
	if s.Policy != v1alpha1.SplitByWeights {
		return 1
	}
	for _, w := range s.Weights {
		if w.Selector.Matches(labels.Set(clusterLabels)) {
			return w.Weight
		}
	}
	return 0
}

// resolveSplit resolves spec.split once the pods are known: the total is the
// pod's replicas.
func resolveSplit(in *v1alpha1.ReplicaSplit, pods []Pod) (*Split, problems) {
	if in == nil {
		return nil, nil
	}
	var ps problems
	if len(pods) != 1 {
		ps.add(ReasonInvalidRequirements, "", "split divides the replicas of one workload object, but the consumers target %d; give each other workload an HPAIntent of its own", len(pods))
		return nil, ps
	}
	s := &Split{Policy: in.Policy(), Total: pods[0].Replicas, Min: in.MinShare(), AllOrNothing: in.AllOrNothing}
	if s.Min > s.Total {
		ps.add(ReasonInvalidRequirements, "", "split.minReplicas %d is more than the %d replicas to divide, so no cluster could get its smallest share; lower minReplicas or raise the replicas", s.Min, s.Total)
	}
	for i := range in.Weights {
		sel, err := metav1.LabelSelectorAsSelector(&in.Weights[i].ClusterSelector)
		if err != nil {
			ps.add(ReasonInvalidRequirements, "", "split.weights[%d].clusterSelector: %v", i, err)
			continue
		}
		s.Weights = append(s.Weights, Weight{Selector: sel, Weight: in.Weights[i].Weight})
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return s, nil
}

// PerCluster is how many replicas of the pod one cluster must hold to be
// chosen: all of them, or the smallest share when the intent splits them.
func (p *Pod) PerCluster() int32 {
	if p.Split != nil {
		return p.Split.Min
	}
	return p.Replicas
}

// AmountsOf is what n replicas of the pod request in all (see Amounts).
func (p *Pod) AmountsOf(n int32) corev1.ResourceList {
	out := corev1.ResourceList{}
	if n <= 0 {
		return out
	}
	for _, c := range p.Consumers {
		if c.MachineType != nil {
			name := inventory.MachineResourceName(machineType(c.MachineType))
			sum := out[name]
			sum.Add(*resource.NewQuantity(int64(n), resource.DecimalSI))
			out[name] = sum
		}
		for name, q := range c.Requests {
			if q.IsZero() {
				continue
			}
			total := q.DeepCopy()
			total.Mul(int64(n))
			sum := out[name]
			sum.Add(total)
			out[name] = sum
		}
	}
	addDevices(out, p.Devices, n)
	return out
}

// ReplicasOn is how many replicas of the pod the cluster runs: the cluster's
// share in the intent's status for a split, else all of them.
func (p *Pod) ReplicasOn(status *v1alpha1.HPAIntentStatus, cluster string) int32 {
	if p.Split == nil {
		return p.Replicas
	}
	share, _ := status.Split.ShareOf(cluster)
	return share
}

// SplitOf returns the intent's split, nil when it runs every replica on each
// decided cluster.
func (in *Intent) SplitOf() *Split {
	if len(in.Pods) == 1 {
		return in.Pods[0].Split
	}
	return nil
}

func (s *Split) String() string {
	return fmt.Sprintf("%d replicas by %s, at least %d per cluster", s.Total, s.Policy, s.Min)
}
