package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of the node pools a report holds.
const (
	// MaxReportedNodePools bounds ClusterInventoryStatus.NodePools.
	MaxReportedNodePools = 16
	// MaxPoolShapes bounds ReportedNodePool.Shapes.
	MaxPoolShapes = 16
	// MaxPoolNodes bounds PoolShape.MaxNodes: more nodes than this of one
	// shape are reported as this many.
	MaxPoolNodes = 1000
)

// Where a pool's shapes come from (ReportedNodePool.ShapesFrom).
const (
	// ShapesFromConfigMap: the agent's ConfigMap of instance types, filtered
	// by the pool's requirements.
	ShapesFromConfigMap = "ConfigMap"
	// ShapesFromNodes: the nodes the pool has launched, one shape per
	// instance type.
	ShapesFromNodes = "Nodes"
)

// ReportedNodePool is an autoscaling pool of a managed cluster (a Karpenter
// NodePool): the nodes it can add, so that the hub can tell a cluster that
// fits now from one that fits once the pool adds nodes.
type ReportedNodePool struct {
	// name of the pool.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// provider that scales the pool: karpenter.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Provider string `json:"provider,omitempty"`

	// ready mirrors the pool's Ready condition: a pool that is not ready
	// launches nothing, and the hub counts no room in it.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// labels every node of the pool gets (its template's labels and the
	// requirements with a single value), as far as the agent reports labels.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// taints of the pool's nodes; startup taints are not listed, since they
	// leave before pods are scheduled.
	// +optional
	// +listType=atomic
	Taints []corev1.Taint `json:"taints,omitempty"`

	// limits of the pool (its spec.limits) and usage, what its nodes have
	// (its status.resources).
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// +optional
	Usage corev1.ResourceList `json:"usage,omitempty"`

	// shapesFrom says where shapes come from: ConfigMap or Nodes; empty when
	// the agent knows no shape the pool can launch, which then adds no room.
	// +optional
	ShapesFrom string `json:"shapesFrom,omitempty"`

	// shapes the pool can launch, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Shapes []PoolShape `json:"shapes,omitempty"`

	// message says what the agent could not read, briefly.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}

// PoolShape is one kind of node a pool can add.
type PoolShape struct {
	// name of the instance type.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// allocatable of one such node.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// labels of such a node besides the pool's, such as its instance type.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// maxNodes is how many of it the pool can add before it reaches one of
	// its limits, at most 1000.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxNodes int32 `json:"maxNodes,omitempty"`
}

// ScaleUpPolicy says whether an intent may be placed on a cluster that has
// no room now but an autoscaling pool that can add it.
// +kubebuilder:validation:Enum=IfNeeded;Never
type ScaleUpPolicy string

const (
	// ScaleUpIfNeeded chooses clusters that fit now first, and clusters that
	// fit once a pool adds nodes only when too few fit now.
	ScaleUpIfNeeded ScaleUpPolicy = "IfNeeded"
	// ScaleUpNever chooses only clusters that fit now.
	ScaleUpNever ScaleUpPolicy = "Never"
)

// DefaultScaleUpMaxWait is how long, by default, pods delivered to a cluster
// that must add nodes may stay unschedulable before the closed loop moves
// them: long enough for a cloud to start a GPU node.
const DefaultScaleUpMaxWait = 10 * time.Minute

// ScaleUp is the intent's scale-up policy.
// +kubebuilder:validation:XValidation:rule="!has(self.maxWait) || (duration(self.maxWait) >= duration('1m') && duration(self.maxWait) <= duration('24h'))",message="maxWait must be between 1m and 24h (10m when left out)"
type ScaleUp struct {
	// policy: IfNeeded (the default) or Never.
	// +optional
	Policy ScaleUpPolicy `json:"policy,omitempty"`
	// maxWait is how long the pods may stay unschedulable on a cluster that
	// can add nodes before they count as stuck (see rescheduling); 10m when
	// left out. It replaces rescheduling's unschedulableFor there when
	// longer.
	// +optional
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
}

// Allows reports whether the intent may wait for a scale-up.
func (s *ScaleUp) Allows() bool { return s == nil || s.Policy != ScaleUpNever }

// Wait is maxWait or its default.
func (s *ScaleUp) Wait() time.Duration {
	if s == nil || s.MaxWait == nil {
		return DefaultScaleUpMaxWait
	}
	return s.MaxWait.Duration
}
