package action

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/logs"
)

// Make before break.
//
// When the hub moves an intent's workload away from a cluster (a ClusterMove in the intent's
// status, written before the Placement's decisions drop the cluster), the cluster keeps its
// ManifestWork until the workload is available on another cluster the intent is decided on,
// or at once when nothing of it runs there; then the ManifestWork goes and the move is
// completed. A workload that runs is never removed for one that does not run yet, so while the
// intent is decided on no other cluster the old one keeps its ManifestWork. A cluster that
// leaves the decisions without a move loses its ManifestWork at once, as before.
//
// Everything this reads is in the API (the intent's moves, the ManifestWorks and their
// status), so a restarted hub takes up a move where it was.

// departure is what becomes of the intent's ManifestWork on a cluster that is no longer
// decided.
type departure struct {
	cluster string
	// keep: the ManifestWork stays, and the cluster's delivery stays in status.clusters.
	keep bool
	// complete: the moves away from the cluster are completed (the ManifestWork goes, or is
	// gone).
	complete bool
	// why says, for a kept ManifestWork, what it waits for ("moving away: kept until …"), and
	// for a completed move, why the ManifestWork went.
	why string
	// gone: the ManifestWork was deleted before (the move completes now).
	gone bool
}

// depart decides the departure of the intent's workload from cluster, which the intent is no
// longer decided on. moving says whether a move away from cluster is not completed; work is
// the intent's ManifestWork there, nil when there is none; decided are the clusters the intent
// is decided on, sorted, and available those of them where the workload is available
// (replacementAvailable).
func depart(cluster string, moving bool, work *workv1.ManifestWork, decided []string, available sets.Set[string]) departure {
	d := departure{cluster: cluster}
	if !moving {
		return d // not a move: the deselected cluster's ManifestWork goes, as it always did
	}
	if work == nil || !work.DeletionTimestamp.IsZero() {
		d.complete, d.gone, d.why = true, true, "its ManifestWork is gone"
		return d
	}
	var others []string
	for _, c := range decided {
		if c == cluster {
			continue
		}
		if available.Has(c) {
			d.complete, d.why = true, "the workload is available on "+c
			return d
		}
		others = append(others, c)
	}
	if len(others) == 0 {
		// Nothing would run the workload if it went: if it runs here, it stays; if it does
		// not, deleting it frees nothing the workload could use elsewhere either. The move
		// goes on once the intent is decided on another cluster.
		d.keep, d.why = true, "moving away: kept while the intent is decided on no other cluster"
		return d
	}
	if runsNothing(work) {
		d.complete, d.why = true, "nothing of the workload runs there"
		return d
	}
	d.keep, d.why = true, "moving away: kept until the workload is available on "+orList(others)
	return d
}

// replacementAvailable reports whether the workload is available on the cluster of w, so that
// a move may remove it from the old one: its delivery is Available (OCM's work agent says
// every object of w exists there), and the status feedback shows its workloads ready as asked
// where it tells: ReadyReplicas ≥ Replicas, NumberReady ≥ DesiredNumberScheduled, a Pod
// Ready or Succeeded, a Job with pods ready or succeeded. OCM's Available alone is no proof
// that anything runs: a Deployment whose pods wait for a node exists all the same, and the
// agent marks the work Available before its first feedback, so a kind it reports
// (reportedKinds) counts only once reported. A workload the feedback says nothing of (a
// CronJob, a StatefulSet delivered before the hub asked for its feedback) is taken as the
// condition says.
func replacementAvailable(w *workv1.ManifestWork) bool {
	if state, _ := deliveryState(w); state != fleetfitv1alpha1.DeliveryAvailable {
		return false
	}
	feedback := feedbackByManifest(w)
	for _, m := range w.Spec.Workload.Manifests {
		o, ok := manifestObject(m.RawExtension)
		if !ok {
			continue
		}
		if !readyAsAsked(o.GetKind(), feedback[manifestKey(o.GetKind(), o.GetNamespace(), o.GetName())]) {
			return false
		}
	}
	return true
}

// reportedKinds are the kinds whose status feedback OCM's work agent reports (feedbackRules):
// until it reports theirs, they are not known to run, even when the ManifestWork is Available
// (it is as soon as the objects exist, before the first feedback).
var reportedKinds = sets.New("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Pod", "Job")

// readyAsAsked reads one workload's status feedback (see replacementAvailable).
func readyAsAsked(kind string, values map[string]workv1.FieldValue) bool {
	if len(values) == 0 {
		// Not reported yet (or never, for a kind without rules).
		return !reportedKinds.Has(kind)
	}
	integer := func(name string) int64 {
		if v, ok := values[name]; ok && v.Integer != nil {
			return *v.Integer
		}
		return 0
	}
	if kind == "Job" {
		// Its pods end one by one: it runs once some are ready, or some have succeeded.
		_, succeeded := values["JobSucceeded"]
		complete, isString := values["JobComplete"]
		return succeeded || integer(feedbackJobReady) > 0 || isString && complete.String != nil && *complete.String == "True"
	}
	if _, ok := values["Replicas"]; ok {
		return integer("ReadyReplicas") >= integer("Replicas")
	}
	if _, ok := values["DesiredNumberScheduled"]; ok {
		return integer("NumberReady") >= integer("DesiredNumberScheduled")
	}
	if v, ok := values["PodPhase"]; ok && v.String != nil {
		ready, isString := values["PodReady"]
		return *v.String == "Succeeded" || isString && ready.String != nil && *ready.String == "True"
	}
	return true
}

// orList joins names as "a", "a or b", "a, b or c", at most five of them.
func orList(names []string) string {
	const shown = 5
	if len(names) > shown {
		return strings.Join(names[:shown], ", ") + fmt.Sprintf(" or one of %d more clusters", len(names)-shown)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// runsNothing reports whether the work agent's status feedback on w shows that no pod of its
// workloads runs. It needs feedback on every workload of w that has pods, and reads:
//
//   - Deployment, StatefulSet, ReplicaSet: ReadyReplicas and AvailableReplicas are 0 or absent
//     (Kubernetes leaves a zero out of the status), once the agent reports Replicas;
//   - DaemonSet: NumberReady and NumberAvailable are 0 or absent, once it reports
//     DesiredNumberScheduled;
//   - Pod: PodPhase is Pending, Succeeded or Failed and PodReady is not True;
//   - Job: JobComplete is True (it ran to its end; a Job that has not completed may run pods
//     that are not ready yet).
//
// A workload without that feedback — the agent has not reported it yet, or the hub asks for
// none for its kind (CronJob; StatefulSet and ReplicaSet delivered before it asked) — may run,
// and so does w. The conservative answer keeps the ManifestWork until the
// replacement is available.
func runsNothing(w *workv1.ManifestWork) bool {
	feedback := feedbackByManifest(w)
	for _, m := range w.Spec.Workload.Manifests {
		u, ok := manifestObject(m.RawExtension)
		if !ok {
			return false // not readable, so not known to run nothing
		}
		if !hasPods(u) {
			continue
		}
		values := feedback[manifestKey(u.GetKind(), u.GetNamespace(), u.GetName())]
		if runs, known := runsPods(u.GetKind(), values); runs || !known {
			return false
		}
	}
	return true
}

func manifestKey(kind, namespace, name string) string {
	return kind + " " + namespace + "/" + name
}

// feedbackByManifest is the work agent's status feedback on w, by manifestKey.
func feedbackByManifest(w *workv1.ManifestWork) map[string]map[string]workv1.FieldValue {
	out := make(map[string]map[string]workv1.FieldValue, len(w.Status.ResourceStatus.Manifests))
	for _, m := range w.Status.ResourceStatus.Manifests {
		values := make(map[string]workv1.FieldValue, len(m.StatusFeedbacks.Values))
		for _, v := range m.StatusFeedbacks.Values {
			values[v.Name] = v.Value
		}
		out[manifestKey(m.ResourceMeta.Kind, m.ResourceMeta.Namespace, m.ResourceMeta.Name)] = values
	}
	return out
}

// runsPods reads a workload's status feedback: whether some of its pods run, and whether the
// feedback tells (see runsNothing).
func runsPods(kind string, values map[string]workv1.FieldValue) (runs, known bool) {
	positive := func(name string) bool {
		v, ok := values[name]
		return ok && v.Integer != nil && *v.Integer > 0
	}
	str := func(name string) (string, bool) {
		v, ok := values[name]
		if !ok || v.String == nil {
			return "", false
		}
		return *v.String, true
	}
	switch kind {
	case "Deployment", "StatefulSet", "ReplicaSet":
		if _, ok := values["Replicas"]; !ok {
			return false, false
		}
		return positive("ReadyReplicas") || positive("AvailableReplicas"), true
	case "DaemonSet":
		if _, ok := values["DesiredNumberScheduled"]; !ok {
			return false, false
		}
		return positive("NumberReady") || positive("NumberAvailable"), true
	case "Pod":
		phase, ok := str("PodPhase")
		if !ok {
			return false, false
		}
		if ready, _ := str("PodReady"); ready == "True" {
			return true, true
		}
		return phase == "Running" || phase == "Unknown", true
	case "Job":
		if complete, _ := str("JobComplete"); complete == "True" {
			return false, true
		}
		return false, false
	}
	return false, false
}

// departures decides what becomes of the intent's ManifestWorks on the clusters it is no
// longer decided on (decided, sorted), and of the moves away from them. It returns the intent
// to write the status of: in itself when no cluster departs, otherwise the intent as the API
// server has it now, nil when it is gone.
//
// The reschedule controller writes a move before the placement's decisions drop the cluster,
// but the decisions may reach this controller's informer before the intent's new status does:
// when a cluster departs, its moves are read from the API server, never from the informer,
// so that a cluster left for a move is never taken for one merely deselected.
func (c *Controller) departures(ctx context.Context, in *fleetfitv1alpha1.HPAIntent, decided []string) (*fleetfitv1alpha1.HPAIntent, []departure, error) {
	isDecided := sets.New(decided...)
	works, err := c.intentWorks(in.Namespace, in.Name)
	if err != nil {
		return nil, nil, err
	}
	leaving := sets.New[string]()
	for cluster := range works {
		if !isDecided.Has(cluster) {
			leaving.Insert(cluster)
		}
	}
	for _, m := range in.Status.MovingFrom() {
		if !isDecided.Has(m.From) {
			leaving.Insert(m.From)
		}
	}
	if leaving.Len() == 0 {
		return in, nil, nil
	}
	fresh, err := c.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(in.Namespace).Get(ctx, in.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && fresh.UID != in.UID {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the intent's moves: %w", err)
	}
	moving := sets.New[string]()
	for _, m := range fresh.Status.MovingFrom() {
		moving.Insert(m.From)
		if !isDecided.Has(m.From) {
			leaving.Insert(m.From)
		}
	}
	available := sets.New[string]()
	for _, cluster := range decided {
		if w := works[cluster]; w != nil && replacementAvailable(w) {
			available.Insert(cluster)
		}
	}
	logger := klog.FromContext(ctx)
	var out []departure
	for _, cluster := range sets.List(leaving) {
		d := depart(cluster, moving.Has(cluster), works[cluster], decided, available)
		if moving.Has(cluster) {
			logger.V(logs.Changes).Info("Moving away from a cluster", "cluster", cluster, "keep", d.keep, "complete", d.complete, "why", d.why)
		}
		out = append(out, d)
	}
	return fresh, out, nil
}

// intentWorks returns the intent's ManifestWorks by cluster, as the informer has them.
func (c *Controller) intentWorks(namespace, name string) (map[string]*workv1.ManifestWork, error) {
	works, err := c.works.List(WorkSelector(namespace, name))
	if err != nil {
		return nil, err
	}
	out := map[string]*workv1.ManifestWork{}
	for _, w := range works {
		if wns, wname, ok := IntentOf(w); ok && wns == namespace && wname == name {
			out[w.Namespace] = w
		}
	}
	return out, nil
}
