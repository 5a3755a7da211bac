package machine

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

func TestSync(t *testing.T) {
	small := makeType("small", "2", "4Gi", 0, 2)
	large := makeType("large", "16", "64Gi", 1, 1)
	group := makeGroup(small, large)
	world := func(extra ...runtime.Object) []runtime.Object {
		return append([]runtime.Object{
			group, makePool(true, ""),
			makeNode("node-small", "4", "8Gi", ""), makeNode("node-large", "32", "128Gi", "2"),
		}, extra...)
	}
	cases := map[string]struct {
		objs []runtime.Object
		// change runs after the first sync has settled, before the second.
		change     func(t *testing.T, f *fixture)
		wantWrites []string
		wantUsage  []v1alpha1.AvailableMachine
		wantReady  metav1.ConditionStatus
		wantReason string
		wantSmall  int32
	}{
		"a new group gets a Service and a StatefulSet per type": {
			objs: world(),
			wantWrites: []string{
				"create services small-general-machine", "create statefulsets small-general-machine",
				"create services large-general-machine", "create statefulsets large-general-machine",
				"update machinegroups/status general-machine",
			},
			wantUsage: []v1alpha1.AvailableMachine{
				{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2}},
				{Name: "large", Usage: v1alpha1.MachineUsage{Maximum: 1}},
			},
			wantReady: metav1.ConditionTrue, wantReason: ReasonReady, wantSmall: 2,
		},
		"nothing changed: nothing is written": {
			objs:       world(),
			change:     func(*testing.T, *fixture) {},
			wantWrites: nil,
			wantUsage: []v1alpha1.AvailableMachine{
				{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2}},
				{Name: "large", Usage: v1alpha1.MachineUsage{Maximum: 1}},
			},
			wantReady: metav1.ConditionTrue, wantReason: ReasonReady, wantSmall: 2,
		},
		"a new guest takes over a reservation": {
			objs: world(
				makePod(machinegroup.PodRoleReservation, "small", "small-general-machine-0", "running"),
				makePod(machinegroup.PodRoleReservation, "small", "small-general-machine-1", "running"),
			),
			change: func(t *testing.T, f *fixture) {
				f.cache(t, makePod(machinegroup.PodRoleGuest, "small", "guest", "waiting"))
			},
			wantWrites: []string{"update statefulsets small-general-machine", "update machinegroups/status general-machine"},
			wantUsage: []v1alpha1.AvailableMachine{
				{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2, Reserved: 2, Waiting: 1}},
				{Name: "large", Usage: v1alpha1.MachineUsage{Maximum: 1}},
			},
			wantReady: metav1.ConditionTrue, wantReason: ReasonReady, wantSmall: 1,
		},
		"a guest outside the opted-in namespaces takes nothing": {
			objs: world(
				makePod(machinegroup.PodRoleReservation, "small", "small-general-machine-0", "running"),
				makePod(machinegroup.PodRoleReservation, "small", "small-general-machine-1", "running"),
			),
			change: func(t *testing.T, f *fixture) {
				p := makePod(machinegroup.PodRoleGuest, "small", "intruder", "waiting")
				p.Namespace = "not-opted-in"
				f.cache(t, p)
			},
			wantWrites: nil,
			wantUsage: []v1alpha1.AvailableMachine{
				{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2, Reserved: 2}},
				{Name: "large", Usage: v1alpha1.MachineUsage{Maximum: 1}},
			},
			wantReady: metav1.ConditionTrue, wantReason: ReasonReady, wantSmall: 2,
		},
		"a deleting guest counts as neither": {
			objs: world(
				makePod(machinegroup.PodRoleGuest, "small", "guest-0", "running"),
				makePod(machinegroup.PodRoleGuest, "small", "guest-1", "deleting"),
				makePod(machinegroup.PodRoleReservation, "small", "small-general-machine-0", "running"),
			),
			wantWrites: []string{
				"create services small-general-machine", "create statefulsets small-general-machine",
				"create services large-general-machine", "create statefulsets large-general-machine",
				"update machinegroups/status general-machine",
			},
			wantUsage: []v1alpha1.AvailableMachine{
				{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2, Reserved: 1, Used: 1}},
				{Name: "large", Usage: v1alpha1.MachineUsage{Maximum: 1}},
			},
			wantReady: metav1.ConditionTrue, wantReason: ReasonReady, wantSmall: 1,
		},
		"a removed type loses its StatefulSet and Service": {
			objs: world(),
			change: func(t *testing.T, f *fixture) {
				g := must(f.c.groups.Get(testGroup)).DeepCopy()
				g.Spec.MachineTypes, g.Spec.NodePools, g.Generation = g.Spec.MachineTypes[:1], g.Spec.NodePools[:1], 2
				f.update(t, g)
			},
			wantWrites: []string{
				"delete statefulsets large-general-machine", "delete services large-general-machine",
				"update machinegroups/status general-machine",
			},
			wantUsage: []v1alpha1.AvailableMachine{{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2}}},
			wantReady: metav1.ConditionTrue, wantReason: ReasonReady, wantSmall: 2,
		},
		"a StatefulSet of another owner is left alone": {
			objs: world(func() runtime.Object {
				s := desiredStatefulSet(group, &group.Spec.MachineTypes[0], 5, Options{Namespace: testNamespace})
				s.OwnerReferences = nil
				return s
			}()),
			wantWrites: []string{
				"create services small-general-machine",
				"create services large-general-machine", "create statefulsets large-general-machine",
				"update machinegroups/status general-machine",
			},
			wantUsage: []v1alpha1.AvailableMachine{
				{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2}},
				{Name: "large", Usage: v1alpha1.MachineUsage{Maximum: 1}},
			},
			wantReady: metav1.ConditionFalse, wantReason: ReasonReservationConflict, wantSmall: 5,
		},
		"a StatefulSet that lost its labels, so the cache misses it, gets them back": {
			objs: world(),
			change: func(t *testing.T, f *fixture) {
				s := must(f.c.statefulSets.StatefulSets(testNamespace).Get("small-general-machine")).DeepCopy()
				s.Labels = nil
				f.update(t, s)
				_ = f.c.reserved.Apps().V1().StatefulSets().Informer().GetIndexer().Delete(s)
			},
			wantWrites: []string{"create statefulsets small-general-machine", "update statefulsets small-general-machine"},
			wantUsage: []v1alpha1.AvailableMachine{
				{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2}},
				{Name: "large", Usage: v1alpha1.MachineUsage{Maximum: 1}},
			},
			wantReady: metav1.ConditionTrue, wantReason: ReasonReady, wantSmall: 2,
		},
		"a pool that is not Ready": {
			objs: append(world()[2:], group, makePool(false, "node node-small does not exist")),
			wantWrites: []string{
				"create services small-general-machine", "create statefulsets small-general-machine",
				"create services large-general-machine", "create statefulsets large-general-machine",
				"update machinegroups/status general-machine",
			},
			wantUsage: []v1alpha1.AvailableMachine{
				{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 2}},
				{Name: "large", Usage: v1alpha1.MachineUsage{Maximum: 1}},
			},
			wantReady: metav1.ConditionFalse, wantReason: ReasonNodePoolNotReady, wantSmall: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig()))
			f := newFixture(t, tc.objs...)
			if tc.change != nil {
				if err := f.c.sync(ctx, testGroup); err != nil {
					t.Fatal(err)
				}
				f.settle(t)
				tc.change(t, f)
			}
			if err := f.c.sync(ctx, testGroup); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantWrites, f.writes()); diff != "" {
				t.Errorf("writes (-want,+got):\n%s", diff)
			}
			f.settle(t)
			g := must(f.c.groups.Get(testGroup))
			if diff := cmp.Diff(tc.wantUsage, g.Status.AvailableMachines); diff != "" {
				t.Errorf("usage (-want,+got):\n%s", diff)
			}
			c := meta.FindStatusCondition(g.Status.Conditions, machinegroup.ConditionReady)
			if c == nil || c.Status != tc.wantReady || c.Reason != tc.wantReason || c.ObservedGeneration != g.Generation {
				t.Errorf("Ready condition %+v, want %s with reason %s", c, tc.wantReady, tc.wantReason)
			}
			if g.Status.ObservedGeneration != g.Generation || g.Status.NodeCount != int32(len(g.Spec.NodePools)) {
				t.Errorf("observedGeneration %d, nodeCount %d; want %d, %d", g.Status.ObservedGeneration, g.Status.NodeCount, g.Generation, len(g.Spec.NodePools))
			}
			s, err := f.c.statefulSets.StatefulSets(testNamespace).Get(machinegroup.ReservationName(testGroup, "small"))
			if err != nil {
				t.Fatal(err)
			}
			if got := ptr.Deref(s.Spec.Replicas, -1); got != tc.wantSmall {
				t.Errorf("small's replicas: %d, want %d", got, tc.wantSmall)
			}
			// A second sync with nothing new writes nothing.
			if err := f.c.sync(ctx, testGroup); err != nil {
				t.Fatal(err)
			}
			if w := f.writes(); len(w) != 0 {
				t.Errorf("a sync without changes wrote %s", strings.Join(w, ", "))
			}
		})
	}
}

// TestSyncTemplateChange checks that a new spec of a type rewrites the
// template of its StatefulSet, and that the write is decided by the template
// hash, not by the defaults the API server adds to a template.
func TestSyncTemplateChange(t *testing.T) {
	ctx := klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig()))
	small := makeType("small", "2", "4Gi", 0, 2)
	f := newFixture(t, makeGroup(small), makePool(true, ""), makeNode("node-small", "8", "16Gi", ""))
	if err := f.c.sync(ctx, testGroup); err != nil {
		t.Fatal(err)
	}
	f.settle(t)

	// The API server defaults fields of the template: no write for that.
	s := must(f.c.statefulSets.StatefulSets(testNamespace).Get("small-general-machine")).DeepCopy()
	s.Spec.Template.Spec.DNSPolicy = "ClusterFirst"
	s.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	f.update(t, s)
	if err := f.c.sync(ctx, testGroup); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("defaulted template: writes %v, want none", w)
	}

	g := must(f.c.groups.Get(testGroup)).DeepCopy()
	g.Spec.MachineTypes[0].Spec.CPU = must(resourceParse("3"))
	g.Generation = 2
	f.update(t, g)
	if err := f.c.sync(ctx, testGroup); err != nil {
		t.Fatal(err)
	}
	f.settle(t)
	s = must(f.c.statefulSets.StatefulSets(testNamespace).Get("small-general-machine"))
	if got := s.Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().String(); got != "3" {
		t.Errorf("cpu limit after the type changed: %s, want 3", got)
	}
	if s.Annotations[AnnotationTemplateHash] != desiredStatefulSet(g, &g.Spec.MachineTypes[0], 2, f.c.opts).Annotations[AnnotationTemplateHash] {
		t.Errorf("template hash not updated")
	}
}

// TestSyncGroupGone checks that a deleted group costs no write: the garbage
// collector removes what it owned.
func TestSyncGroupGone(t *testing.T) {
	f := newFixture(t)
	if err := f.c.sync(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes for a missing group: %v", w)
	}
}
