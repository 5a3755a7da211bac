package placement

import (
	"context"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// patchStatus merge-patches the status of an object with status. It decodes the answer into
// into when into is not nil, and otherwise reads nothing back: the informers deliver the
// result, and decoding every answer costs about as much CPU as the write's own watch event.
func patchStatus(ctx context.Context, rc rest.Interface, namespace, resource, name string, status any, into runtime.Object) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	result := rc.Patch(types.MergePatchType).Namespace(namespace).Resource(resource).Name(name).SubResource("status").
		Body(patch).Do(ctx)
	if into != nil {
		return result.Into(into)
	}
	return result.Error()
}

// writeTracker remembers, per object, the last content this controller wrote and what the
// object held before. Informers deliver our own writes back a little later, so for a moment a
// lister still shows the content from before the write; the tracker tells that stale view
// from a change someone else made, which saves a redundant write (and a second cycle) per
// placement.
type writeTracker struct{ m sync.Map }

type write struct{ before, after any }

// record notes that key changes from before to after. Call it before the write, so that the
// informer event of the write can never arrive before the record.
func (w *writeTracker) record(key string, before, after any) {
	w.m.Store(key, write{before: before, after: after})
}

// forget drops what is known about key.
func (w *writeTracker) forget(key string) { w.m.Delete(key) }

// ours reports whether current is what we last wrote for key.
func (w *writeTracker) ours(key string, current any) bool {
	v, ok := w.m.Load(key)
	return ok && equality.Semantic.DeepEqual(v.(write).after, current)
}

// upToDate reports whether writing desired over current is unnecessary: current already holds
// it, or current is the stale view from just before our own write of desired.
func (w *writeTracker) upToDate(key string, current, desired any) bool {
	if equality.Semantic.DeepEqual(current, desired) {
		return true
	}
	v, ok := w.m.Load(key)
	if !ok {
		return false
	}
	last := v.(write)
	return equality.Semantic.DeepEqual(last.after, desired) && equality.Semantic.DeepEqual(last.before, current)
}
