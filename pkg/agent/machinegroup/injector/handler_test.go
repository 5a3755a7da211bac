package injector

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	listers "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const (
	groupName = "general-machine"
	xlarge    = "compute-xlarge"
	medium    = "compute-medium"
)

// injectorGroup is Imperator's example group, cut to two machine types.
func injectorGroup(name string) *v1alpha1.MachineGroup {
	return utiltesting.MakeMachineGroup(name).
		MachineType(
			utiltesting.MakeGroupMachineType(medium, "6000m", "48Gi").Available(4).
				GPU(v1alpha1.MachineGPU{Num: 1, Machine: "DGX-1"}).Obj(),
			utiltesting.MakeGroupMachineType(xlarge, "40000m", "128Gi").Available(1).
				GPU(v1alpha1.MachineGPU{Type: "nvidia.com/gpu", Num: 2, Product: "NVIDIA-GeForce-RTX-3090"}).Obj(),
		).
		Obj()
}

func injectorLister(t testing.TB, groups ...*v1alpha1.MachineGroup) listers.MachineGroupLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, g := range groups {
		if err := indexer.Add(g); err != nil {
			t.Fatal(err)
		}
	}
	return listers.NewMachineGroupLister(indexer)
}

// podWrapper builds pods for the tests.
type podWrapper struct{ corev1.Pod }

func makePod(name string, containers ...string) *podWrapper {
	w := &podWrapper{corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "guests"},
	}}
	for _, c := range containers {
		w.Spec.Containers = append(w.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	return w
}

func (w *podWrapper) Obj() *corev1.Pod { return w.DeepCopy() }

func (w *podWrapper) Clone() *podWrapper { return &podWrapper{*w.DeepCopy()} }

func (w *podWrapper) Guest(group, machineType, container string) *podWrapper {
	return w.Labels(machinegroup.GuestLabels(group, machineType, container))
}

func (w *podWrapper) Labels(l map[string]string) *podWrapper {
	if w.ObjectMeta.Labels == nil {
		w.ObjectMeta.Labels = map[string]string{}
	}
	for k, v := range l {
		w.ObjectMeta.Labels[k] = v
	}
	return w
}

func (w *podWrapper) Resources(container int, requests, limits corev1.ResourceList) *podWrapper {
	w.Spec.Containers[container].Resources = corev1.ResourceRequirements{Requests: requests, Limits: limits}
	return w
}

func (w *podWrapper) Terms(terms ...corev1.NodeSelectorTerm) *podWrapper {
	if w.Spec.Affinity == nil {
		w.Spec.Affinity = &corev1.Affinity{}
	}
	if w.Spec.Affinity.NodeAffinity == nil {
		w.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	w.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: terms}
	return w
}

func (w *podWrapper) Preferred(p ...corev1.PreferredSchedulingTerm) *podWrapper {
	if w.Spec.Affinity == nil {
		w.Spec.Affinity = &corev1.Affinity{}
	}
	if w.Spec.Affinity.NodeAffinity == nil {
		w.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	w.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = p
	return w
}

func (w *podWrapper) Tolerations(t ...corev1.Toleration) *podWrapper {
	w.Spec.Tolerations = append(w.Spec.Tolerations, t...)
	return w
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func equalTo(key, value string) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: corev1.TaintEffectNoSchedule}
}

func resources(cpu, memory string, gpus int64) corev1.ResourceList {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	if gpus > 0 {
		l["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return l
}

// What a guest of each type gets.
var (
	xlargeResources = resources("40", "128Gi", 2)
	xlargeReqs      = []corev1.NodeSelectorRequirement{
		in(machinegroup.Prefix+xlarge, groupName),
		in(machinegroup.LabelNodePool, machinegroup.NodePoolReady),
		in(machinegroup.GPUProductLabel, "NVIDIA-GeForce-RTX-3090"),
	}
	xlargeTolerations = []corev1.Toleration{
		equalTo(machinegroup.Prefix+xlarge, groupName),
		equalTo(machinegroup.LabelNodePool, machinegroup.NodePoolReady),
	}
	mediumResources = resources("6", "48Gi", 1)
	mediumReqs      = []corev1.NodeSelectorRequirement{
		in(machinegroup.Prefix+medium, groupName),
		in(machinegroup.LabelNodePool, machinegroup.NodePoolReady),
		in(machinegroup.GPUMachineLabel, "DGX-1"),
	}
	mediumTolerations = []corev1.Toleration{
		equalTo(machinegroup.Prefix+medium, groupName),
		equalTo(machinegroup.LabelNodePool, machinegroup.NodePoolReady),
	}
)

func runtimeRaw(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// injectorReview is the AdmissionReview the API server sends for creating
// the object raw.
func injectorReview(t testing.TB, raw []byte) []byte {
	t.Helper()
	b, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "uid-1",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: "guests",
			Operation: admissionv1.Create,
			Object:    runtimeRaw(raw),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body to h as the API server does and returns its response.
func post(t testing.TB, h http.Handler, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatalf("decoding the response %s: %v", rec.Body, err)
	}
	if review.Response == nil {
		t.Fatalf("no response in %s", rec.Body)
	}
	return review.Response
}

// admit runs pod through h and returns the pod as the API server would
// store it after the patch, and the response.
func admit(t testing.TB, h http.Handler, pod *corev1.Pod) (*corev1.Pod, *admissionv1.AdmissionResponse) {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	resp := post(t, h, injectorReview(t, raw))
	if resp.UID != "uid-1" {
		t.Errorf("response UID %q, want the request's uid-1", resp.UID)
	}
	if len(resp.Patch) > 0 {
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Errorf("patch type %v, want JSONPatch", resp.PatchType)
		}
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("decoding the patch %s: %v", resp.Patch, err)
		}
		if raw, err = p.Apply(raw); err != nil {
			t.Fatalf("applying the patch %s: %v", resp.Patch, err)
		}
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out, resp
}

func TestAdmitGuests(t *testing.T) {
	zoneA := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in("topology.kubernetes.io/zone", "a")}}
	zoneB := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in("topology.kubernetes.io/zone", "b")}}
	withReqs := func(term corev1.NodeSelectorTerm, reqs []corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		term = *term.DeepCopy()
		term.MatchExpressions = append(term.MatchExpressions, reqs...)
		return term
	}
	preferred := corev1.PreferredSchedulingTerm{Weight: 10, Preference: zoneA}
	userToleration := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want *corev1.Pod
	}{
		"the first container gets the machine type": {
			pod: makePod("p", "train", "sidecar").Guest(groupName, xlarge, "").Obj(),
			want: makePod("p", "train", "sidecar").Guest(groupName, xlarge, "").
				Resources(0, xlargeResources, xlargeResources).
				Terms(corev1.NodeSelectorTerm{MatchExpressions: xlargeReqs}).
				Tolerations(xlargeTolerations...).Obj(),
		},
		"the injecting container gets the machine type": {
			pod: makePod("p", "sidecar", "train").Guest(groupName, medium, "train").Obj(),
			want: makePod("p", "sidecar", "train").Guest(groupName, medium, "train").
				Resources(1, mediumResources, mediumResources).
				Terms(corev1.NodeSelectorTerm{MatchExpressions: mediumReqs}).
				Tolerations(mediumTolerations...).Obj(),
		},
		"every user term gets the requirements, preferred terms and tolerations stay": {
			pod: makePod("p", "train").Guest(groupName, xlarge, "").
				Terms(zoneA, zoneB).Preferred(preferred).Tolerations(userToleration).Obj(),
			want: makePod("p", "train").Guest(groupName, xlarge, "").
				Resources(0, xlargeResources, xlargeResources).
				Terms(withReqs(zoneA, xlargeReqs), withReqs(zoneB, xlargeReqs)).Preferred(preferred).
				Tolerations(userToleration).Tolerations(xlargeTolerations...).Obj(),
		},
		"the type's amounts replace the user's, other resources stay": {
			pod: makePod("p", "train").Guest(groupName, medium, "").
				Resources(0, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
					corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}).Obj(),
			want: makePod("p", "train").Guest(groupName, medium, "").
				Resources(0, corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("6"), corev1.ResourceMemory: resource.MustParse("48Gi"),
					"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
				}, mediumResources).
				Terms(corev1.NodeSelectorTerm{MatchExpressions: mediumReqs}).
				Tolerations(mediumTolerations...).Obj(),
		},
		"a pod that is no guest passes untouched": {
			pod:  makePod("p", "web").Obj(),
			want: makePod("p", "web").Obj(),
		},
		"a reservation pod passes untouched": {
			pod:  makePod("p", "pause").Labels(machinegroup.ReservationLabels(groupName, xlarge)).Obj(),
			want: makePod("p", "pause").Labels(machinegroup.ReservationLabels(groupName, xlarge)).Obj(),
		},
		"a pod with the group and type labels but no guest role passes untouched": {
			pod:  makePod("p", "web").Labels(map[string]string{machinegroup.LabelMachineGroup: "nope", machinegroup.LabelMachineType: "nope"}).Obj(),
			want: makePod("p", "web").Labels(map[string]string{machinegroup.LabelMachineGroup: "nope", machinegroup.LabelMachineType: "nope"}).Obj(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := NewHandler(injectorLister(t, injectorGroup(groupName)), ktesting.NewLogger(t, ktesting.NewConfig()))
			got, resp := admit(t, h, tc.pod)
			if !resp.Allowed {
				t.Fatalf("refused: %v", resp.Result)
			}
			if diff := cmp.Diff(tc.want, got, quantityEqual); diff != "" {
				t.Errorf("pod (-want,+got):\n%s", diff)
			}
			// The webhook may be reinvoked on its own result.
			again, resp := admit(t, h, got)
			if !resp.Allowed || len(resp.Patch) > 0 {
				t.Errorf("reinvoked on its result: allowed %v, patch %s; want allowed without a patch", resp.Allowed, resp.Patch)
			}
			if diff := cmp.Diff(got, again, quantityEqual); diff != "" {
				t.Errorf("reinvoked on its result (-first,+second):\n%s", diff)
			}
		})
	}
}

func TestAdmitRefusals(t *testing.T) {
	noGroupLabel := makePod("p", "train").Guest(groupName, xlarge, "").Obj()
	delete(noGroupLabel.Labels, machinegroup.LabelMachineGroup)
	noTypeLabel := makePod("p", "train").Guest(groupName, xlarge, "").Obj()
	delete(noTypeLabel.Labels, machinegroup.LabelMachineType)
	noLabels := makePod("p", "train").Labels(map[string]string{machinegroup.LabelPodRole: machinegroup.PodRoleGuest}).Obj()
	for name, tc := range map[string]struct {
		groups      []*v1alpha1.MachineGroup
		pod         *corev1.Pod
		wantCode    int32
		wantMessage string
	}{
		"unknown group": {
			groups:      []*v1alpha1.MachineGroup{injectorGroup(groupName), injectorGroup("b-machines")},
			pod:         makePod("p", "train").Guest("nope", xlarge, "").Obj(),
			wantCode:    http.StatusForbidden,
			wantMessage: `machine group "nope" does not exist; the machine groups are ["b-machines" "general-machine"]`,
		},
		"no groups at all": {
			pod:         makePod("p", "train").Guest(groupName, xlarge, "").Obj(),
			wantCode:    http.StatusForbidden,
			wantMessage: `machine group "general-machine" does not exist; this cluster has no machine groups`,
		},
		"unknown type": {
			groups:      []*v1alpha1.MachineGroup{injectorGroup(groupName)},
			pod:         makePod("p", "train").Guest(groupName, "compute-huge", "").Obj(),
			wantCode:    http.StatusForbidden,
			wantMessage: `machine group general-machine has no machine type "compute-huge"; its types are ["compute-medium" "compute-xlarge"]`,
		},
		"unknown injecting container": {
			groups:      []*v1alpha1.MachineGroup{injectorGroup(groupName)},
			pod:         makePod("p", "train", "sidecar").Guest(groupName, xlarge, "trainer").Obj(),
			wantCode:    http.StatusForbidden,
			wantMessage: `the label machines.fleetfit.io/injecting-container names the container "trainer", but the pod has no such container; its containers are ["train" "sidecar"]`,
		},
		"no group label": {
			groups:      []*v1alpha1.MachineGroup{injectorGroup(groupName)},
			pod:         noGroupLabel,
			wantCode:    http.StatusForbidden,
			wantMessage: `a guest pod (machines.fleetfit.io/pod-role=guest) must name its machine group and machine type, but the label machines.fleetfit.io/machine-group is missing`,
		},
		"no type label": {
			groups:      []*v1alpha1.MachineGroup{injectorGroup(groupName)},
			pod:         noTypeLabel,
			wantCode:    http.StatusForbidden,
			wantMessage: `a guest pod (machines.fleetfit.io/pod-role=guest) must name its machine group and machine type, but the label machines.fleetfit.io/machine-type is missing`,
		},
		"neither label": {
			groups:      []*v1alpha1.MachineGroup{injectorGroup(groupName)},
			pod:         noLabels,
			wantCode:    http.StatusForbidden,
			wantMessage: `a guest pod (machines.fleetfit.io/pod-role=guest) must name its machine group and machine type, but the label machines.fleetfit.io/machine-group and the label machines.fleetfit.io/machine-type is missing`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := NewHandler(injectorLister(t, tc.groups...), ktesting.NewLogger(t, ktesting.NewConfig()))
			_, resp := admit(t, h, tc.pod)
			if resp.Allowed {
				t.Fatalf("allowed, want refused with %q", tc.wantMessage)
			}
			if diff := cmp.Diff(tc.wantMessage, resp.Result.Message); diff != "" {
				t.Errorf("message (-want,+got):\n%s", diff)
			}
			if resp.Result.Code != tc.wantCode {
				t.Errorf("code %d, want %d", resp.Result.Code, tc.wantCode)
			}
		})
	}
}

// TestAdmitMalformed feeds the handler what no API server sends: each gets a
// refusal that says what is wrong, never a panic.
func TestAdmitMalformed(t *testing.T) {
	h := NewHandler(injectorLister(t, injectorGroup(groupName)), ktesting.NewLogger(t, ktesting.NewConfig()))
	guestLabels := `"labels":{"machines.fleetfit.io/pod-role":"guest","machines.fleetfit.io/machine-group":"general-machine","machines.fleetfit.io/machine-type":"compute-xlarge"}`
	for name, tc := range map[string]struct {
		body        []byte
		wantMessage string
	}{
		"not JSON":     {body: []byte("{"), wantMessage: "decoding the AdmissionReview"},
		"empty":        {body: nil, wantMessage: "decoding the AdmissionReview"},
		"wrong kind":   {body: []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}`), wantMessage: `expected an AdmissionReview of admission.k8s.io/v1, got kind "AdmissionReview" of "admission.k8s.io/v1beta1"`},
		"no request":   {body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), wantMessage: "the AdmissionReview has no request"},
		"no pod":       {body: injectorReview(t, []byte("null")), wantMessage: "the request has no pod"},
		"pod not JSON": {body: injectorReview(t, []byte(`"pod"`)), wantMessage: "decoding the pod"},
		"labels of the wrong type": {
			body:        injectorReview(t, []byte(`{"metadata":{"labels":{"machines.fleetfit.io/pod-role":1}}}`)),
			wantMessage: "reading the pod's labels",
		},
		"no spec": {
			body:        injectorReview(t, []byte(`{"metadata":{`+guestLabels+`}}`)),
			wantMessage: `injecting machine type "compute-xlarge" of machine group "general-machine": the pod has no pod spec at spec`,
		},
		"containers of the wrong type": {
			body:        injectorReview(t, []byte(`{"metadata":{`+guestLabels+`},"spec":{"containers":{"a":1}}}`)),
			wantMessage: "spec.containers is an object, not a list",
		},
		"a container of the wrong type": {
			body:        injectorReview(t, []byte(`{"metadata":{`+guestLabels+`},"spec":{"containers":[7]}}`)),
			wantMessage: "spec.containers[0] is the number 7, not an object",
		},
		"affinity of the wrong type": {
			body:        injectorReview(t, []byte(`{"metadata":{`+guestLabels+`},"spec":{"containers":[{"name":"a"}],"affinity":[]}}`)),
			wantMessage: "spec.affinity is a list, not an object",
		},
		"no containers": {
			body:        injectorReview(t, []byte(`{"metadata":{`+guestLabels+`},"spec":{}}`)),
			wantMessage: "the pod has no containers",
		},
	} {
		t.Run(name, func(t *testing.T) {
			resp := post(t, h, tc.body)
			if resp.Allowed {
				t.Fatalf("allowed, want refused with %q", tc.wantMessage)
			}
			if !strings.Contains(resp.Result.Message, tc.wantMessage) {
				t.Errorf("message %q, want one containing %q", resp.Result.Message, tc.wantMessage)
			}
		})
	}
}

func TestAdmitOtherRequests(t *testing.T) {
	h := NewHandler(injectorLister(t, injectorGroup(groupName)), ktesting.NewLogger(t, ktesting.NewConfig()))
	guest, err := json.Marshal(makePod("p", "train").Guest("nope", xlarge, "").Obj())
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*admissionv1.AdmissionRequest{
		"update":        {Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Update, Object: runtimeRaw(guest)},
		"another kind":  {Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Operation: admissionv1.Create, Object: runtimeRaw(guest)},
		"a subresource": {Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, SubResource: "binding", Operation: admissionv1.Create, Object: runtimeRaw(guest)},
	} {
		t.Run(name, func(t *testing.T) {
			if resp := h.Admit(req); !resp.Allowed || resp.Patch != nil {
				t.Errorf("got allowed %v, patch %s; want allowed unchanged", resp.Allowed, resp.Patch)
			}
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: HTTP %d, want %d", rec.Code, http.StatusMethodNotAllowed)
	}
}

// FuzzAdmit checks that no AdmissionReview makes the handler panic or answer
// with anything but an AdmissionReview.
func FuzzAdmit(f *testing.F) {
	pod, _ := json.Marshal(makePod("p", "train", "sidecar").Guest(groupName, xlarge, "sidecar").
		Terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in("a", "b")}}).
		Tolerations(equalTo("k", "v")).Obj())
	f.Add(injectorReview(f, pod))
	f.Add(injectorReview(f, []byte(`{"metadata":{"labels":{"machines.fleetfit.io/pod-role":"guest"}},"spec":{"containers":[null]}}`)))
	h := NewHandler(injectorLister(f, injectorGroup(groupName)), logr.Discard())
	f.Fuzz(func(t *testing.T, body []byte) {
		post(t, h, body)
	})
}
