package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Recorders watch the hub for the whole of a test, through every fault: a watch that breaks
// (an API server that stops answering, a connection that drops) resumes from the last
// resourceVersion it saw, so no event is lost or seen twice. A watch that cannot resume ends
// the recording, and the recorder's check fails then: what it did not see, it cannot vouch for.

// workRecorder records the creations and deletions of the test's ManifestWorks.
type workRecorder struct {
	mu sync.Mutex
	// created holds, per "cluster/name", the UIDs of the ManifestWorks created under that name:
	// more than one means one was deleted and made again.
	created map[string]sets.Set[types.UID]
	// deleted lists every deletion seen, with when.
	deleted []string
	// ended says why the watch ended before the test did, if it did.
	ended error
}

// recordWorks starts recording the test's ManifestWorks until the test ends.
func (e *env) recordWorks() *workRecorder {
	e.t.Helper()
	r := &workRecorder{created: map[string]sets.Set[types.UID]{}}
	works := e.works.WorkV1().ManifestWorks(metav1.NamespaceAll)
	list, err := works.List(e.t.Context(), e.worksOfTest())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, w := range list.Items {
		r.add(&w)
	}
	e.watch(list.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = e.worksOfTest().LabelSelector
		return works.Watch(ctx, opts)
	}, func(ev watch.Event) {
		w, ok := ev.Object.(*workv1.ManifestWork)
		if !ok {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		key := w.Namespace + "/" + w.Name
		switch {
		case ev.Type == watch.Deleted:
			r.deleted = append(r.deleted, fmt.Sprintf("%s deleted at %s", key, time.Now().UTC().Format(time.TimeOnly)))
		case w.DeletionTimestamp != nil:
			r.deleted = append(r.deleted, fmt.Sprintf("%s marked for deletion at %s", key, w.DeletionTimestamp.UTC().Format(time.TimeOnly)))
		default:
			r.addLocked(w)
		}
	}, func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ended = err
	})
	return r
}

func (r *workRecorder) add(w *workv1.ManifestWork) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(w)
}

func (r *workRecorder) addLocked(w *workv1.ManifestWork) {
	key := w.Namespace + "/" + w.Name
	if r.created[key] == nil {
		r.created[key] = sets.New[types.UID]()
	}
	r.created[key].Insert(w.UID)
}

// check returns nil when no ManifestWork was deleted, none was made twice, exactly want were
// made, and the watch saw everything.
func (r *workRecorder) check(want int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var problems []string
	if r.ended != nil {
		problems = append(problems, fmt.Sprintf("the watch of ManifestWorks ended early, so deletions may have been missed: %v", r.ended))
	}
	if len(r.deleted) > 0 {
		problems = append(problems, fmt.Sprintf("expected no ManifestWork deleted, saw %d deletions: %s", len(r.deleted), strings.Join(first(r.deleted), "; ")))
	}
	var twice []string
	for _, key := range slices.Sorted(maps.Keys(r.created)) {
		if n := r.created[key].Len(); n > 1 {
			twice = append(twice, fmt.Sprintf("%s created %d times", key, n))
		}
	}
	if len(twice) > 0 {
		problems = append(problems, fmt.Sprintf("expected each (intent, cluster) to get exactly one ManifestWork, saw %d made again: %s", len(twice), strings.Join(first(twice), "; ")))
	}
	if len(r.created) != want {
		problems = append(problems, fmt.Sprintf("expected %d ManifestWorks created (one per decision), saw %d", want, len(r.created)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// decisionRecorder follows the test's PlacementDecisions and records every cluster a
// placement stops deciding, and the most placements that ever decided each cluster at once.
type decisionRecorder struct {
	mu sync.Mutex
	// objects are the PlacementDecisions as last seen: name → placement and clusters.
	objects map[string]decisionObject
	// removed lists every (placement, cluster) decision that went away, with when.
	removed []string
	// peak is, per cluster, the most placements that decided it at the same time.
	peak  map[string]int
	ended error
}

type decisionObject struct {
	placement string
	clusters  []string
}

// recordDecisions starts recording the test's PlacementDecisions until the test ends.
func (e *env) recordDecisions() *decisionRecorder {
	e.t.Helper()
	r := &decisionRecorder{objects: map[string]decisionObject{}, peak: map[string]int{}}
	decisions := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns)
	list, err := decisions.List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range list.Items {
		r.update(watch.Added, &d)
	}
	e.watch(list.ResourceVersion, decisions.Watch, func(ev watch.Event) {
		if d, ok := ev.Object.(*clusterv1beta1.PlacementDecision); ok {
			r.update(ev.Type, d)
		}
	}, func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ended = err
	})
	return r
}

// byPlacement returns the clusters each placement decides, from the objects as last seen.
func (r *decisionRecorder) byPlacement() map[string]sets.Set[string] {
	out := map[string]sets.Set[string]{}
	for _, o := range r.objects {
		if out[o.placement] == nil {
			out[o.placement] = sets.New[string]()
		}
		out[o.placement].Insert(o.clusters...)
	}
	return out
}

func (r *decisionRecorder) update(t watch.EventType, d *clusterv1beta1.PlacementDecision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.byPlacement()
	if t == watch.Deleted {
		delete(r.objects, d.Name)
	} else {
		o := decisionObject{placement: d.Labels[clusterv1beta1.PlacementLabel]}
		for _, cd := range d.Status.Decisions {
			o.clusters = append(o.clusters, cd.ClusterName)
		}
		r.objects[d.Name] = o
	}
	after := r.byPlacement()
	now := time.Now().UTC().Format(time.TimeOnly)
	for _, p := range slices.Sorted(maps.Keys(before)) {
		for _, c := range sets.List(before[p].Difference(after[p])) {
			r.removed = append(r.removed, fmt.Sprintf("placement %s stopped deciding %s at %s", p, c, now))
		}
	}
	load := map[string]int{}
	for _, cs := range after {
		for c := range cs {
			load[c]++
		}
	}
	for c, n := range load {
		r.peak[c] = max(r.peak[c], n)
	}
}

// checkNoneRemoved returns nil when no placement ever stopped deciding a cluster and the watch
// saw everything.
func (r *decisionRecorder) checkNoneRemoved() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var problems []string
	if r.ended != nil {
		problems = append(problems, fmt.Sprintf("the watch of PlacementDecisions ended early, so removals may have been missed: %v", r.ended))
	}
	if len(r.removed) > 0 {
		problems = append(problems, fmt.Sprintf("expected no decision removed, saw %d: %s", len(r.removed), strings.Join(first(r.removed), "; ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// peaks returns, per cluster, the most placements that decided it at once.
func (r *decisionRecorder) peaks() (map[string]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended != nil {
		return nil, fmt.Errorf("the watch of PlacementDecisions ended early, so a peak may have been missed: %w", r.ended)
	}
	return maps.Clone(r.peak), nil
}

// watch follows a watch from resourceVersion until the test ends, resuming it where it broke,
// and calls handle for each event and ended if it ends before the test does.
func (e *env) watch(resourceVersion string, watchFunc cache.WatchFuncWithContext, handle func(watch.Event), ended func(error)) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{WatchFuncWithContext: watchFunc})
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				ended(fmt.Errorf("at %s: %v", time.Now().UTC().Format(time.TimeOnly), apierrors.FromObject(ev.Object)))
				return
			case watch.Bookmark:
			default:
				handle(ev)
			}
		}
		if ctx.Err() == nil {
			ended(fmt.Errorf("the watch stopped at %s", time.Now().UTC().Format(time.TimeOnly)))
		}
	}()
	e.t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
}

// first returns the first few items of a list, for a failure message.
func first(items []string) []string {
	const shown = 5
	if len(items) <= shown {
		return items
	}
	return append(slices.Clone(items[:shown]), fmt.Sprintf("… and %d more", len(items)-shown))
}
