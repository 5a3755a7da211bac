// Package clusterclaims keeps a few ClusterClaims on the managed cluster with
// slow-changing facts about its hardware, from the agent's own report
// (pkg/inventory), so that OCM's registration agent copies them into the
// ManagedCluster's status.clusterClaims (and, where OCM's ClusterProfile
// feature is on, into the ClusterProfile's properties), and OCM's own
// placement can select clusters by hardware with a claimSelector or CEL.
//
// Only facts are claimed, never free amounts, which change with every pod
// (KEP-4322 asks the same of ClusterProfile properties), and the claims are
// written at most once per Options.MinInterval (30s by default):
//
//   - node-count.fleetfit.io: the number of nodes, e.g. "12".
//   - gpu-products.fleetfit.io: the GPU models of the nodes (the model labels
//     of inventory.GPUs, nvidia.com/gpu.product among them), sorted and
//     comma-separated, e.g. "A100,Tesla-T4"; absent without GPUs.
//   - resources.fleetfit.io: compact JSON with, per resource, the cluster's
//     allocatable total and the largest allocatable of one node, as Kubernetes
//     quantity strings: {"allocatable":{"cpu":"96","memory":"384Gi",
//     "nvidia.com/gpu":"10"},"largestNode":{"cpu":"32","memory":"128Gi",
//     "nvidia.com/gpu":"4"}}. OCM's CEL has parseJSON() and Kubernetes'
//     quantity library, so a Placement compares them exactly, in any unit:
//     quantity(v.parseJSON().largestNode.memory).isGreaterThan(quantity("64Gi")).
//   - <feature>.node.fleetfit.io: one per notable node feature (see
//     FeatureClaimName), valued with the label's distinct values on the
//     cluster's nodes, sorted and comma-separated, e.g.
//     cpu-cpuid.avx512f.node.fleetfit.io=true.
//
// Notable features are the node labels the agent reports as features (its
// --feature-prefixes and the keys the hub asks for), except the GPU product
// labels: first the keys the hub asks for, then the others by key, as many
// as Options.MaxClaims leaves room for. OCM's registration agent exposes at
// most 20 custom claims by default (sorted by name; the rest are dropped with
// an event); the default of 15 leaves room for others. A Klusterlet with
// fleetfit.io in spec.registrationConfiguration.clusterClaimConfiguration.
// reservedClusterClaimSuffixes exposes all of fleetfit's claims outside that
// limit.
//
// The claims carry the label ManagedByLabel; only claims with it are updated
// or deleted, so claims of others, even with the same names, are never
// touched.
package clusterclaims

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// Names of the claims that do not depend on the nodes' labels.
const (
	NodeCountClaim   = "node-count.fleetfit.io"
	GPUProductsClaim = "gpu-products.fleetfit.io"
	ResourcesClaim   = "resources.fleetfit.io"
	// FeatureClaimSuffix ends the name of every feature's claim.
	FeatureClaimSuffix = ".node.fleetfit.io"
)

// ManagedByLabel, with the value ManagedBy, marks the claims the agent keeps.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "fleetfit-agent"
)

// MaxValueLength is the longest value the ClusterClaim CRD accepts.
const MaxValueLength = 1024

// Bounds of Options.MaxClaims: the three fixed claims at least, and no more
// than OCM exposes by default.
const (
	MinClaims     = 3
	MaxClaims     = 20
	DefaultClaims = 15
)

// gpuProductLabels are the node labels that name a node's GPU model.
var gpuProductLabels = func() []string {
	out := make([]string, 0, len(inventory.GPUs))
	for _, d := range inventory.GPUs {
		out = append(out, d.ModelLabel)
	}
	return out
}()

// nfdPrefix is Node Feature Discovery's label prefix, left out of claim names
// because every NFD feature shares it.
const nfdPrefix = "feature.node.kubernetes.io/"

// Claim is one ClusterClaim's name and value.
type Claim struct {
	Name, Value string
}

// Desired returns the claims for a report, sorted by name: the fixed ones,
// then at most maxClaims in all. A claim whose value would be empty or longer
// than MaxValueLength is left out.
func Desired(st *v1alpha1.ClusterInventoryStatus, maxClaims int) []Claim {
	maxClaims = min(max(maxClaims, MinClaims), MaxClaims)
	values := featureValues(st)
	claims := []Claim{{Name: NodeCountClaim, Value: strconv.Itoa(int(st.NodeCount))}}
	var products []string
	for _, key := range gpuProductLabels {
		products = append(products, values[key]...)
	}
	slices.Sort(products)
	if v := strings.Join(slices.Compact(products), ","); v != "" && len(v) <= MaxValueLength {
		claims = append(claims, Claim{Name: GPUProductsClaim, Value: v})
	}
	if v := resourcesValue(st); v != "" {
		claims = append(claims, Claim{Name: ResourcesClaim, Value: v})
	}

	var asked []string
	if st.ReportedLabels != nil {
		asked = st.ReportedLabels.Keys
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		if !slices.Contains(gpuProductLabels, k) {
			keys = append(keys, k)
		}
	}
	// The keys the hub asks for first (HPAIntents require them), then the
	// others by key.
	slices.SortFunc(keys, func(a, b string) int {
		if ia, ib := slices.Contains(asked, a), slices.Contains(asked, b); ia != ib {
			if ia {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	taken := map[string]bool{}
	for _, key := range keys {
		if len(claims) >= maxClaims {
			break
		}
		name, ok := FeatureClaimName(key)
		value := strings.Join(values[key], ",")
		if !ok || taken[name] || value == "" || len(value) > MaxValueLength {
			continue
		}
		taken[name] = true
		claims = append(claims, Claim{Name: name, Value: value})
	}
	slices.SortFunc(claims, func(a, b Claim) int { return strings.Compare(a.Name, b.Name) })
	return claims
}

// featureValues returns the distinct values of each reported feature label
// over the report's node shapes, sorted.
func featureValues(st *v1alpha1.ClusterInventoryStatus) map[string][]string {
	values := map[string][]string{}
	for _, s := range st.NodeShapes {
		for k, v := range s.Labels {
			if !slices.Contains(values[k], v) {
				values[k] = append(values[k], v)
			}
		}
	}
	for _, v := range values {
		slices.Sort(v)
	}
	return values
}

// FeatureClaimName returns the claim name of a node label key: the key
// without Node Feature Discovery's prefix, lower-cased, with '/' and '_'
// made '.' and '-' and what a DNS subdomain cannot hold dropped, then
// FeatureClaimSuffix: feature.node.kubernetes.io/cpu-cpuid.AVX512F gives
// cpu-cpuid.avx512f.node.fleetfit.io, topology.kubernetes.io/zone gives
// topology.kubernetes.io.zone.node.fleetfit.io. It returns false when no
// valid name results. Keys that differ only in case or in those characters
// share a name; the first in Desired's order gets the claim.
func FeatureClaimName(key string) (string, bool) {
	key = strings.ToLower(strings.TrimPrefix(key, nfdPrefix))
	key = strings.NewReplacer("/", ".", "_", "-").Replace(key)
	var segments []string
	for seg := range strings.SplitSeq(key, ".") {
		seg = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return -1
		}, seg)
		if seg = strings.Trim(seg, "-"); seg != "" {
			segments = append(segments, seg)
		}
	}
	if len(segments) == 0 {
		return "", false
	}
	name := strings.Join(segments, ".") + FeatureClaimSuffix
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", false
	}
	return name, true
}

// resourcesJSON is the value of ResourcesClaim.
type resourcesJSON struct {
	Allocatable map[corev1.ResourceName]string `json:"allocatable"`
	LargestNode map[corev1.ResourceName]string `json:"largestNode"`
}

// resourcesValue renders ResourcesClaim's value. pods and resources of which
// the cluster has none are left out; when the JSON would be too long for a
// claim, resources are dropped from the least telling on: first those that
// are neither cpu, memory nor extended, then extended ones by name from the
// last.
func resourcesValue(st *v1alpha1.ClusterInventoryStatus) string {
	var names []corev1.ResourceName
	for _, t := range st.Resources {
		if t.Name != corev1.ResourcePods && t.Allocatable.Sign() > 0 {
			names = append(names, t.Name)
		}
	}
	rank := func(n corev1.ResourceName) int {
		switch {
		case n == corev1.ResourceCPU:
			return 0
		case n == corev1.ResourceMemory:
			return 1
		case inventory.IsExtendedResource(n):
			return 2
		}
		return 3
	}
	slices.SortStableFunc(names, func(a, b corev1.ResourceName) int { return rank(a) - rank(b) })
	for ; len(names) > 0; names = names[:len(names)-1] {
		v := resourcesJSON{Allocatable: map[corev1.ResourceName]string{}, LargestNode: map[corev1.ResourceName]string{}}
		for _, t := range st.Resources {
			if slices.Contains(names, t.Name) {
				v.Allocatable[t.Name] = t.Allocatable.String()
				largest := inventory.LargestAllocatable(st, t.Name, false)
				v.LargestNode[t.Name] = largest.String()
			}
		}
		// Maps marshal with sorted keys, so the value is stable.
		b, err := json.Marshal(v)
		if err == nil && len(b) <= MaxValueLength {
			return string(b)
		}
	}
	return ""
}
