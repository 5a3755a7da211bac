package action

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	workfake "open-cluster-management.io/api/client/work/clientset/versioned/fake"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// longName is a DNS subdomain of n characters: segments of 50 letters joined by dots,
// ending in end.
func longName(n int, end string) string {
	var b strings.Builder
	for b.Len() < n-len(end) {
		if b.Len() > 0 && b.Len()%51 == 50 {
			b.WriteByte('.')
		} else {
			b.WriteByte('a' + byte(b.Len()%26))
		}
	}
	return b.String() + end
}

// longNamespace is a namespace name (a DNS label) of 63 characters.
var longNamespace = strings.Repeat("n", 62) + "s"

func TestWorkMeta(t *testing.T) {
	cases := map[string]struct {
		namespace, name string
		// want is the ManifestWork's name, labels and annotations for names that fit; for
		// the others wantCut says which are cut, and the test checks their form.
		want                      *metav1.ObjectMeta
		wantNameCut, wantLabelCut bool
	}{
		"a short name": {
			namespace: "shop", name: "web",
			want: &metav1.ObjectMeta{Name: "shop.web", Namespace: "cluster1",
				Labels: map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: "web"}, Annotations: map[string]string{}},
		},
		"a name of 63 characters is its own label": {
			namespace: "shop", name: longName(63, "z"),
			want: &metav1.ObjectMeta{Name: "shop." + longName(63, "z"), Namespace: "cluster1",
				Labels: map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: longName(63, "z")}, Annotations: map[string]string{}},
		},
		"a name of 64 characters": {
			namespace: "shop", name: longName(64, "z"), wantLabelCut: true,
		},
		"a name of 253 characters": {
			namespace: "shop", name: longName(253, "z"), wantNameCut: true, wantLabelCut: true,
		},
		"the longest name that fits with a namespace of 63 characters": {
			namespace: longNamespace, name: longName(253-64, "z"), wantLabelCut: true,
		},
		"one character more": {
			namespace: longNamespace, name: longName(253-63, "z"), wantNameCut: true, wantLabelCut: true,
		},
		"the longest name in the longest namespace": {
			namespace: longNamespace, name: longName(253, "z"), wantNameCut: true, wantLabelCut: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := ut.MakeHPAIntent(tc.name, tc.namespace).Obj()
			if errs := validation.IsDNS1123Subdomain(tc.name); len(errs) > 0 {
				t.Fatalf("the test's intent name is no object name: %v", errs)
			}
			got := WorkMeta(in, "cluster1")
			if tc.want != nil {
				if diff := cmp.Diff(*tc.want, got); diff != "" {
					t.Errorf("ManifestWork metadata (-want,+got):\n%s", diff)
				}
			}
			if errs := validation.IsDNS1123Subdomain(got.Name); len(errs) > 0 {
				t.Errorf("ManifestWork name %q: %v", got.Name, errs)
			}
			if got.Name != WorkName(in) {
				t.Errorf("ManifestWork name %q, WorkName %q", got.Name, WorkName(in))
			}
			for k, v := range got.Labels {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("label %s=%q: %v", k, v, errs)
				}
			}
			if nameCut := !strings.HasPrefix(got.Name, tc.namespace+"."); nameCut != tc.wantNameCut {
				t.Errorf("ManifestWork name %q cut: %v, want %v", got.Name, nameCut, tc.wantNameCut)
			}
			if labelCut := got.Labels[v1alpha1.LabelIntentName] != tc.name; labelCut != tc.wantLabelCut {
				t.Errorf("label %q cut: %v, want %v", got.Labels[v1alpha1.LabelIntentName], labelCut, tc.wantLabelCut)
			}
			if tc.wantLabelCut {
				if diff := cmp.Diff(map[string]string{AnnotationIntentName: tc.name}, got.Annotations); diff != "" {
					t.Errorf("annotations of a cut label (-want,+got):\n%s", diff)
				}
			}
			// Every reader finds the intent again.
			w := &workv1.ManifestWork{ObjectMeta: got}
			ns, n, ok := IntentOf(w)
			if diff := cmp.Diff([]any{tc.namespace, tc.name, true}, []any{ns, n, ok}); diff != "" {
				t.Errorf("IntentOf (-want,+got):\n%s", diff)
			}
			if !WorkSelector(tc.namespace, tc.name).Matches(labels.Set(got.Labels)) {
				t.Errorf("WorkSelector(%s, %s) does not select the ManifestWork's labels %v", tc.namespace, tc.name, got.Labels)
			}
		})
	}
}

// TestWorkNamesAreUnique: names that share their beginning, or differ only in dots and dashes,
// get ManifestWorks and label values of their own, and no cut name is another intent's.
func TestWorkNamesAreUnique(t *testing.T) {
	long := longName(253, "")
	intents := []*v1alpha1.HPAIntent{
		ut.MakeHPAIntent(long[:252]+"a", longNamespace).Obj(),
		ut.MakeHPAIntent(long[:252]+"b", longNamespace).Obj(),
		ut.MakeHPAIntent(long[:252]+"a", "shop").Obj(),
		ut.MakeHPAIntent(long[:63]+"a", "shop").Obj(),
		ut.MakeHPAIntent(long[:63]+"b", "shop").Obj(),
		ut.MakeHPAIntent(strings.ReplaceAll(long[:252]+"a", ".", "-"), longNamespace).Obj(),
	}
	// An intent named as the cut ManifestWork name of the first, less its namespace.
	cut := WorkName(intents[0])
	intents = append(intents, ut.MakeHPAIntent(cut[min(len(cut), len(longNamespace)+1):], longNamespace).Obj())

	works := map[string]string{}
	labelValues := map[string]string{}
	for _, in := range intents {
		key := in.Namespace + "/" + in.Name
		if other, dup := works[WorkName(in)]; dup {
			t.Errorf("intents %s and %s share the ManifestWork %s", other, key, WorkName(in))
		}
		works[WorkName(in)] = key
		m := WorkMeta(in, "cluster1")
		lv := in.Namespace + "/" + m.Labels[v1alpha1.LabelIntentName]
		if other, dup := labelValues[lv]; dup {
			t.Errorf("intents %s and %s share the label value %s", other, key, lv)
		}
		labelValues[lv] = key
	}
}

func TestIntentOf(t *testing.T) {
	long := longName(100, "z")
	cutLabel := WorkMeta(ut.MakeHPAIntent(long, "shop").Obj(), "c").Labels[v1alpha1.LabelIntentName]
	cases := map[string]struct {
		labels, annotations map[string]string
		want                []any
	}{
		"a short name": {
			labels: map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: "web"},
			want:   []any{"shop", "web", true},
		},
		"a cut name with its annotation": {
			labels:      map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: cutLabel},
			annotations: map[string]string{AnnotationIntentName: long},
			want:        []any{"shop", long, true},
		},
		"a cut name without its annotation": {
			labels: map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: cutLabel},
			want:   []any{"", "", false},
		},
		"an annotation the label does not match": {
			labels:      map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: cutLabel},
			annotations: map[string]string{AnnotationIntentName: long + "x"},
			want:        []any{"", "", false},
		},
		"no namespace": {
			labels: map[string]string{v1alpha1.LabelIntentName: "web"},
			want:   []any{"", "", false},
		},
		"not fleetfit's": {
			want: []any{"", "", false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns, n, ok := IntentOf(&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations}})
			if diff := cmp.Diff(tc.want, []any{ns, n, ok}); diff != "" {
				t.Errorf("IntentOf (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestLongNamesAreDelivered: an intent whose name is longer than a label value, in a namespace
// whose name makes "<namespace>.<name>" too long for an object name, is delivered to its
// decided cluster and its ManifestWork elsewhere deleted, while the ManifestWork of another
// intent with the same beginning stays.
func TestLongNamesAreDelivered(t *testing.T) {
	long := longName(252, "")
	in := ut.MakeHPAIntent(long+"a", longNamespace).Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", "app").Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
	).Manifest(deployment("web", "")).Obj()
	in.Generation = 1
	in.Finalizers = []string{Finalizer}
	in.Status.ScheduledPlacement = "web"
	meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: 1})
	other := ut.MakeHPAIntent(long+"b", longNamespace).Obj()
	decision := &clusterv1beta1.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{Namespace: longNamespace, Name: "web-decision-1", Labels: map[string]string{clusterv1beta1.PlacementLabel: "web"}},
		Status:     clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{{ClusterName: "cluster1"}}},
	}
	stale := &workv1.ManifestWork{ObjectMeta: WorkMeta(in, "cluster2")}
	others := []*workv1.ManifestWork{{ObjectMeta: WorkMeta(other, "cluster1")}, {ObjectMeta: WorkMeta(other, "cluster2")}}
	// One with the intent's labels whose annotation names another intent is not the intent's.
	foreign := &workv1.ManifestWork{ObjectMeta: WorkMeta(in, "cluster3")}
	foreign.Name, foreign.Annotations[AnnotationIntentName] = "foreign", other.Name
	others = append(others, foreign)

	fleetfitClient := fleetfitfake.NewSimpleClientset(in, other)
	workClient := workfake.NewSimpleClientset(stale, others[0], others[1], others[2])
	ocm := clusterinformers.NewSharedInformerFactory(clusterfake.NewSimpleClientset(), 0)
	work := workinformers.NewSharedInformerFactory(workClient, 0)
	fleetfit := fleetfitinformers.NewSharedInformerFactory(fleetfitClient, 0)
	c, err := New(Clients{Work: workClient, Fleetfit: fleetfitClient, Recorder: events.NewFakeRecorder(10)}, ocm, work, fleetfit, cache.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	adds := []error{
		fleetfit.Fleetfit().V1alpha1().HPAIntents().Informer().GetIndexer().Add(in),
		fleetfit.Fleetfit().V1alpha1().HPAIntents().Informer().GetIndexer().Add(other),
		ocm.Cluster().V1beta1().PlacementDecisions().Informer().GetIndexer().Add(decision),
	}
	for _, w := range append(others, stale) {
		adds = append(adds, work.Work().V1().ManifestWorks().Informer().GetIndexer().Add(w))
	}
	for _, err := range adds {
		if err != nil {
			t.Fatal(err)
		}
	}

	if err := c.sync(t.Context(), longNamespace+"/"+in.Name); err != nil {
		t.Fatalf("sync: %v", err)
	}
	list, err := workClient.WorkV1().ManifestWorks("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := sets.New[string]()
	for _, w := range list.Items {
		ns, name, ok := IntentOf(&w)
		if !ok {
			got.Insert(w.Namespace + " " + w.Name)
			continue
		}
		if errs := validation.IsDNS1123Subdomain(w.Name); len(errs) > 0 {
			t.Errorf("ManifestWork %s/%s: %v", w.Namespace, w.Name, errs)
		}
		for k, v := range w.Labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("ManifestWork %s/%s: label %s=%q: %v", w.Namespace, w.Name, k, v, errs)
			}
		}
		got.Insert(w.Namespace + " " + ns + "/" + name[len(name)-1:])
	}
	want := sets.New(
		"cluster1 "+longNamespace+"/a", // delivered
		"cluster1 "+longNamespace+"/b", // the other intent's, kept
		"cluster2 "+longNamespace+"/b",
		"cluster3 foreign",
	)
	if diff := cmp.Diff(sets.List(want), sets.List(got)); diff != "" {
		t.Errorf("ManifestWorks: cluster intent-namespace/last character of its name (-want,+got):\n%s", diff)
	}
	updated, err := fleetfitClient.FleetfitV1alpha1().HPAIntents(longNamespace).Get(t.Context(), in.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantClusters := []v1alpha1.ClusterDelivery{{ClusterName: "cluster1", ManifestWork: WorkName(in), State: v1alpha1.DeliveryPending,
		Message: "waiting for the work agent", Replicas: ptr.To[int32](1)}}
	if diff := cmp.Diff(wantClusters, updated.Status.Clusters, cmpopts.IgnoreFields(v1alpha1.ClusterDelivery{}, "LastTransitionTime")); diff != "" {
		t.Errorf("status.clusters (-want,+got):\n%s", diff)
	}

	// Once the intent is gone, what is left of it goes, and the other intent's stays.
	if err := fleetfit.Fleetfit().V1alpha1().HPAIntents().Informer().GetIndexer().Delete(in); err != nil {
		t.Fatal(err)
	}
	created, err := workClient.WorkV1().ManifestWorks("cluster1").Get(t.Context(), WorkName(in), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := work.Work().V1().ManifestWorks().Informer().GetIndexer().Add(created); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(t.Context(), longNamespace+"/"+in.Name); err != nil {
		t.Fatalf("sync of the deleted intent: %v", err)
	}
	if _, err := workClient.WorkV1().ManifestWorks("cluster1").Get(t.Context(), WorkName(in), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted intent's ManifestWork: %v, want it deleted", err)
	}
	for _, w := range others {
		if _, err := workClient.WorkV1().ManifestWorks(w.Namespace).Get(t.Context(), w.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the other intent's ManifestWork %s/%s: %v", w.Namespace, w.Name, err)
		}
	}
}
