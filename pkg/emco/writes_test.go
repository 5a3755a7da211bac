package emco

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
)

// requirementBody is an optional requirement r<i>, so that any number may share a consumer.
func requirementBody(i int) string {
	return fmt.Sprintf(`{"metadata": {"name": "r%02d"}, "spec": {"allocatable": true, "mandatory": false, "name": "example.com/r%d", "requests": 1}}`, i, i)
}

// requirementNamesOf returns the names of the requirements of every consumer of the intent, sorted.
func requirementNamesOf(f *fakeHub) []string {
	var names []string
	for _, c := range f.intent().Spec.Consumers {
		for _, r := range c.Requirements {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestConflictsAreRetried: a change that loses races to other writers of the intent (the API
// server answering 409 Conflict) is applied anew until it lands, however many it loses
// within the time allowed, and is a 503, not a 409, once that time is up.
func TestConflictsAreRetried(t *testing.T) {
	cases := map[string]struct {
		conflicts int
		timeout   time.Duration
		want      int
		wantNames []string
	}{
		"none":                      {conflicts: 0, timeout: time.Minute, want: http.StatusCreated, wantNames: []string{"r00"}},
		"more than a dozen":         {conflicts: 40, timeout: time.Minute, want: http.StatusCreated, wantNames: []string{"r00"}},
		"for longer than is waited": {conflicts: 1 << 30, timeout: 50 * time.Millisecond, want: http.StatusServiceUnavailable},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFakeHub()
			f.handler.backoff = wait.Backoff{Steps: conflictBackoff.Steps, Duration: time.Microsecond}
			f.handler.conflictTimeout = tc.timeout
			lost := 0
			f.fleetfit.PrependReactor("update", "hpaintents", func(clienttesting.Action) (bool, runtime.Object, error) {
				if lost < tc.conflicts {
					lost++
					return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "fleetfit.io", Resource: "hpaintents"}, "i", fmt.Errorf("the object has been modified"))
				}
				return false, nil, nil
			})
			code, body, _ := f.do(t.Context(), http.MethodPost, fakeConsumer+"/resource-requirements", "application/json", requirementBody(0))
			if code != tc.want {
				t.Errorf("status %d (%s), want %d", code, body, tc.want)
			}
			if diff := cmp.Diff(tc.wantNames, requirementNamesOf(f)); diff != "" {
				t.Errorf("requirements (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestConcurrentChangesAllLand: 40 requirements posted at once to one intent, half to each of
// its two consumers (a consumer has at most 32), all land, although the fake API server,
// unlike the real one, never refuses a stale write: only this hub making its changes of an
// intent one at a time keeps them from overwriting each other.
func TestConcurrentChangesAllLand(t *testing.T) {
	const n = 40
	f := newFakeHub()
	if code, body, _ := f.do(t.Context(), http.MethodPost, fakeIntent+"/hpa-resource-consumers", "application/json",
		`{"metadata": {"name": "d"}, "spec": {"consumer": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "container-name": "main"}}}`); code != http.StatusCreated {
		t.Fatalf("consumer d: %d %s", code, body)
	}
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			consumer := fakeIntent + "/hpa-resource-consumers/" + []string{"c", "d"}[i%2]
			codes[i], _, _ = f.do(t.Context(), http.MethodPost, consumer+"/resource-requirements", "application/json", requirementBody(i))
		})
	}
	wg.Wait()
	var want []string
	wantCodes := make([]int, n)
	for i := range n {
		want = append(want, fmt.Sprintf("r%02d", i))
		wantCodes[i] = http.StatusCreated
	}
	if diff := cmp.Diff(wantCodes, codes); diff != "" {
		t.Errorf("status codes (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(want, requirementNamesOf(f)); diff != "" {
		t.Errorf("requirements (-want,+got):\n%s", diff)
	}
}

// TestIntentLocks: a second holder of one intent's lock waits for the first, another
// intent's does not, a waiter whose request ends gives up, and nothing is kept once all
// are done.
func TestIntentLocks(t *testing.T) {
	var l intentLocks
	unlockA, err := l.lock(t.Context(), "p/a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.lock(t.Context(), "p/b")
	if err != nil {
		t.Fatalf("another intent's lock: %v", err)
	}
	unlockB()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := l.lock(ctx, "p/a"); err == nil {
		t.Fatal("took a held lock")
	}
	got := make(chan func())
	go func() {
		unlock, _ := l.lock(t.Context(), "p/a")
		got <- unlock
	}()
	select {
	case <-got:
		t.Fatal("took a held lock")
	case <-time.After(10 * time.Millisecond):
	}
	unlockA()
	(<-got)()
	if len(l.held) != 0 {
		t.Errorf("%d locks kept after all were released", len(l.held))
	}
}
