package framework

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// TestMatchingLabelsAgreesWithTheSelector checks the label index against each selector's own
// Matches, cluster by cluster, for random fleets and selectors of every operator.
func TestMatchingLabelsAgreesWithTheSelector(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{"region", "env", "gpu", "tier"}
	values := []string{"a", "b", "c", "1", "7"}
	ops := []string{"%s=%s", "%s==%s", "%s!=%s", "%s in (%s,b)", "%s notin (%s,c)", "%s", "!%s", "%s>%s", "%s<%s"}
	indexed, total := 0, 0
	for round := range 200 {
		var infos []*ClusterInfo
		for i := range 1 + rng.IntN(150) {
			l := map[string]string{}
			for _, k := range keys {
				if rng.IntN(3) > 0 {
					l[k] = values[rng.IntN(len(values))]
				}
			}
			infos = append(infos, &ClusterInfo{Cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%03d", i), Labels: l}}})
		}
		s := NewSnapshot(SnapshotInput{Clusters: infos})
		var parts []string
		for range rng.IntN(4) {
			op := ops[rng.IntN(len(ops))]
			if strings.Count(op, "%s") == 1 {
				parts = append(parts, fmt.Sprintf(op, keys[rng.IntN(len(keys))]))
			} else if strings.ContainsAny(op, "<>") {
				parts = append(parts, fmt.Sprintf(op, keys[rng.IntN(len(keys))], fmt.Sprint(rng.IntN(9))))
			} else {
				parts = append(parts, fmt.Sprintf(op, keys[rng.IntN(len(keys))], values[rng.IntN(len(values))]))
			}
		}
		sel, err := labels.Parse(strings.Join(parts, ","))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, sel := range []labels.Selector{sel, labels.Nothing(), labels.Everything()} {
			total++
			got, ok := s.MatchingLabels(sel)
			want := NewBitset(len(infos))
			for i, c := range infos {
				if sel.Matches(labels.Set(c.Cluster.Labels)) {
					want.Set(i)
				}
			}
			if !ok {
				if !strings.ContainsAny(sel.String(), "<>") {
					t.Fatalf("round %d: %q not answered from the index", round, sel)
				}
				continue
			}
			indexed++
			if !got.Equal(want) {
				t.Fatalf("round %d: %q matches %v from the index, %v cluster by cluster", round, sel, got.Indexes(), want.Indexes())
			}
		}
	}
	if indexed < total/2 {
		t.Fatalf("only %d of %d selectors answered from the index", indexed, total)
	}
}
