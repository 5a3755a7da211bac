package action

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
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
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// splitStatus is a status.split of total replicas with the shares given as cluster, replicas
// pairs.
func splitStatus(total int32, shares ...any) *v1alpha1.SplitStatus {
	s := &v1alpha1.SplitStatus{Replicas: total}
	for i := 0; i+1 < len(shares); i += 2 {
		s.Shares = append(s.Shares, v1alpha1.ClusterShare{ClusterName: shares[i].(string), Replicas: int32(shares[i+1].(int))})
	}
	return s
}

func statefulSet(name string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](10),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}},
		},
	}
}

func replicaSet(name string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](10),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}},
		},
	}
}

func job(name string, parallelism, completions *int32) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Parallelism: parallelism, Completions: completions,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app", Image: "app"}}}},
		},
	}
}

// splitIntent is an intent "web" in "shop" that splits the replicas of its one workload
// object, of kind, among its placement's clusters, with a ConfigMap beside it.
func splitIntent(kind string, workload any) *v1alpha1.HPAIntent {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}
	return ut.MakeHPAIntent("web", "shop").Placement("web").Split(v1alpha1.ReplicaSplit{}).Consumer(
		ut.MakeConsumer("web").Target(kind, "web", "app").Requirement(ut.MakeResource("gpu", "nvidia.com/gpu").Limits("2").Obj()).Obj(),
	).Manifest(workload).Manifest(cm).Obj()
}

// workObject returns the manifest of w of kind and name.
func workObject(t *testing.T, w *workv1.ManifestWork, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, m := range w.Spec.Workload.Manifests {
		if o, ok := manifestObject(m.RawExtension); ok && o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("ManifestWork %s/%s has no %s %s", w.Namespace, w.Name, kind, name)
	return nil
}

// specFields returns the named integer fields of an object's spec, those it has.
func specFields(o *unstructured.Unstructured, names ...string) map[string]int64 {
	out := map[string]int64{}
	for _, n := range names {
		if v, found, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", n); found {
			switch v := v.(type) {
			case int64:
				out[n] = v
			case float64:
				out[n] = int64(v)
			}
		}
	}
	return out
}

// TestDesiredWorkSplit: each cluster's ManifestWork carries its share as the workload's
// replicas — a Job's parallelism, with its completions divided in proportion — and the rest
// of the workload as an unsplit intent has it; a cluster without a share gets no work.
func TestDesiredWorkSplit(t *testing.T) {
	shares := splitStatus(10, "cluster1", 4, "cluster2", 6)
	cases := map[string]struct {
		kind     string
		workload any
		fields   []string
		want     map[string]map[string]int64
	}{
		"Deployment": {kind: "Deployment", workload: deployment("web", ""), fields: []string{"replicas"},
			want: map[string]map[string]int64{"cluster1": {"replicas": 4}, "cluster2": {"replicas": 6}}},
		"StatefulSet": {kind: "StatefulSet", workload: statefulSet("web"), fields: []string{"replicas"},
			want: map[string]map[string]int64{"cluster1": {"replicas": 4}, "cluster2": {"replicas": 6}}},
		"ReplicaSet": {kind: "ReplicaSet", workload: replicaSet("web"), fields: []string{"replicas"},
			want: map[string]map[string]int64{"cluster1": {"replicas": 4}, "cluster2": {"replicas": 6}}},
		"a Job with completions divides them": {kind: "Job", workload: job("web", ptr.To[int32](10), ptr.To[int32](25)),
			fields: []string{"parallelism", "completions"},
			want: map[string]map[string]int64{
				"cluster1": {"parallelism": 4, "completions": 10},
				"cluster2": {"parallelism": 6, "completions": 15},
			}},
		"a work-queue Job gets no completions": {kind: "Job", workload: job("web", ptr.To[int32](10), nil),
			fields: []string{"parallelism", "completions"},
			want:   map[string]map[string]int64{"cluster1": {"parallelism": 4}, "cluster2": {"parallelism": 6}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := splitIntent(tc.kind, tc.workload)
			in.Status.Split = shares
			r, err := hpa.Resolve(in)
			if err != nil {
				t.Fatal(err)
			}
			unsplit := in.DeepCopy()
			unsplit.Spec.Split = nil
			for _, cluster := range []string{"cluster1", "cluster2"} {
				w, err := desiredWork(in, r, cluster, nil)
				if err != nil {
					t.Fatalf("%s: %v", cluster, err)
				}
				got := workObject(t, w, tc.kind, "web")
				if diff := cmp.Diff(tc.want[cluster], specFields(got, tc.fields...)); diff != "" {
					t.Errorf("%s: the %s's replicas (-want,+got):\n%s", cluster, tc.kind, diff)
				}
				// Everything else is what an unsplit intent delivers.
				whole, err := desiredWork(unsplit, r, cluster, nil)
				if err != nil {
					t.Fatal(err)
				}
				wholeObj := workObject(t, whole, tc.kind, "web").DeepCopy()
				gotObj := got.DeepCopy()
				for _, f := range tc.fields {
					unstructured.RemoveNestedField(wholeObj.Object, "spec", f)
					unstructured.RemoveNestedField(gotObj.Object, "spec", f)
				}
				if diff := cmp.Diff(wholeObj.Object, gotObj.Object); diff != "" {
					t.Errorf("%s: the split %s differs from the unsplit one beyond its replicas (-unsplit,+split):\n%s", cluster, tc.kind, diff)
				}
				if diff := cmp.Diff(workObject(t, whole, "ConfigMap", "cfg").Object, workObject(t, w, "ConfigMap", "cfg").Object); diff != "" {
					t.Errorf("%s: the ConfigMap differs (-unsplit,+split):\n%s", cluster, diff)
				}
			}
			if _, err := desiredWork(in, r, "cluster3", nil); !errors.Is(err, errNoShare) {
				t.Errorf("desiredWork for a cluster without a share: %v, want errNoShare", err)
			}
		})
	}
}

// TestDivideCompletions: a Job's completions are divided in proportion to the shares, the
// parts adding up to the whole, the remainder to the largest fractions and then by name.
func TestDivideCompletions(t *testing.T) {
	cases := map[string]struct {
		completions int64
		shares      *v1alpha1.SplitStatus
		want        map[string]int64
	}{
		"exact":                    {completions: 20, shares: splitStatus(10, "a", 4, "b", 6), want: map[string]int64{"a": 8, "b": 12}},
		"remainder to the largest": {completions: 10, shares: splitStatus(6, "a", 1, "b", 2, "c", 3), want: map[string]int64{"a": 2, "b": 3, "c": 5}},
		"ties by name":             {completions: 1, shares: splitStatus(2, "b", 1, "a", 1), want: map[string]int64{"a": 1, "b": 0}},
		"fewer than the clusters":  {completions: 2, shares: splitStatus(3, "a", 1, "b", 1, "c", 1), want: map[string]int64{"a": 1, "b": 1, "c": 0}},
		"no replicas":              {completions: 5, shares: splitStatus(0), want: map[string]int64{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, divideCompletions(tc.completions, tc.shares.Shares)); diff != "" {
				t.Errorf("divideCompletions (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestKeepJobCompletions: a Job delivered before keeps its completions, which Kubernetes
// refuses to change, and takes its new parallelism; a Job delivered for the first time takes
// both.
func TestKeepJobCompletions(t *testing.T) {
	in := splitIntent("Job", job("web", ptr.To[int32](10), ptr.To[int32](20)))
	r, err := hpa.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Status.Split = splitStatus(10, "cluster1", 4, "cluster2", 6)
	stored, err := desiredWork(in, r, "cluster1", nil)
	if err != nil {
		t.Fatal(err)
	}
	// As the API server returns it: raw JSON.
	for i, m := range stored.Spec.Workload.Manifests {
		b, err := json.Marshal(m.Object)
		if err != nil {
			t.Fatal(err)
		}
		stored.Spec.Workload.Manifests[i].RawExtension = runtime.RawExtension{Raw: b}
	}
	in.Status.Split = splitStatus(10, "cluster1", 5, "cluster2", 5)
	want, err := desiredWork(in, r, "cluster1", nil)
	if err != nil {
		t.Fatal(err)
	}
	keepJobCompletions(stored, want)
	if diff := cmp.Diff(map[string]int64{"parallelism": 5, "completions": 8}, specFields(workObject(t, want, "Job", "web"), "parallelism", "completions")); diff != "" {
		t.Errorf("the Job delivered again (-want,+got):\n%s", diff)
	}
	fresh, err := desiredWork(in, r, "cluster1", nil)
	if err != nil {
		t.Fatal(err)
	}
	keepJobCompletions(nil, fresh)
	if diff := cmp.Diff(map[string]int64{"parallelism": 5, "completions": 10}, specFields(workObject(t, fresh, "Job", "web"), "parallelism", "completions")); diff != "" {
		t.Errorf("the Job delivered for the first time (-want,+got):\n%s", diff)
	}
}

// TestFeedbackRules: every workload kind gets the replica counts of its status reported, under
// the names OCM's well-known rule gives a Deployment's.
func TestFeedbackRules(t *testing.T) {
	in := splitIntent("StatefulSet", statefulSet("web"))
	in.Status.Split = splitStatus(10, "cluster1", 10)
	r, err := hpa.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	w, err := desiredWork(in, r, "cluster1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "statefulsets", Name: "web", Namespace: "shop"},
		FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: "ReadyReplicas", Path: ".status.readyReplicas"},
			{Name: "Replicas", Path: ".status.replicas"},
			{Name: "AvailableReplicas", Path: ".status.availableReplicas"},
		}}},
	}}
	if diff := cmp.Diff(want, w.Spec.ManifestConfigs); diff != "" {
		t.Errorf("manifest configs (-want,+got):\n%s", diff)
	}
	jobRules := feedbackRules("Job")
	if len(jobRules) != 2 || jobRules[0].Type != workv1.WellKnownStatusType || jobRules[1].JsonPaths[0].Name != feedbackJobReady {
		t.Errorf("a Job's feedback rules %+v, want the well-known ones and its ready pods", jobRules)
	}
}

// TestWorkloadReplicas: status.clusters reports the replicas a ManifestWork delivers of the
// consumers' one target and the ready ones the work agent reports.
func TestWorkloadReplicas(t *testing.T) {
	feedback := func(kind string, values ...workv1.FeedbackValue) []workv1.ManifestCondition {
		return []workv1.ManifestCondition{{
			ResourceMeta:    workv1.ManifestResourceMeta{Kind: kind, Namespace: "shop", Name: "web"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		}}
	}
	twoTargets := splitIntent("Deployment", deployment("web", ""))
	twoTargets.Spec.Split = nil
	twoTargets.Spec.Consumers = append(twoTargets.Spec.Consumers, ut.MakeConsumer("other").Target("Deployment", "other", "app").Obj())
	cases := map[string]struct {
		in          *v1alpha1.HPAIntent
		kind        string
		feedback    []workv1.ManifestCondition
		wantReplica *int32
		wantReady   *int32
	}{
		"a Deployment's share, none reported yet": {in: splitIntent("Deployment", deployment("web", "")), kind: "Deployment",
			wantReplica: ptr.To[int32](4)},
		"a Deployment's ready replicas": {in: splitIntent("Deployment", deployment("web", "")), kind: "Deployment",
			feedback:    feedback("Deployment", integer("Replicas", 4), integer("ReadyReplicas", 3)),
			wantReplica: ptr.To[int32](4), wantReady: ptr.To[int32](3)},
		"reported, none ready": {in: splitIntent("Deployment", deployment("web", "")), kind: "Deployment",
			feedback:    feedback("Deployment", integer("Replicas", 4)),
			wantReplica: ptr.To[int32](4), wantReady: ptr.To[int32](0)},
		"a StatefulSet through its JSON paths": {in: splitIntent("StatefulSet", statefulSet("web")), kind: "StatefulSet",
			feedback:    feedback("StatefulSet", integer("Replicas", 4), integer("ReadyReplicas", 4)),
			wantReplica: ptr.To[int32](4), wantReady: ptr.To[int32](4)},
		"a Job's ready pods": {in: splitIntent("Job", job("web", ptr.To[int32](10), ptr.To[int32](20))), kind: "Job",
			feedback:    feedback("Job", integer(feedbackJobReady, 2), integer("JobSucceeded", 3)),
			wantReplica: ptr.To[int32](4), wantReady: ptr.To[int32](2)},
		"consumers of two objects": {in: twoTargets, kind: "Deployment",
			feedback: feedback("Deployment", integer("Replicas", 1), integer("ReadyReplicas", 1))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.in.DeepCopy()
			in.Status.Split = splitStatus(10, "cluster1", 4, "cluster2", 6)
			if in.Spec.Split == nil {
				in.Spec.Workload.Manifests = append(in.Spec.Workload.Manifests, ut.MakeHPAIntent("x", "shop").Manifest(deployment("other", "")).Obj().Spec.Workload.Manifests...)
			}
			r, err := hpa.Resolve(in)
			if err != nil {
				t.Fatal(err)
			}
			w, err := desiredWork(in, r, "cluster1", nil)
			if err != nil {
				t.Fatal(err)
			}
			w.Status.ResourceStatus.Manifests = tc.feedback
			replicas, ready := workloadReplicas(in, w)
			if diff := cmp.Diff([]*int32{tc.wantReplica, tc.wantReady}, []*int32{replicas, ready}); diff != "" {
				t.Errorf("replicas, ready (-want,+got):\n%s", diff)
			}
		})
	}
}

// splitController is a controller on fake clients whose informers hold in, the placement's
// decision of clusters and works; the test adds what changes to the returned indexers.
type splitController struct {
	*Controller
	fleetfit *fleetfitfake.Clientset
	work     *workfake.Clientset
	intents  interface{ Update(any) error }
	works    interface{ Update(any) error }
}

func newSplitController(t *testing.T, in *v1alpha1.HPAIntent, clusters ...string) *splitController {
	t.Helper()
	decision := &clusterv1beta1.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: "web-decision-1", Labels: map[string]string{clusterv1beta1.PlacementLabel: in.Spec.PlacementRef.Name}},
	}
	for _, c := range clusters {
		decision.Status.Decisions = append(decision.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	fleetfitClient := fleetfitfake.NewSimpleClientset(in)
	workClient := workfake.NewSimpleClientset()
	ocm := clusterinformers.NewSharedInformerFactory(clusterfake.NewSimpleClientset(), 0)
	work := workinformers.NewSharedInformerFactory(workClient, 0)
	fleetfit := fleetfitinformers.NewSharedInformerFactory(fleetfitClient, 0)
	c, err := New(Clients{Work: workClient, Fleetfit: fleetfitClient, Recorder: events.NewFakeRecorder(100)}, ocm, work, fleetfit, cache.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	intents := fleetfit.Fleetfit().V1alpha1().HPAIntents().Informer().GetIndexer()
	for _, err := range []error{intents.Add(in), ocm.Cluster().V1beta1().PlacementDecisions().Informer().GetIndexer().Add(decision)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &splitController{Controller: c, fleetfit: fleetfitClient, work: workClient,
		intents: intents, works: work.Work().V1().ManifestWorks().Informer().GetIndexer()}
}

// readyIntent makes in valid and scheduled with its placement, as the validation and
// placement controllers leave it.
func readyIntent(in *v1alpha1.HPAIntent) *v1alpha1.HPAIntent {
	in.UID, in.Generation, in.ResourceVersion = "uid-web", 1, "1"
	in.Finalizers = []string{Finalizer}
	in.Status.ScheduledPlacement = in.Spec.PlacementRef.Name
	meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: 1})
	return in
}

// TestSyncSplit runs the controller's sync over a split intent: a decided cluster without a
// share gets no ManifestWork and the status says it waits; once it has one it gets its
// ManifestWork, and a share that changes updates the other cluster's ManifestWork in place.
// status.clusters reports each cluster's replicas and, from the feedback, the ready ones.
func TestSyncSplit(t *testing.T) {
	in := readyIntent(splitIntent("Deployment", deployment("web", "")))
	in.Status.Split = splitStatus(10, "cluster1", 4)
	c := newSplitController(t, in, "cluster1", "cluster2")
	ctx := t.Context()
	intentNow := func() *v1alpha1.HPAIntent {
		got, err := c.fleetfit.FleetfitV1alpha1().HPAIntents("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	replicasOn := func(cluster string) (int64, *workv1.ManifestWork) {
		w, err := c.work.WorkV1().ManifestWorks(cluster).Get(ctx, WorkName(in), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ManifestWork on %s: %v", cluster, err)
		}
		return specFields(workObject(t, w, "Deployment", "web"), "replicas")["replicas"], w
	}
	ignoreTime := cmpopts.IgnoreFields(v1alpha1.ClusterDelivery{}, "LastTransitionTime")

	// cluster2 has no share yet: nothing is delivered there.
	if err := c.sync(ctx, "shop/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if n, _ := replicasOn("cluster1"); n != 4 {
		t.Errorf("cluster1's Deployment has %d replicas, want its share 4", n)
	}
	if _, err := c.work.WorkV1().ManifestWorks("cluster2").Get(ctx, WorkName(in), metav1.GetOptions{}); err == nil {
		t.Errorf("cluster2 got a ManifestWork without a share")
	}
	got := intentNow()
	want := []v1alpha1.ClusterDelivery{
		{ClusterName: "cluster1", ManifestWork: WorkName(in), State: v1alpha1.DeliveryPending, Message: "waiting for the work agent", Replicas: ptr.To[int32](4)},
		{ClusterName: "cluster2", ManifestWork: WorkName(in), State: v1alpha1.DeliveryPending, Message: "waiting for the cluster's share of the replicas"},
	}
	if diff := cmp.Diff(want, got.Status.Clusters, ignoreTime); diff != "" {
		t.Errorf("status.clusters (-want,+got):\n%s", diff)
	}

	// The shares change: cluster1's ManifestWork is updated, cluster2's created.
	_, work1 := replicasOn("cluster1")
	if err := c.works.Update(work1); err != nil {
		t.Fatal(err)
	}
	got.Status.Split = splitStatus(10, "cluster1", 3, "cluster2", 7)
	if err := c.intents.Update(got); err != nil {
		t.Fatal(err)
	}
	c.work.ClearActions()
	if err := c.sync(ctx, "shop/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	var verbs []string
	for _, a := range c.work.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			verbs = append(verbs, a.GetVerb()+" "+a.GetNamespace())
		}
	}
	if diff := cmp.Diff([]string{"update cluster1", "create cluster2"}, verbs); diff != "" {
		t.Errorf("writes of ManifestWorks (-want,+got):\n%s", diff)
	}
	n1, updated := replicasOn("cluster1")
	n2, _ := replicasOn("cluster2")
	if n1 != 3 || n2 != 7 || updated.UID != work1.UID {
		t.Errorf("replicas %d on cluster1 (UID %s, was %s) and %d on cluster2, want 3 on the same ManifestWork and 7", n1, updated.UID, work1.UID, n2)
	}

	// The work agents report the Deployments: the status has their ready replicas, and a
	// sync with nothing new writes nothing.
	report := func(w *workv1.ManifestWork, ready int64) {
		w = w.DeepCopy()
		w.Status.Conditions = available
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{integer("Replicas", ready), integer("ReadyReplicas", ready)}},
		}}
		if _, err := c.work.WorkV1().ManifestWorks(w.Namespace).UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.works.Update(w); err != nil {
			t.Fatal(err)
		}
	}
	_, w1 := replicasOn("cluster1")
	_, w2 := replicasOn("cluster2")
	report(w1, 3)
	report(w2, 5)
	if err := c.intents.Update(intentNow()); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "shop/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	got = intentNow()
	want = []v1alpha1.ClusterDelivery{
		{ClusterName: "cluster1", ManifestWork: WorkName(in), State: v1alpha1.DeliveryAvailable, Message: "Deployment web: 3/3 ready",
			Replicas: ptr.To[int32](3), ReadyReplicas: ptr.To[int32](3)},
		{ClusterName: "cluster2", ManifestWork: WorkName(in), State: v1alpha1.DeliveryAvailable, Message: "Deployment web: 5/5 ready",
			Replicas: ptr.To[int32](7), ReadyReplicas: ptr.To[int32](5)},
	}
	if diff := cmp.Diff(want, got.Status.Clusters, ignoreTime); diff != "" {
		t.Errorf("status.clusters (-want,+got):\n%s", diff)
	}
	if err := c.intents.Update(got); err != nil {
		t.Fatal(err)
	}
	c.work.ClearActions()
	c.fleetfit.ClearActions()
	if err := c.sync(ctx, "shop/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	for _, a := range append(c.work.Actions(), c.fleetfit.Actions()...) {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("a sync with nothing new wrote: %s %s %s", a.GetVerb(), a.GetResource().Resource, actionName(a))
		}
	}
}

func actionName(a clienttesting.Action) string {
	if n, ok := a.(interface{ GetName() string }); ok {
		return n.GetName()
	}
	return ""
}

// TestIntentHandlerSplit: a change of the shares requeues the intent; a status write that
// leaves them as they were does not.
func TestIntentHandlerSplit(t *testing.T) {
	in := readyIntent(splitIntent("Deployment", deployment("web", "")))
	in.Status.Split = splitStatus(10, "cluster1", 4)
	c := newSplitController(t, in)
	h := c.intentHandler()
	same := in.DeepCopy()
	same.Status.Clusters = []v1alpha1.ClusterDelivery{{ClusterName: "cluster1", State: v1alpha1.DeliveryPending}}
	h.OnUpdate(in, same)
	if n := c.queue.Len(); n != 0 {
		t.Errorf("a status write without new shares queued %d intents", n)
	}
	changed := same.DeepCopy()
	changed.Status.Split = splitStatus(10, "cluster1", 4, "cluster2", 6)
	h.OnUpdate(same, changed)
	if n := c.queue.Len(); n != 1 {
		t.Errorf("new shares queued %d intents, want 1", n)
	}
}
