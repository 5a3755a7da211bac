package reporter

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// ScoreName is the name of the AddOnPlacementScore the agent keeps in its
// cluster's namespace; Placements refer to it as
// {type: AddOn, addOn: {resourceName: fleetfit-resources, scoreName: cpuFree}}.
const ScoreName = "fleetfit-resources"

// ResourceGPU is the NVIDIA device plugin's resource.
const ResourceGPU corev1.ResourceName = machinegroup.DefaultGPUType

// scoredResources are the resources scored, in the order the scores are
// written; each gives two scores, <prefix>Free and <prefix>FreeBestNode.
var scoredResources = []struct {
	prefix string
	name   corev1.ResourceName
}{
	{"cpu", corev1.ResourceCPU},
	{"memory", corev1.ResourceMemory},
	{"gpu", ResourceGPU},
}

// ScoreReference gives the amounts that score 100. A resource not listed is
// scored against the cluster itself: its total allocatable for the
// cluster-wide score, and the largest allocatable of one schedulable node for
// the best-node score. A fixed reference makes scores comparable across
// clusters of different sizes; the default makes them a utilisation figure.
type ScoreReference struct {
	Cluster corev1.ResourceList
	Node    corev1.ResourceList
}

// Scores maps free amounts linearly onto OCM's score range:
//
//	score = round(−100 + 200 × free / reference), clamped to [−100, 100]
//
// so nothing free scores −100, half the reference 0, and the reference or
// more 100. A resource with no reference (the cluster has none of it) scores
// −100. Best-node amounts come from the report's free summaries through
// inventory.View, counting only schedulable nodes without taints a plain pod
// does not tolerate, because that is where a pod asking for the resource can
// go. The result is in the fixed order of scoredResources.
func Scores(st *v1alpha1.ClusterInventoryStatus, ref ScoreReference) []clusterv1alpha1.AddOnPlacementScoreItem {
	view := inventory.NewView(st)
	anyNode, _ := inventory.NewSelector(nil, nil) // cannot fail without requirements
	items := make([]clusterv1alpha1.AddOnPlacementScoreItem, 0, 2*len(scoredResources))
	for _, r := range scoredResources {
		var free, alloc resource.Quantity
		for _, t := range st.Resources {
			if t.Name == r.name {
				free, alloc = t.Free, t.Allocatable
			}
		}
		clusterRef, ok := ref.Cluster[r.name]
		if !ok {
			clusterRef = alloc
		}
		nodeRef, ok := ref.Node[r.name]
		if !ok {
			nodeRef = inventory.LargestAllocatable(st, r.name, true)
		}
		best, _ := view.FreeOnBestNode(r.name, anyNode)
		items = append(items,
			clusterv1alpha1.AddOnPlacementScoreItem{Name: r.prefix + "Free", Value: linearScore(free, clusterRef)},
			clusterv1alpha1.AddOnPlacementScoreItem{Name: r.prefix + "FreeBestNode", Value: linearScore(best, nodeRef)},
		)
	}
	return items
}

// linearScore is the mapping documented on Scores. A ratio is a score, not
// an amount, so a float is precise enough here. The amounts are read
// saturating first, so that absurd ones (1e400 free of 1e400) give a finite
// ratio and never a NaN or an infinity to convert.
func linearScore(free, reference resource.Quantity) int32 {
	ref := inventory.MilliOf(reference)
	if ref <= 0 {
		return -100
	}
	s := math.Round(-100 + 200*float64(inventory.MilliOf(free))/float64(ref))
	return int32(max(-100, min(100, s)))
}

// scoreWriter keeps one AddOnPlacementScore current, renewing validUntil
// when half the validity has passed even if the scores did not change.
type scoreWriter struct {
	client   clusterclient.Interface
	cluster  string
	object   string
	validity time.Duration
	// scores computes the scores of a report.
	scores func(*v1alpha1.ClusterInventoryStatus) []clusterv1alpha1.AddOnPlacementScoreItem

	last *clusterv1alpha1.AddOnPlacementScore
}

func newScoreWriter(client clusterclient.Interface, opts Options, object string, scores func(*v1alpha1.ClusterInventoryStatus) []clusterv1alpha1.AddOnPlacementScoreItem) *scoreWriter {
	return &scoreWriter{client: client, cluster: opts.ClusterName, object: object, validity: opts.ScoreValidity, scores: scores}
}

func (w *scoreWriter) name() string { return "AddOnPlacementScore " + w.object }

func (w *scoreWriter) sync(ctx context.Context, st *syncState) error {
	scores := w.scores(&st.report)
	scoresAPI := w.client.ClusterV1alpha1().AddOnPlacementScores(w.cluster)
	if w.last == nil {
		cur, err := scoresAPI.Get(ctx, w.object, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = scoresAPI.Create(ctx, &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Name: w.object, Namespace: w.cluster}}, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("reading or creating %s/%s: %w", w.cluster, w.object, err)
		}
		w.last = cur
	}
	renewAt := st.now.Add(w.validity / 2)
	if vu := w.last.Status.ValidUntil; vu != nil && vu.Time.After(renewAt) && apiequality.Semantic.DeepEqual(w.last.Status.Scores, scores) {
		return nil
	}
	next := w.last.DeepCopy()
	next.Status.Scores = scores
	next.Status.ValidUntil = &metav1.Time{Time: st.now.Add(w.validity)}
	updated, err := scoresAPI.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		w.last = nil
		return fmt.Errorf("updating status of %s/%s: %w", w.cluster, w.object, err)
	}
	w.last = updated
	klog.FromContext(ctx).V(logs.Changes).Info("Wrote AddOnPlacementScore", "name", w.object, "scores", scores, "validUntil", next.Status.ValidUntil)
	return nil
}
