package handler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestFuncs(t *testing.T) {
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	cases := map[string]struct {
		deliver func(h toolscache.ResourceEventHandler)
		want    []string
	}{
		"add":    {deliver: func(h toolscache.ResourceEventHandler) { h.OnAdd(node("a"), false) }, want: []string{"add a"}},
		"update": {deliver: func(h toolscache.ResourceEventHandler) { h.OnUpdate(node("a"), node("b")) }, want: []string{"update a b"}},
		"delete": {deliver: func(h toolscache.ResourceEventHandler) { h.OnDelete(node("a")) }, want: []string{"delete a"}},
		"delete through tombstone": {deliver: func(h toolscache.ResourceEventHandler) {
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "a", Obj: node("a")})
		}, want: []string{"delete a"}},
		"another type": {deliver: func(h toolscache.ResourceEventHandler) {
			h.OnAdd(pod, false)
			h.OnUpdate(node("a"), pod)
			h.OnDelete(pod)
		}},
		"tombstone of another type": {deliver: func(h toolscache.ResourceEventHandler) {
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "p", Obj: pod})
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			tc.deliver(Funcs[*corev1.Node]{
				Add:    func(n *corev1.Node) { got = append(got, "add "+n.Name) },
				Update: func(old, cur *corev1.Node) { got = append(got, "update "+old.Name+" "+cur.Name) },
				Delete: func(n *corev1.Node) { got = append(got, "delete "+n.Name) },
			})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("calls (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestNilFuncs checks that a handler without a function ignores its events.
func TestNilFuncs(t *testing.T) {
	var h toolscache.ResourceEventHandler = Funcs[*corev1.Node]{}
	n := &corev1.Node{}
	h.OnAdd(n, false)
	h.OnUpdate(n, n)
	h.OnDelete(n)
}
