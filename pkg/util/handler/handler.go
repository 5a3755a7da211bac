// Package handler turns an informer's untyped events into calls with the
// object's own type, so that a controller writes what an event means for it
// and nothing about how informers deliver objects.
//
// An informer's delete event may carry a cache.DeletedFinalStateUnknown
// instead of the object: the watch missed the deletion and a relist found the
// object gone. Funcs unwraps it once for every controller and hands over the
// last state the informer knew.
package handler

import (
	toolscache "k8s.io/client-go/tools/cache"
)

// Funcs handles the events of objects of type T, typically a pointer to an
// API type. A nil function ignores its events. Objects of another type, which
// an informer of T's kind never delivers, are ignored too.
type Funcs[T any] struct {
	// Add is called with an object the informer starts to hold.
	Add func(obj T)
	// Update is called with the previous and the new state of an object; they
	// may be equal, as on a resync.
	Update func(old, cur T)
	// Delete is called with the last state of a deleted object the informer
	// knew, which may be older than the state at deletion.
	Delete func(obj T)
}

var _ toolscache.ResourceEventHandler = Funcs[any]{}

// OnAdd calls Add.
func (f Funcs[T]) OnAdd(obj any, _ bool) {
	if o, ok := obj.(T); ok && f.Add != nil {
		f.Add(o)
	}
}

// OnUpdate calls Update.
func (f Funcs[T]) OnUpdate(oldObj, newObj any) {
	old, ok1 := oldObj.(T)
	cur, ok2 := newObj.(T)
	if ok1 && ok2 && f.Update != nil {
		f.Update(old, cur)
	}
}

// OnDelete calls Delete, with the object a tombstone holds.
func (f Funcs[T]) OnDelete(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if o, ok := obj.(T); ok && f.Delete != nil {
		f.Delete(o)
	}
}
