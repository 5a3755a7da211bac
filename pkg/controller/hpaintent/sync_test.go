package hpaintent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	clusterlisterv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const ns = "apps"

var now = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func placementLister(t *testing.T, names ...string) clusterlisterv1beta1.PlacementLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, n := range names {
		if err := idx.Add(utiltesting.MakePlacement(n, ns).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	return clusterlisterv1beta1.NewPlacementLister(idx)
}

// fwall is the fwall example with a workload whose StatefulSet lacks the
// firewall container.
func fwallMissingContainer() *utiltesting.HPAIntentWrapper {
	return utiltesting.FwallHPAIntent(ns).
		Manifest(&appsv1.StatefulSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "core-fwall"},
			Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "fw"}},
			}}},
		}).
		Manifest(&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "api-server"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: utiltesting.FwallAPIContainer}},
			}}},
		})
}

func TestValidCondition(t *testing.T) {
	withGeneration := func(in *v1alpha1.HPAIntent) *v1alpha1.HPAIntent { in.Generation = 3; return in }
	cases := map[string]struct {
		placements []string
		intent     *v1alpha1.HPAIntent
		want       metav1.Condition
	}{
		"valid": {
			placements: []string{utiltesting.FwallName},
			intent:     withGeneration(utiltesting.FwallHPAIntent(ns).Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: ReasonValid,
				Message: `Placement "fwall" exists and all 2 consumers resolve`, ObservedGeneration: 3, LastTransitionTime: now},
		},
		"placement missing": {
			placements: []string{"other"},
			intent:     withGeneration(utiltesting.FwallHPAIntent(ns).Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: hpa.ReasonPlacementNotFound,
				Message:            `Placement "fwall" not found in namespace "apps": create it or fix spec.placementRef.name`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
		"workload problem": {
			placements: []string{utiltesting.FwallName},
			intent:     withGeneration(fwallMissingContainer().Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: ReasonInvalidWorkload,
				Message:            `consumer "core-fwall": target StatefulSet core-fwall has no container "palo-alto-e3000" (containers: fw); set target.container to one of them`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
		"both: the placement gives the reason, the message has all": {
			intent: withGeneration(fwallMissingContainer().Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: hpa.ReasonPlacementNotFound,
				Message: `Placement "fwall" not found in namespace "apps": create it or fix spec.placementRef.name; ` +
					`consumer "core-fwall": target StatefulSet core-fwall has no container "palo-alto-e3000" (containers: fw); set target.container to one of them`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
		"a manifest the hub does not deliver": {
			placements: []string{"p"},
			intent: withGeneration(utiltesting.MakeHPAIntent("x", ns).Placement("p").Consumer(
				utiltesting.MakeConsumer("x").Target("Deployment", "x", "x").Requirement(utiltesting.MakeResource("a", "cpu").Requests("1").Obj()).Obj()).
				Manifest(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "x"},
					"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "x", "image": "x"}}}}}}).
				Manifest(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "all-mine"}}).Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: ReasonManifestNotAllowed,
				Message: `spec.workload.manifests[1] (ClusterRoleBinding all-mine): rbac.authorization.k8s.io/ClusterRoleBinding is cluster-scoped and never delivered: ` +
					`an intent's workload may only hold namespaced objects of its namespace (and that Namespace); ask the managed clusters' admins to install it; nothing of the workload is delivered until it is fixed`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
		"no consumers yet": {
			placements: []string{"p"},
			intent:     withGeneration(utiltesting.MakeHPAIntent("x", ns).Placement("p").Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: ReasonIncomplete,
				Message:            `the intent has no consumers yet: add at least one to spec.consumers; until then it changes nothing about the decisions of Placement "p"`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
		"a consumer without requirements": {
			placements: []string{"p"},
			intent: withGeneration(utiltesting.MakeHPAIntent("x", ns).Placement("p").Consumer(
				utiltesting.MakeConsumer("a").Target("Deployment", "a", "a").Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
				utiltesting.MakeConsumer("b").Target("Deployment", "b", "b").Obj()).Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: ReasonIncomplete,
				Message:            `consumer "b" has no requirements yet: add at least one to its requirements; until then it changes nothing about the decisions of Placement "p"`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
		"two consumers without requirements": {
			placements: []string{"p"},
			intent: withGeneration(utiltesting.MakeHPAIntent("x", ns).Placement("p").Consumer(
				utiltesting.MakeConsumer("a").Target("Deployment", "a", "").Obj(),
				utiltesting.MakeConsumer("b").Target("Deployment", "b", "").Obj()).Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: ReasonIncomplete,
				Message:            `consumers "a", "b" have no requirements yet: add at least one to the requirements of each; until then it changes nothing about the decisions of Placement "p"`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
		"incomplete and its placement missing: the placement gives the reason": {
			intent: withGeneration(utiltesting.MakeHPAIntent("x", ns).Placement("p").Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: hpa.ReasonPlacementNotFound,
				Message: `Placement "p" not found in namespace "apps": create it or fix spec.placementRef.name; ` +
					`the intent has no consumers yet: add at least one to spec.consumers; until then it changes nothing about the decisions of Placement "p"`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
		"requirements problem": {
			placements: []string{"p"},
			intent: utiltesting.MakeHPAIntent("x", ns).Placement("p").Consumer(
				utiltesting.MakeConsumer("x").Target("Deployment", "x", "x").Requirement(
					utiltesting.MakeResource("a", "cpu").Requests("1").Obj(),
					utiltesting.MakeResource("b", "cpu").Requests("2").Obj(),
				).Obj()).Obj(),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: ReasonInvalidRequirements,
				Message:            `spec.consumers[0].requirements[1].resource.name: Invalid value: "cpu": two mandatory requirements ask for amounts of the same resource, but a container has one request and one limit per resource; keep one of them, or make the other optional`,
				LastTransitionTime: now},
		},
		"containers of one pod with replicas that disagree": {
			placements: []string{"p"},
			intent: withGeneration(utiltesting.MakeHPAIntent("x", ns).Placement("p").Consumer(
				utiltesting.MakeConsumer("app").Target("Deployment", "web", "app").Replicas(2).Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
				utiltesting.MakeConsumer("sidecar").Target("Deployment", "web", "sidecar").Replicas(3).Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj()).Obj()),
			want: metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: ReasonInvalidRequirements,
				Message: `consumers "app" (2 replicas) and "sidecar" (3 replicas) target Deployment web, so they are containers of one pod and run as many replicas; ` +
					`give them the same replicas, or leave replicas unset on both to take the workload's`,
				ObservedGeneration: 3, LastTransitionTime: now},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ValidCondition(placementLister(t, tc.placements...), nil, tc.intent, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("condition (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSync checks the status write and the events over a sequence of syncs
// of one intent: invalid, unchanged, valid.
func TestSync(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	in := fwallMissingContainer().Obj()
	in.Generation = 1
	client := fake.NewSimpleClientset(in)
	intents := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	recorder := events.NewFakeRecorder(10)
	clock := clocktesting.NewFakeClock(now.Time)
	c := &Controller{
		client: client, recorder: recorder, opts: Options{Clock: clock},
		intents: fleetfitlisters.NewHPAIntentLister(intents), placements: placementLister(t, utiltesting.FwallName),
	}
	key := ns + "/" + utiltesting.FwallName
	// syncWith puts obj in the cache, syncs and returns the stored intent.
	syncWith := func(obj *v1alpha1.HPAIntent) *v1alpha1.HPAIntent {
		t.Helper()
		if err := intents.Update(obj); err != nil {
			t.Fatal(err)
		}
		if err := c.sync(ctx, key); err != nil {
			t.Fatalf("sync: %v", err)
		}
		got, err := client.FleetfitV1alpha1().HPAIntents(ns).Get(ctx, utiltesting.FwallName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	nextEvent := func() string {
		select {
		case e := <-recorder.Events:
			return e
		default:
			return ""
		}
	}

	got := syncWith(in)
	if valid, known := hpa.IsValid(got); valid || !known {
		t.Errorf("after the first sync IsValid = (%v, %v), want (false, true)", valid, known)
	}
	if e, want := nextEvent(), `Warning InvalidWorkload consumer "core-fwall": target StatefulSet core-fwall has no container "palo-alto-e3000" (containers: fw); set target.container to one of them`; e != want {
		t.Errorf("event %q, want %q", e, want)
	}

	// Nothing changed: no write, no event.
	writes := len(client.Actions())
	clock.Step(time.Minute)
	got = syncWith(got)
	if n := len(client.Actions()) - writes; n != 1 { // the Get above
		t.Errorf("a sync without change made %d API calls besides the Get: %v", n-1, client.Actions()[writes:])
	}
	if e := nextEvent(); e != "" {
		t.Errorf("unexpected event %q", e)
	}

	// The user fixes the container name.
	fixed := got.DeepCopy()
	fixed.Generation = 2
	fixed.Spec.Consumers[0].Target.Container = "fw"
	if _, err := client.FleetfitV1alpha1().HPAIntents(ns).Update(ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = syncWith(fixed)
	if valid, known := hpa.IsValid(got); !valid || !known {
		t.Errorf("after the fix IsValid = (%v, %v), want (true, true)", valid, known)
	}
	want := metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: ReasonValid,
		Message: `Placement "fwall" exists and all 2 consumers resolve`, ObservedGeneration: 2,
		LastTransitionTime: metav1.NewTime(now.Add(time.Minute))}
	if diff := cmp.Diff([]metav1.Condition{want}, got.Status.Conditions); diff != "" {
		t.Errorf("conditions (-want,+got):\n%s", diff)
	}
	if e := nextEvent(); e != "Normal Valid "+want.Message {
		t.Errorf("event %q, want the Normal Valid event", e)
	}
}

// TestSyncIncomplete: an intent being built is told what it lacks with a Normal event, not a
// Warning.
func TestSyncIncomplete(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	in := utiltesting.MakeHPAIntent("app", ns).Placement("p").Obj()
	in.Generation = 1
	client := fake.NewSimpleClientset(in)
	intents := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := intents.Add(in); err != nil {
		t.Fatal(err)
	}
	recorder := events.NewFakeRecorder(10)
	c := &Controller{
		client: client, recorder: recorder, opts: Options{Clock: clocktesting.NewFakeClock(now.Time)},
		intents: fleetfitlisters.NewHPAIntentLister(intents), placements: placementLister(t, "p"),
	}
	if err := c.sync(ctx, ns+"/app"); err != nil {
		t.Fatal(err)
	}
	want := `Normal Incomplete the intent has no consumers yet: add at least one to spec.consumers; until then it changes nothing about the decisions of Placement "p"`
	select {
	case e := <-recorder.Events:
		if e != want {
			t.Errorf("event %q, want %q", e, want)
		}
	default:
		t.Errorf("no event, want %q", want)
	}
}
