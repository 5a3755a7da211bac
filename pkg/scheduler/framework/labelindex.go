package framework

import (
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// labelIndex lists, for each label key and value, the indexes of the clusters with that
// label, in index order. It is built on first use and shared by every snapshot of the same
// fleet index, which changes whenever a cluster's labels do.
type labelIndex struct {
	once   sync.Once
	values map[string]map[string][]int32
}

func (s *Snapshot) labelPostings() map[string]map[string][]int32 {
	s.labelIdx.once.Do(func() {
		values := map[string]map[string][]int32{}
		for i, c := range s.clusters {
			for k, v := range c.Cluster.Labels {
				if values[k] == nil {
					values[k] = map[string][]int32{}
				}
				values[k][v] = append(values[k][v], int32(i))
			}
		}
		s.labelIdx.values = values
	})
	return s.labelIdx.values
}

// MatchingLabels returns the clusters whose labels sel matches, with sel's own semantics
// (labels.Requirement), answered from an index of the fleet's labels instead of cluster by
// cluster. It reports false, and nothing, when sel has a requirement the index cannot answer
// (Gt, Lt): the caller then matches each cluster itself.
func (s *Snapshot) MatchingLabels(sel labels.Selector) (*Bitset, bool) {
	n := len(s.clusters)
	reqs, selectable := sel.Requirements()
	if !selectable {
		return NewBitset(n), true // labels.Nothing()
	}
	index := s.labelPostings()
	out := NewFullBitset(n)
	for _, r := range reqs {
		byValue := index[r.Key()]
		with := NewBitset(n)
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In, selection.NotEquals, selection.NotIn:
			for v := range r.Values() {
				for _, i := range byValue[v] {
					with.Set(int(i))
				}
			}
		case selection.Exists, selection.DoesNotExist:
			for _, members := range byValue {
				for _, i := range members {
					with.Set(int(i))
				}
			}
		default:
			return nil, false
		}
		switch r.Operator() {
		case selection.NotEquals, selection.NotIn, selection.DoesNotExist:
			// Also true of clusters without the key, as labels.Requirement has it.
			out.AndNot(with)
		default:
			out.And(with)
		}
	}
	return out, true
}
