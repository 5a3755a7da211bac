package inventory

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// DefaultFeatureLabelPrefixes select the node labels that describe hardware
// and placement: Node Feature Discovery, NVIDIA GPU feature discovery, the
// instance type, topology, and fleetfit's own labels.
var DefaultFeatureLabelPrefixes = []string{
	"feature.node.kubernetes.io/",
	"nvidia.com/gpu.",
	"node.kubernetes.io/instance-type",
	"topology.kubernetes.io/",
	"fleetfit.io/",
}

// Defaults for the size of free summaries. A free vector of five resources
// takes about 100 bytes of JSON; a budget of 64 vectors keeps a report of
// twenty busy shapes near 13 KB, while a cluster of a few shapes still gets
// sixteen vectors per shape.
const (
	DefaultMaxFreeVectorsPerShape = 16
	DefaultMaxFreeVectors         = 64
)

// Config says what the agent reports and how coarsely. The agent that writes
// a ClusterInventory owns its Config; the hub needs none of it, since the
// summary is self-describing.
type Config struct {
	// FeatureLabelPrefixes select the node labels reported as features: a
	// label is reported when its key starts with one of them (an exact key
	// such as node.kubernetes.io/instance-type is its own prefix). Nil or
	// empty reports no labels.
	FeatureLabelPrefixes []string

	// FeatureLabelKeys are label keys reported as features besides those
	// the prefixes select: the keys the hub asks for (ClusterInventory
	// spec.labelKeys). Reports say which prefixes and keys they cover, so
	// the hub never takes a label the agent does not report for one the node
	// lacks.
	FeatureLabelKeys []string

	// RoundingSteps give, per resource, the step that free amounts are
	// rounded down to in node shapes. Resources not listed use one whole unit,
	// except hugepages-*, which use the step of memory when it is listed.
	// Coarser steps merge more nodes into one free vector and can only make
	// the summary claim less.
	RoundingSteps map[corev1.ResourceName]resource.Quantity

	// MaxFreeVectorsPerShape caps the free vectors of one shape; it must be
	// at least 1.
	MaxFreeVectorsPerShape int

	// MaxFreeVectors, when positive, is a budget shared by all shapes: each
	// shape gets MaxFreeVectors / (number of shapes) vectors, at least one
	// and at most MaxFreeVectorsPerShape, so the report stays small when a
	// cluster has many shapes.
	MaxFreeVectors int
}

// vectorsPerShape is the cap of each shape's free summary when there are
// shapes shapes.
func (c Config) vectorsPerShape(shapes int) int {
	n := c.MaxFreeVectorsPerShape
	if c.MaxFreeVectors > 0 && shapes > 0 {
		n = min(n, max(1, c.MaxFreeVectors/shapes))
	}
	return n
}

// DefaultConfig returns the defaults: the default prefixes; cpu rounded to
// 100m; memory, hugepages and ephemeral storage to 64Mi; other resources to
// whole units; DefaultMaxFreeVectorsPerShape vectors per shape within a
// budget of DefaultMaxFreeVectors.
func DefaultConfig() Config {
	return Config{
		FeatureLabelPrefixes: append([]string(nil), DefaultFeatureLabelPrefixes...),
		RoundingSteps: map[corev1.ResourceName]resource.Quantity{
			corev1.ResourceCPU:              resource.MustParse("100m"),
			corev1.ResourceMemory:           resource.MustParse("64Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("64Mi"),
		},
		MaxFreeVectorsPerShape: DefaultMaxFreeVectorsPerShape,
		MaxFreeVectors:         DefaultMaxFreeVectors,
	}
}

// Validate returns every problem with c, joined.
func (c Config) Validate() error {
	var errs []error
	if c.MaxFreeVectorsPerShape < 1 {
		errs = append(errs, fmt.Errorf("maxFreeVectorsPerShape must be at least 1, got %d", c.MaxFreeVectorsPerShape))
	}
	if c.MaxFreeVectors < 0 {
		errs = append(errs, fmt.Errorf("maxFreeVectors must not be negative, got %d", c.MaxFreeVectors))
	}
	for name, q := range c.RoundingSteps {
		if MilliOf(q) <= 0 {
			errs = append(errs, fmt.Errorf("rounding step of %s must be positive, got %s", name, q.String()))
		}
	}
	for i, p := range c.FeatureLabelPrefixes {
		if p == "" {
			errs = append(errs, fmt.Errorf("featureLabelPrefixes[%d] is empty, which would report every label", i))
		}
	}
	errs = append(errs, validateLabelKeys(c.FeatureLabelPrefixes, c.FeatureLabelKeys))
	return errors.Join(errs...)
}

// Bounds of what a report says it covers, those of the ClusterInventory
// schema: a longer list could not be written.
const (
	maxFeatureLabelPrefixes = 64
	maxLabelKeyLength       = 317
)

func validateLabelKeys(prefixes, keys []string) error {
	var errs []error
	if len(prefixes) > maxFeatureLabelPrefixes {
		errs = append(errs, fmt.Errorf("featureLabelPrefixes has %d entries, more than %d", len(prefixes), maxFeatureLabelPrefixes))
	}
	for i, p := range prefixes {
		if len(p) > maxLabelKeyLength {
			errs = append(errs, fmt.Errorf("featureLabelPrefixes[%d] is longer than %d characters", i, maxLabelKeyLength))
		}
	}
	if len(keys) > v1alpha1.MaxLabelKeys {
		errs = append(errs, fmt.Errorf("featureLabelKeys has %d entries, more than %d", len(keys), v1alpha1.MaxLabelKeys))
	}
	for i, k := range keys {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("featureLabelKeys[%d] %q is not a label key: %s", i, k, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

// step returns the rounding step of name in milli-units.
func (c Config) step(name corev1.ResourceName) int64 {
	if q, ok := c.RoundingSteps[name]; ok {
		return MilliOf(q)
	}
	if isHugePages(name) {
		if q, ok := c.RoundingSteps[corev1.ResourceMemory]; ok {
			return MilliOf(q)
		}
	}
	return 1000
}
