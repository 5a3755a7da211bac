package steady

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// maxExamples bounds the uncalled-for changes kept for the log.
const maxExamples = 10

// fleetWatch follows, from before fleetfit-hub starts, the Placements' PlacementSatisfied
// condition, the clusters each placement's PlacementDecisions name, and the ManifestWorks.
// Between startCounting and stopCounting it counts what changes, and tells the changes that a
// room-freeing report called for (see expectRoom) from the others.
type fleetWatch struct {
	mu sync.Mutex
	// judged holds the placements with a PlacementSatisfied condition, with its status.
	judged map[string]bool
	// decisions are the clusters each PlacementDecision names, sorted, by placement and
	// decision key; chosen are each placement's clusters (the union over its decisions,
	// sorted).
	decisions map[string]map[string][]string
	chosen    map[string][]string
	works     map[string]bool
	// lastChange is when a placement's clusters or the set of ManifestWorks last changed.
	lastChange time.Time

	counting bool
	// countFrom is when counting started.
	countFrom time.Time
	counts    counts
	examples  []string
	rooms     map[string]*room

	stop func()
}

// counts are what changed while counting.
type counts struct {
	// decisionChanges counts changes of a placement's clusters; calledFor those a room
	// made.
	decisionChanges, decisionChangesCalledFor int
	// workCreates, workDeletes count ManifestWorks created and deleted, workUpdates the
	// updates of one (a write that changed nothing makes no event), workSpecUpdates those
	// that changed its spec (a new generation); workCreatesCalledFor the creations a room made.
	workCreates, workCreatesCalledFor, workDeletes, workUpdates, workSpecUpdates int
	// moved are the placements whose clusters changed when nothing called for it.
	moved map[string]bool
}

// room is one room-freeing report: the cluster that got room for the placement, and when the
// placement's decisions first named it.
type room struct {
	cluster, work string
	written       time.Time
	decided       time.Time
	workCreated   bool
}

func startFleetWatch(ctx context.Context, cfg *rest.Config) (*fleetWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	clusters := clusterinformers.NewSharedInformerFactory(clusterclient.NewForConfigOrDie(cfg), 0)
	works := workinformers.NewSharedInformerFactory(workclient.NewForConfigOrDie(cfg), 0)
	w := &fleetWatch{
		judged: map[string]bool{}, decisions: map[string]map[string][]string{},
		chosen: map[string][]string{}, works: map[string]bool{}, rooms: map[string]*room{},
		lastChange: time.Now(),
		stop:       func() { cancel(); clusters.Shutdown(); works.Shutdown() },
	}
	var regs []toolscache.ResourceEventHandlerRegistration
	add := func(inf toolscache.SharedIndexInformer, h toolscache.ResourceEventHandlerFuncs) error {
		reg, err := inf.AddEventHandler(h)
		regs = append(regs, reg)
		return err
	}
	err := add(clusters.Cluster().V1beta1().Placements().Informer(), toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.placement,
		UpdateFunc: func(_, obj any) { w.placement(obj) },
	})
	if err == nil {
		err = add(clusters.Cluster().V1beta1().PlacementDecisions().Informer(), toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.decision(obj, false) },
			UpdateFunc: func(_, obj any) { w.decision(obj, false) },
			DeleteFunc: func(obj any) { w.decision(obj, true) },
		})
	}
	if err == nil {
		err = add(works.Work().V1().ManifestWorks().Informer(), toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.work(nil, obj, false) },
			UpdateFunc: func(old, obj any) { w.work(old, obj, false) },
			DeleteFunc: func(obj any) { w.work(nil, obj, true) },
		})
	}
	if err != nil {
		w.stop()
		return nil, err
	}
	clusters.Start(ctx.Done())
	works.Start(ctx.Done())
	for _, reg := range regs {
		if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			w.stop()
			return nil, fmt.Errorf("the watches of placements, decisions and works did not sync")
		}
	}
	return w, nil
}

func (w *fleetWatch) placement(obj any) {
	p, ok := obj.(*clusterv1beta1.Placement)
	if !ok {
		return
	}
	cond := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
	w.mu.Lock()
	defer w.mu.Unlock()
	if cond != nil {
		w.judged[p.Namespace+"/"+p.Name] = cond.Status == "True"
	}
}

func (w *fleetWatch) decision(obj any, deleted bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	d, ok := obj.(*clusterv1beta1.PlacementDecision)
	if !ok {
		return
	}
	now := time.Now()
	key := d.Namespace + "/" + d.Name
	var names []string
	if !deleted {
		for _, c := range d.Status.Decisions {
			names = append(names, c.ClusterName)
		}
		slices.Sort(names)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	placement := d.Namespace + "/" + d.Labels[clusterv1beta1.PlacementLabel]
	if w.decisions[placement] == nil {
		w.decisions[placement] = map[string][]string{}
	}
	if deleted {
		delete(w.decisions[placement], key)
	} else {
		w.decisions[placement][key] = names
	}
	var union []string
	for _, names := range w.decisions[placement] {
		union = append(union, names...)
	}
	slices.Sort(union)
	union = slices.Compact(union)
	before := w.chosen[placement]
	if slices.Equal(before, union) {
		return
	}
	w.chosen[placement] = union
	w.lastChange = now
	if r := w.rooms[placement]; r != nil && r.decided.IsZero() && slices.Contains(union, r.cluster) {
		r.decided = now
		if w.counting && contains(union, before) {
			w.counts.decisionChangesCalledFor++
			w.counts.decisionChanges++
			return
		}
	}
	if w.counting {
		w.counts.decisionChanges++
		w.counts.moved[placement] = true
		w.example(now, "placement %s: %v -> %v", placement, before, union)
	}
}

func (w *fleetWatch) work(old, obj any, deleted bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	mw, ok := obj.(*workv1.ManifestWork)
	if !ok {
		return
	}
	now := time.Now()
	key := mw.Namespace + "/" + mw.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case deleted:
		delete(w.works, key)
		w.lastChange = now
		if w.counting {
			w.counts.workDeletes++
			w.example(now, "ManifestWork %s deleted", key)
		}
	case old == nil:
		w.works[key] = true
		w.lastChange = now
		if !w.counting {
			return
		}
		w.counts.workCreates++
		for _, r := range w.rooms {
			if !r.workCreated && r.cluster == mw.Namespace && r.work == mw.Name {
				r.workCreated = true
				w.counts.workCreatesCalledFor++
				return
			}
		}
		w.example(now, "ManifestWork %s created", key)
	default:
		prev, ok := old.(*workv1.ManifestWork)
		if !ok || !w.counting || prev.ResourceVersion == mw.ResourceVersion {
			return
		}
		w.counts.workUpdates++
		if prev.Generation != mw.Generation {
			w.counts.workSpecUpdates++
		}
	}
}

// example keeps a change for the log; the caller holds mu.
func (w *fleetWatch) example(at time.Time, format string, args ...any) {
	if len(w.examples) < maxExamples {
		w.examples = append(w.examples, fmt.Sprintf("+%.1fs ", at.Sub(w.countFrom).Seconds())+fmt.Sprintf(format, args...))
	}
}

// contains reports whether every element of sub (sorted) is in set (sorted).
func contains(set, sub []string) bool {
	for _, s := range sub {
		if _, found := slices.BinarySearch(set, s); !found {
			return false
		}
	}
	return true
}

// settled reports whether the hub has judged every placement, satisfied exactly want of them,
// created a ManifestWork for every decided cluster, and changed none of that for quiet. It
// returns an error once more than want are satisfied, which waiting cannot mend.
func (w *fleetWatch) settled(placements, want int, quiet time.Duration) (bool, string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	satisfied, decided := 0, 0
	for _, ok := range w.judged {
		if ok {
			satisfied++
		}
	}
	for _, c := range w.chosen {
		decided += len(c)
	}
	state := fmt.Sprintf("%d of %d placements judged, %d satisfied (want %d), %d clusters decided, %d ManifestWorks, last change %.1fs ago",
		len(w.judged), placements, satisfied, want, decided, len(w.works), time.Since(w.lastChange).Seconds())
	if satisfied > want {
		return false, state, fmt.Errorf("placements that no cluster has room for are satisfied: %s", state)
	}
	return len(w.judged) == placements && satisfied == want && decided == len(w.works) && time.Since(w.lastChange) >= quiet, state, nil
}

// startCounting starts counting changes and returns when it did.
func (w *fleetWatch) startCounting() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counting, w.countFrom = true, time.Now()
	w.counts.moved = map[string]bool{}
	return w.countFrom
}

// stopCounting stops counting and returns the counts and examples of uncalled-for changes.
func (w *fleetWatch) stopCounting() (counts, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counting = false
	c := w.counts
	c.moved = maps.Clone(c.moved)
	return c, slices.Clone(w.examples)
}

// expectRoom says that a report is about to give placement (a key) room on cluster, where
// its intent's ManifestWork is work.
func (w *fleetWatch) expectRoom(placement, cluster, work string) *room {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := &room{cluster: cluster, work: work}
	w.rooms[placement] = r
	return r
}

// written records when the room's report was accepted.
func (w *fleetWatch) written(r *room, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.written = at
}

// roomLatencies returns, for the rooms whose placement decided their cluster, the time from
// the write to the decision, sorted, and how many are still undecided.
func (w *fleetWatch) roomLatencies() (latencies []time.Duration, undecided int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.rooms {
		if r.decided.IsZero() || r.written.IsZero() {
			undecided++
			continue
		}
		latencies = append(latencies, max(0, r.decided.Sub(r.written)))
	}
	slices.Sort(latencies)
	return latencies, undecided
}

// waitRooms waits until every room's placement decided its cluster, or timeout passes.
func (w *fleetWatch) waitRooms(ctx context.Context, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, undecided := w.roomLatencies(); undecided == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
