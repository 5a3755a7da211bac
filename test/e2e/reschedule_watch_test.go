package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/test/framework"
)

// The rescheduling test's records of what the hub and the spokes did, with when this process
// saw it: watches that run from before the fault until the test ends, so that an order or an
// absence is checked on every change, not on samples of a poll.

// rsFollow follows a watch from resourceVersion until the test ends, resuming it where it
// broke, and calls handle with each event and when this process saw it. The returned function
// says why the watch ended before the test did (nil: it did not), for checks that rely on
// having seen every event.
func rsFollow(t *testing.T, resourceVersion string, watchFunc cache.WatchFuncWithContext, handle func(watch.Event, time.Time)) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{WatchFuncWithContext: watchFunc})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ended error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				mu.Lock()
				ended = fmt.Errorf("at %s: %v", time.Now().UTC().Format(time.TimeOnly), apierrors.FromObject(ev.Object))
				mu.Unlock()
				return
			case watch.Bookmark:
			default:
				handle(ev, time.Now())
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		return ended
	}
}

// rsDecision is one PlacementDecision of rsNS as a watch event showed it.
type rsDecision struct {
	at        time.Time
	placement string
	clusters  []string
}

// rsDecisionLog records every PlacementDecision of rsNS that the hub writes, from when it
// starts until the test ends.
type rsDecisionLog struct {
	mu    sync.Mutex
	seen  []rsDecision
	ended func() error
}

func rsRecordDecisions(t *testing.T, clusters clusterclient.Interface) *rsDecisionLog {
	t.Helper()
	decisions := clusters.ClusterV1beta1().PlacementDecisions(rsNS)
	list, err := decisions.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &rsDecisionLog{}
	now := time.Now()
	for i := range list.Items {
		l.add(&list.Items[i], now)
	}
	l.ended = rsFollow(t, list.ResourceVersion, decisions.Watch, func(ev watch.Event, at time.Time) {
		if d, ok := ev.Object.(*clusterv1beta1.PlacementDecision); ok && ev.Type != watch.Deleted {
			l.add(d, at)
		}
	})
	return l
}

func (l *rsDecisionLog) add(d *clusterv1beta1.PlacementDecision, at time.Time) {
	r := rsDecision{at: at, placement: d.Labels[clusterv1beta1.PlacementLabel]}
	for _, cd := range d.Status.Decisions {
		r.clusters = append(r.clusters, cd.ClusterName)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r)
}

// decidedAt returns, in the order seen, the decisions of the placement that named cluster
// and were seen in [from, to).
func (l *rsDecisionLog) decidedAt(placement, cluster string, from, to time.Time) ([]string, error) {
	if err := l.ended(); err != nil {
		return nil, fmt.Errorf("the watch of PlacementDecisions ended early, so a decision may have been missed: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.seen {
		if r.placement != placement || r.at.Before(from) || !r.at.Before(to) {
			continue
		}
		for _, c := range r.clusters {
			if c == cluster {
				out = append(out, fmt.Sprintf("%s at %s", strings.Join(r.clusters, ","), r.at.UTC().Format(time.StampMilli)))
			}
		}
	}
	return out, nil
}

// rsFirst records the first time this process saw something happen.
type rsFirst struct {
	mu sync.Mutex
	at time.Time
	// ended says why the watch behind it ended early (see rsFollow).
	ended func() error
}

func (f *rsFirst) mark(at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() {
		f.at = at
	}
}

// get returns when it first happened (zero: not yet), or an error when the watch ended early
// and may have missed it.
func (f *rsFirst) get() (time.Time, error) {
	if err := f.ended(); err != nil {
		return time.Time{}, fmt.Errorf("the watch ended early: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at, nil
}

// rsRecordOrder starts recording when rsA's ManifestWork of the mover is first seen removed
// (marked for deletion, or gone) and when rsB first has two ready pods of the mover.
func rsRecordOrder(t *testing.T, works workv1client.WorkV1Interface, spokeB *framework.ControlPlane) (removed, ready *rsFirst) {
	t.Helper()
	removed, ready = &rsFirst{}, &rsFirst{}
	onA := works.ManifestWorks(rsA)
	list, err := onA.List(t.Context(), metav1.ListOptions{LabelSelector: rsWorkLabels(rsMover)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%s has %d ManifestWorks of %s, want 1", rsA, len(list.Items), rsMover)
	}
	ended := rsFollow(t, list.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = rsWorkLabels(rsMover)
		return onA.Watch(ctx, opts)
	}, func(ev watch.Event, at time.Time) {
		if w, ok := ev.Object.(*workv1.ManifestWork); ok && (ev.Type == watch.Deleted || w.DeletionTimestamp != nil) {
			removed.mark(at)
		}
	})
	removed.ended = ended

	pods := spokeB.AdminClient().CoreV1().Pods(rsNS)
	selector := metav1.ListOptions{LabelSelector: "app=" + rsMover}
	podList, err := pods.List(t.Context(), selector)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	readyPods := map[string]bool{}
	see := func(p *corev1.Pod, gone bool, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		readyPods[p.Name] = !gone && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p)
		n := 0
		for _, r := range readyPods {
			if r {
				n++
			}
		}
		if n >= 2 {
			ready.mark(at)
		}
	}
	now := time.Now()
	for i := range podList.Items {
		see(&podList.Items[i], false, now)
	}
	ready.ended = rsFollow(t, podList.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = selector.LabelSelector
		return pods.Watch(ctx, opts)
	}, func(ev watch.Event, at time.Time) {
		if p, ok := ev.Object.(*corev1.Pod); ok {
			see(p, ev.Type == watch.Deleted, at)
		}
	})
	return removed, ready
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
