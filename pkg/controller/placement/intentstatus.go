package placement

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/retry"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

// reserve records, for each cluster the placement newly decides, what its intents will use
// there, and forgets the reservations of clusters it no longer decides.
func (c *Controller) reserve(p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent, before []string, after []scheduler.Decision, now time.Time) {
	Reserve(c.cache, p, intents, before, after, now, c.reservationTimeout())
}

// Reserve records in the cache, for each cluster that a placement's cycle newly decides (in
// after, not in before), what its intents will use there until timeout, and forgets the
// reservations of clusters it no longer decides. The next cycles of other placements see the
// capacity as taken.
func Reserve(c *cache.Cache, p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent, before []string, after []scheduler.Decision, now time.Time, timeout time.Duration) {
	key := p.Namespace + "/" + p.Name
	kept := sets.New[string]()
	for _, d := range after {
		kept.Insert(d.ClusterName)
	}
	for _, name := range before {
		if !kept.Has(name) {
			c.Unreserve(name, key)
		}
	}
	if len(intents) == 0 {
		return
	}
	added := kept.Difference(sets.New(before...))
	if added.Len() == 0 {
		return
	}
	type intentPod struct {
		pod    *hpa.Pod
		status *fleetfitv1alpha1.HPAIntentStatus
	}
	var pods []intentPod
	for _, in := range intents {
		compiled, err := c.Intent(in)
		if err != nil {
			return // validation reports it; the cycle would have failed first
		}
		for i := range compiled.Pods {
			pods = append(pods, intentPod{&compiled.Pods[i], &in.Status})
		}
	}
	for _, name := range sets.List(added) {
		base := framework.RequestedTotals(c.Inventory(name))
		rs := make([]framework.Reservation, 0, len(pods))
		for _, ip := range pods {
			// A split pod holds its share there (intents carry the cycle's status).
			replicas := ip.pod.ReplicasOn(ip.status, name)
			if replicas <= 0 {
				continue
			}
			rs = append(rs, framework.Reservation{
				Placement: key, Request: ip.pod.Request, Replicas: int64(replicas),
				Amounts: ip.pod.AmountsOf(replicas), Base: base, Until: now.Add(timeout),
			})
		}
		c.Reserve(name, key, rs, now)
	}
}

// maxListed is how many clusters or reasons a condition message names.
const maxListed = 5

// updateIntents writes the status a cycle gave each intent (planned, in the same order as
// intents), where it changed.
func (c *Controller) updateIntents(ctx context.Context, intents, planned []*fleetfitv1alpha1.HPAIntent) error {
	var errs []error
	for i, in := range intents {
		if equality.Semantic.DeepEqual(planned[i].Status, in.Status) {
			continue
		}
		if err := c.writeIntentStatus(ctx, planned[i]); err != nil {
			errs = append(errs, fmt.Errorf("updating status of HPAIntent %s/%s: %w", in.Namespace, in.Name, err))
			continue
		}
		c.scheduledWrites.Store(in.UID, planned[i].Status.ScheduledPlacement)
	}
	return errors.Join(errs...)
}

// writeIntentStatus writes the status fields the placement controller owns — the Scheduled
// condition, candidates, scheduledPlacement and reservations — onto the intent. The
// validation and action controllers write other fields of the same status; on a conflict with
// them, the fields are put onto the latest object and written again at once, rather than the
// whole cycle waiting for a retry.
func (c *Controller) writeIntentStatus(ctx context.Context, planned *fleetfitv1alpha1.HPAIntent) error {
	intents := c.fleetfit.FleetfitV1alpha1().HPAIntents(planned.Namespace)
	want := planned
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		_, err := intents.UpdateStatus(ctx, want, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
		latest, getErr := intents.Get(ctx, planned.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if latest.Generation != planned.Generation {
			return err // the spec changed: the next cycle computes a new status
		}
		latest = latest.DeepCopy()
		if cond := meta.FindStatusCondition(planned.Status.Conditions, fleetfitv1alpha1.ConditionScheduled); cond != nil {
			meta.SetStatusCondition(&latest.Status.Conditions, *cond)
		}
		latest.Status.Candidates = planned.Status.Candidates
		latest.Status.ScheduledPlacement = planned.Status.ScheduledPlacement
		latest.Status.Reservations = planned.Status.Reservations
		want = latest
		return err
	})
}

// withWrittenScheduledPlacement returns the intents as the next cycle must see them: an intent
// whose status.scheduledPlacement this controller has written, but whose informer copy does
// not show it yet, is replaced by a copy that does. Without it, the cycle right after the
// first would take an intent that has shaped its placement for a new one (see
// framework.Request.KeepsDecided) and check the clusters it chose in full again.
func (c *Controller) withWrittenScheduledPlacement(intents []*fleetfitv1alpha1.HPAIntent) []*fleetfitv1alpha1.HPAIntent {
	out, copied := intents, false
	for i, in := range intents {
		v, ok := c.scheduledWrites.Load(in.UID)
		if !ok || v.(string) == in.Status.ScheduledPlacement {
			continue
		}
		if !copied {
			out, copied = slices.Clone(intents), true
		}
		cp := *in
		cp.Status.ScheduledPlacement = v.(string)
		out[i] = &cp
	}
	return out
}

// intentStatus is an intent's status after a cycle of its placement: the Scheduled condition
// and, per consumer, the clusters that pass every other filter and where that consumer's
// replicas fit, as an allow or a deny list, whichever is shorter (EMCO's partition
// candidates). changed is false when the status stays as it is (also when the profile has
// no HardwareFit or the intent does not resolve).
func intentStatus(in *fleetfitv1alpha1.HPAIntent, p *clusterv1beta1.Placement, req *framework.Request, res *scheduler.Result) (status *fleetfitv1alpha1.HPAIntentStatus, changed bool) {
	snap := res.Snapshot()
	eligible, passed := res.Before(framework.HardwareFitName), res.After(framework.HardwareFitName)
	if eligible == nil || passed == nil {
		return &in.Status, false // the profile has no HardwareFit: there are no candidates to report
	}
	compiled, err := snap.Intent(in)
	if err != nil {
		return &in.Status, false
	}
	// Only the clusters HardwareFit rejected need a look per pod: where all pods fit together,
	// each fits on its own. The consumers of one pod share its candidates.
	rejected := eligible.Clone()
	rejected.AndNot(passed)
	status = in.Status.DeepCopy()
	status.Candidates = nil
	budget := maxCandidateNames
	keep := req.KeepsDecided()
	allows := make(map[*hpa.Consumer]*framework.Bitset, len(compiled.Consumers))
	// Where the placement's only pod is this one, fitting alone is fitting together.
	alone := len(compiled.Pods) == 1 && onePod(req, snap)
	for k := range compiled.Pods {
		p := &compiled.Pods[k]
		one := []*hpa.Pod{p}
		allow := passed.Clone()
		if !alone {
			rejected.ForEach(func(i int) {
				if !backedOff(req, snap.Cluster(i).Name()) && snap.Cluster(i).HardwareFits(one, req.Key(), keep && req.Decided.Has(i), req.Now) {
					allow.Set(i)
				}
			})
		}
		for _, cs := range p.Consumers {
			allows[cs] = allow
		}
	}
	for k := range compiled.Consumers {
		cs := &compiled.Consumers[k]
		cc := candidates(snap, cs, eligible, allows[cs], min(budget, maxCandidatesPerConsumer))
		budget -= len(cc.Clusters)
		status.Candidates = append(status.Candidates, cc)
	}
	status.Split = splitStatus(in, res)
	cond := scheduledCondition(in, p, res.Decisions(), res)
	if cond.Status == metav1.ConditionTrue {
		cond.Message = textcap.Truncate(cond.Message+scaleUpNotes(snap, req, compiled, res.Decisions()), textcap.MaxMessage)
	}
	if status.Split != nil {
		cond = splitCondition(cond, p, status.Split)
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	status.ScheduledPlacement = p.Name
	return status, !equality.Semantic.DeepEqual(*status, in.Status)
}

// The candidate lists are bounded, so that an intent's status stays far below what the API
// server accepts in one write whatever the size of the fleet and the number of consumers: each
// list names at most maxCandidatesPerConsumer clusters, and all of them together at most
// maxCandidateNames; what is left out is counted in omittedClusters.
const (
	maxCandidatesPerConsumer = 100
	maxCandidateNames        = 1000
)

// candidates is a consumer's allow or deny list, whichever is shorter, naming at most limit
// clusters.
func candidates(snap *framework.Snapshot, cs *hpa.Consumer, eligible, allow *framework.Bitset, limit int) fleetfitv1alpha1.ConsumerCandidates {
	deny := eligible.Clone()
	deny.AndNot(allow)
	out := fleetfitv1alpha1.ConsumerCandidates{Consumer: cs.Name, Replicas: cs.Replicas, Mode: fleetfitv1alpha1.CandidateAllow}
	list := allow
	if deny.Count() < allow.Count() {
		out.Mode, list = fleetfitv1alpha1.CandidateDeny, deny
	}
	list.ForEach(func(i int) {
		if len(out.Clusters) < limit {
			out.Clusters = append(out.Clusters, snap.Cluster(i).Name())
		} else {
			out.OmittedClusters++
		}
	})
	return out
}

// ReasonNoClusterRequested is the reason of an intent's Scheduled condition when its Placement
// asks for no cluster (numberOfClusters: 0).
const ReasonNoClusterRequested = "NoClusterRequested"

// ReasonPlacementMisconfigured is the reason of an intent's Scheduled condition while its
// Placement is misconfigured: the placement keeps its decisions and is not scheduled.
const ReasonPlacementMisconfigured = "PlacementMisconfigured"

// misconfiguredIntentCondition is an intent's Scheduled condition after a cycle of its
// placement that st, a misconfiguration, stopped.
func misconfiguredIntentCondition(in *fleetfitv1alpha1.HPAIntent, p *clusterv1beta1.Placement, st *framework.Status) metav1.Condition {
	what := st.Message()
	if st.Plugin() != "" {
		what = st.Plugin() + ": " + what
	}
	return metav1.Condition{
		Type:               fleetfitv1alpha1.ConditionScheduled,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: in.Generation,
		Reason:             ReasonPlacementMisconfigured,
		Message: textcap.Truncate(fmt.Sprintf("Placement %s is misconfigured, so it is not scheduled and keeps its decisions: %s",
			p.Name, what), textcap.MaxMessage),
	}
}

func scheduledCondition(in *fleetfitv1alpha1.HPAIntent, p *clusterv1beta1.Placement, decisions []scheduler.Decision, res *scheduler.Result) metav1.Condition {
	cond := metav1.Condition{Type: fleetfitv1alpha1.ConditionScheduled, ObservedGeneration: in.Generation}
	if len(decisions) > 0 {
		names := make([]string, 0, maxListed)
		for _, d := range decisions[:min(len(decisions), maxListed)] {
			names = append(names, d.ClusterName)
		}
		more := ""
		if len(decisions) > maxListed {
			more = fmt.Sprintf(" and %d more", len(decisions)-maxListed)
		}
		cond.Status, cond.Reason = metav1.ConditionTrue, "Scheduled"
		cond.Message = fmt.Sprintf("Placement %s decides %d cluster(s): %s%s", p.Name, len(decisions), strings.Join(names, ", "), more)
		return cond
	}
	if n := p.Spec.NumberOfClusters; n != nil && *n == 0 {
		// No cluster was rejected: none was wanted.
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNoClusterRequested
		cond.Message = fmt.Sprintf("Placement %s asks for no cluster (spec.numberOfClusters: 0), so none is decided: set numberOfClusters, or leave it out for every cluster it selects", p.Name)
		return cond
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, "NoFeasibleCluster"
	// The hardware reasons first: they are what the intent is about, and in a large fleet
	// the clusters its predicates never select would crowd them out.
	var reasons []string
	for _, hardware := range []bool{true, false} {
		for _, f := range res.Filters {
			if (f.Plugin == framework.HardwareFitName) != hardware {
				continue
			}
			for _, r := range f.Rejected {
				if len(reasons) < maxListed {
					reasons = append(reasons, r.Cluster+": "+r.Reason)
				}
			}
		}
	}
	cond.Message = fmt.Sprintf("no cluster can host Placement %s", p.Name)
	if len(reasons) > 0 {
		cond.Message += ": " + strings.Join(reasons, "; ")
	}
	// A reason may quote user input (feature values, expressions): the message stays bounded.
	cond.Message = textcap.Truncate(cond.Message, textcap.MaxMessage)
	return cond
}

// onePod reports whether the placement's intents have one pod in all: then HardwareFit's
// verdict for the placement is that pod's own.
func onePod(req *framework.Request, snap *framework.Snapshot) bool {
	n := 0
	for _, in := range req.Intents {
		c, err := snap.Intent(in)
		if err != nil {
			return false
		}
		n += len(c.Pods)
	}
	return n == 1
}

// backedOff reports whether an intent of the request moved away from the cluster and is in
// its back-off: HardwareFit rejects the cluster, and no consumer counts it as a candidate.
func backedOff(req *framework.Request, cluster string) bool {
	for _, in := range req.Intents {
		if _, ok := in.Status.BackedOff(cluster, req.Now); ok {
			return true
		}
	}
	return false
}

// splitStatus is the division of the intent's replicas the cycle made, by cluster name; nil
// for an intent that does not split.
func splitStatus(in *fleetfitv1alpha1.HPAIntent, res *scheduler.Result) *fleetfitv1alpha1.SplitStatus {
	for k := range res.Divisions {
		d := &res.Divisions[k]
		if d.Intent != in.Name {
			continue
		}
		out := &fleetfitv1alpha1.SplitStatus{Replicas: d.Total, Unplaced: d.Unplaced}
		for j, i := range d.Clusters {
			if d.Shares[j] > 0 {
				out.Shares = append(out.Shares, fleetfitv1alpha1.ClusterShare{ClusterName: res.Snapshot().Cluster(i).Name(), Replicas: d.Shares[j]})
			}
		}
		slices.SortFunc(out.Shares, func(a, b fleetfitv1alpha1.ClusterShare) int { return strings.Compare(a.ClusterName, b.ClusterName) })
		return out
	}
	return nil
}

// ReasonPartlyScheduled is the reason of a split intent's Scheduled condition while some of
// its replicas wait for room.
const ReasonPartlyScheduled = "PartlyScheduled"

// splitCondition words the Scheduled condition of a split intent: the shares, and how many
// replicas wait for room.
func splitCondition(cond metav1.Condition, p *clusterv1beta1.Placement, s *fleetfitv1alpha1.SplitStatus) metav1.Condition {
	shares := make([]string, 0, maxListed)
	for _, sh := range s.Shares[:min(len(s.Shares), maxListed)] {
		shares = append(shares, fmt.Sprintf("%s %d", sh.ClusterName, sh.Replicas))
	}
	if len(s.Shares) > maxListed {
		shares = append(shares, fmt.Sprintf("and %d more clusters", len(s.Shares)-maxListed))
	}
	placed := s.Replicas - s.Unplaced
	switch {
	case s.Unplaced == 0:
		cond.Status, cond.Reason = metav1.ConditionTrue, "Scheduled"
		cond.Message = fmt.Sprintf("Placement %s splits %d replicas over %d cluster(s): %s", p.Name, s.Replicas, len(s.Shares), strings.Join(shares, ", "))
	case placed > 0:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonPartlyScheduled
		cond.Message = fmt.Sprintf("Placement %s places %d of %d replicas: %s; %d wait until a cluster has room for them",
			p.Name, placed, s.Replicas, strings.Join(shares, ", "), s.Unplaced)
	default:
		cond.Status = metav1.ConditionFalse
		if cond.Reason == "Scheduled" {
			cond.Reason = "NoFeasibleCluster"
		}
		cond.Message = fmt.Sprintf("none of the %d replicas is placed (split.allOrNothing, or no room for the smallest share): ", s.Replicas) + cond.Message
	}
	cond.Message = textcap.Truncate(cond.Message, textcap.MaxMessage)
	return cond
}

// scaleUpNotes says, for the clusters newly decided that fit only once their pools add
// nodes, what they add: "; cluster2 fits after scale-up: 1 node of g6.12xlarge from
// NodePool gpu (limit: 3 more)".
func scaleUpNotes(snap *framework.Snapshot, req *framework.Request, compiled *hpa.Intent, decisions []scheduler.Decision) string {
	pods := make([]*hpa.Pod, len(compiled.Pods))
	for k := range compiled.Pods {
		pods[k] = &compiled.Pods[k]
	}
	var b strings.Builder
	for _, d := range decisions[:min(len(decisions), maxListed)] {
		i, ok := snap.Index(d.ClusterName)
		if !ok || req.Decided.Has(i) {
			continue
		}
		if need := snap.Cluster(i).ScaleUpNeeded(pods, req.Key(), false, req.Now); need != "" {
			b.WriteString("; " + d.ClusterName + " " + need)
		}
	}
	return b.String()
}
