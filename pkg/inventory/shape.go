package inventory

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// shapeKeyOf encodes what nodes of one shape share: schedulability, taints,
// feature labels and allocatable; see appendShapeKey.
func shapeKeyOf(f *nodeFacts) string {
	labels := make([]label, 0, len(f.features))
	for k, v := range f.features {
		labels = append(labels, label{k, v})
	}
	slices.SortFunc(labels, func(a, b label) int { return strings.Compare(a.key, b.key) })
	return string(appendShapeKey(nil, f.schedulable, f.taints, labels, f.allocatable))
}

// appendShapeKey appends the shape key of nodes with these facts; taints
// must be normalized and labels sorted by key. Separators are control
// characters, which label keys and values, taint fields and resource names
// cannot contain, so distinct shapes always get distinct keys. The encoding
// decides shape names (see shapeHash), so it must not change.
func appendShapeKey(b []byte, schedulable bool, taints []corev1.Taint, labels []label, allocatable Vector) []byte {
	if schedulable {
		b = append(b, 'S')
	} else {
		b = append(b, 'U')
	}
	b = append(b, 1)
	for _, t := range taints {
		b = append(b, t.Key...)
		b = append(b, 0)
		b = append(b, t.Value...)
		b = append(b, 0)
		b = append(b, t.Effect...)
		b = append(b, 2)
	}
	b = append(b, 1)
	for _, l := range labels {
		b = append(b, l.key...)
		b = append(b, 0)
		b = append(b, l.value...)
		b = append(b, 2)
	}
	b = append(b, 1)
	return appendAmounts(b, allocatable)
}

// appendAmounts appends name NUL milli STX for each amount of v.
func appendAmounts(b []byte, v Vector) []byte {
	for _, a := range v {
		b = append(b, a.Name...)
		b = append(b, 0)
		b = strconv.AppendInt(b, a.Milli, 10)
		b = append(b, 2)
	}
	return b
}

// shapeHash names a shape after what it is, so the name survives restarts
// of the agent and reorderings of its nodes. Forty bits make a collision
// between a cluster's few shapes negligible; Summarize still disambiguates
// one if it happens.
func shapeHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:5])
}

// shape is the cluster's running state for one node shape: how many nodes it
// has and how many of them have each rounded free vector.
type shape struct {
	key   string
	hash  string
	facts *nodeFacts // of some member; members agree on everything that matters here

	// names are the shape's allocatable resources; alloc and steps are
	// indexed like names, and so is every bucket's free vector, which is
	// possible because all members share allocatable.
	names        []corev1.ResourceName
	alloc, steps []int64

	nodes   int
	buckets map[string]*bucket

	// changed is set when buckets change, and cleared when free and
	// truncated are rendered again from them, for a cap of limit vectors.
	changed   bool
	limit     int
	free      []v1alpha1.FreeVector
	truncated bool
}

// bucket counts the nodes of a shape whose free vector rounds to free.
type bucket struct {
	key   string
	free  []int64
	count int
}

func newShape(f *nodeFacts, cfg *Config) *shape {
	s := &shape{key: f.shapeKey, hash: shapeHash(f.shapeKey), facts: f, buckets: map[string]*bucket{}}
	for _, a := range f.allocatable {
		s.names = append(s.names, a.Name)
		s.alloc = append(s.alloc, a.Milli)
		s.steps = append(s.steps, cfg.step(a.Name))
	}
	return s
}

// addNode counts a member whose pods request requested, and returns the
// bucket it landed in. scratch is reused between calls to avoid garbage in
// the common case where the bucket already exists.
func (s *shape) addNode(requested Vector, scratch *[]byte, scratchFree *[]int64) *bucket {
	free := (*scratchFree)[:0]
	for range s.names {
		free = append(free, 0)
	}
	*scratchFree = free
	j := 0
	for i, name := range s.names {
		for j < len(requested) && requested[j].Name < name {
			j++
		}
		f := s.alloc[i]
		if j < len(requested) && requested[j].Name == name {
			f = max(f-requested[j].Milli, 0)
		}
		free[i] = f - f%s.steps[i]
	}
	buf := (*scratch)[:0]
	for _, f := range free {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(f))
	}
	*scratch = buf
	s.nodes++
	s.changed = true
	if b, ok := s.buckets[string(buf)]; ok {
		b.count++
		return b
	}
	b := &bucket{key: string(buf), free: append([]int64(nil), free...), count: 1}
	s.buckets[b.key] = b
	return b
}

// removeNode takes back a member counted in b.
func (s *shape) removeNode(b *bucket) {
	s.nodes--
	s.changed = true
	b.count--
	if b.count == 0 {
		delete(s.buckets, b.key)
	}
}

// render returns the shape as reported, re-deriving the free summary only
// when members moved since the last call. The result shares nothing with s.
func (s *shape) render(name string, maxVectors int) v1alpha1.NodeShape {
	if s.changed || s.limit != maxVectors {
		buckets := make([]bucket, 0, len(s.buckets))
		for _, b := range s.buckets {
			buckets = append(buckets, *b)
		}
		groups, truncated := compact(buckets, s.alloc, maxVectors)
		s.free = make([]v1alpha1.FreeVector, len(groups))
		for i, g := range groups {
			s.free[i] = v1alpha1.FreeVector{Count: int32Count(g.count), Resources: s.list(g.free)}
		}
		s.truncated = truncated
		s.changed = false
		s.limit = maxVectors
	}
	out := v1alpha1.NodeShape{
		Name:        name,
		NodeCount:   int32Count(s.nodes),
		Schedulable: s.facts.schedulable,
		Labels:      s.facts.features,
		Taints:      s.facts.taints,
		Allocatable: s.facts.allocatable.List(),
		Free:        s.free,
		Truncated:   s.truncated,
	}
	return *out.DeepCopy()
}

// list renders a free vector indexed like s.names, leaving out zeros.
func (s *shape) list(free []int64) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i, f := range free {
		if f > 0 {
			list[s.names[i]] = quantity(s.names[i], f)
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
}
