package injector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/klog/v2"

	listers "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/mutation"
)

// Path is where the webhook serves pod admission.
const Path = "/mutate-v1-pod"

// maxRequestBytes bounds an AdmissionReview: a pod is at most etcd's 1.5 MiB,
// and a CREATE carries no old object.
const maxRequestBytes = 6 << 20

// Handler serves admission/v1 AdmissionReviews for Pod CREATE at Path.
type Handler struct {
	groups listers.MachineGroupLister
	logger klog.Logger
}

// NewHandler returns the admission handler that reads machine groups from
// groups.
func NewHandler(groups listers.MachineGroupLister, logger klog.Logger) *Handler {
	return &Handler{groups: groups, logger: logger}
}

// ServeHTTP answers one AdmissionReview. Whatever the body holds, it answers
// with an AdmissionReview: a request it cannot read is refused with a message
// saying why, and so is anything that would otherwise panic.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "the pod resource injector takes POSTed AdmissionReviews", http.StatusMethodNotAllowed)
		return
	}
	var uid types.UID
	resp := func() (resp *admissionv1.AdmissionResponse) {
		defer func() {
			if p := recover(); p != nil {
				h.logger.Error(fmt.Errorf("%v", p), "Admission panicked", "uid", uid)
				resp = refuse(http.StatusInternalServerError, fmt.Sprintf("the pod resource injector failed on this pod: %v", p))
			}
		}()
		req, err := decodeReview(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err != nil {
			return refuse(http.StatusBadRequest, err.Error())
		}
		uid = req.UID
		return h.Admit(req)
	}()
	resp.UID = uid
	out, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func decodeReview(body io.Reader) (*admissionv1.AdmissionRequest, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("reading the AdmissionReview: %w", err)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(raw, &review); err != nil {
		return nil, fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	if gv := admissionv1.SchemeGroupVersion.String(); review.APIVersion != gv || review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("expected an AdmissionReview of %s, got kind %q of %q", gv, review.Kind, review.APIVersion)
	}
	if review.Request == nil {
		return nil, errors.New("the AdmissionReview has no request")
	}
	return review.Request, nil
}

// Admit decides on one admission request. Pods that are not guests, and
// requests for anything but creating a pod, pass unchanged. A guest pod gets
// its machine type's resources, node affinity and tolerations as a JSON
// patch, none when it already has them all; a guest whose machine group,
// machine type or injecting container does not exist is refused with a
// message naming what does.
func (h *Handler) Admit(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return allow()
	}
	pod, err := decodePod(req.Object.Raw)
	if err != nil {
		return refuse(http.StatusBadRequest, err.Error())
	}
	podLabels, _, err := unstructured.NestedStringMap(pod.Object, "metadata", "labels")
	if err != nil {
		return refuse(http.StatusBadRequest, fmt.Sprintf("reading the pod's labels: %v", err))
	}
	if podLabels[machinegroup.LabelPodRole] != machinegroup.PodRoleGuest {
		return allow()
	}
	logger := h.logger.WithValues("pod", klog.KRef(req.Namespace, podName(req, pod)))
	patch, code, err := h.inject(pod, podLabels)
	if err != nil {
		logger.V(logs.Changes).Info("Refused guest pod", "reason", err.Error())
		return refuse(code, err.Error())
	}
	logger.V(logs.Debug).Info("Injected machine type", "group", podLabels[machinegroup.LabelMachineGroup],
		"machineType", podLabels[machinegroup.LabelMachineType], "patch", string(patch))
	return allowPatch(patch)
}

// inject returns the JSON patch that gives a guest pod its machine type, nil
// when it has it already, or why it cannot be admitted with the HTTP status
// code to report.
func (h *Handler) inject(pod *unstructured.Unstructured, podLabels map[string]string) ([]byte, int32, error) {
	m, code, err := h.mutationFor(pod, podLabels)
	if err != nil {
		return nil, code, err
	}
	mutated := pod.DeepCopy()
	if err := mutation.Mutate(mutated, m); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("injecting machine type %q of machine group %q: %s",
			podLabels[machinegroup.LabelMachineType], podLabels[machinegroup.LabelMachineGroup], withoutObjectName(err, pod))
	}
	patch, err := jsonPatch(pod.Object, mutated.Object)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	return patch, 0, nil
}

// mutationFor returns what a guest pod with these labels gets, or why it
// cannot be admitted with the HTTP status code to report.
func (h *Handler) mutationFor(pod *unstructured.Unstructured, podLabels map[string]string) (mutation.Mutation, int32, error) {
	var missing []string
	for _, key := range []string{machinegroup.LabelMachineGroup, machinegroup.LabelMachineType} {
		if podLabels[key] == "" {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return mutation.Mutation{}, http.StatusForbidden, fmt.Errorf("a guest pod (%s=%s) must name its machine group and machine type, but the label %s is missing",
			machinegroup.LabelPodRole, machinegroup.PodRoleGuest, strings.Join(missing, " and the label "))
	}
	groupName, typeName := podLabels[machinegroup.LabelMachineGroup], podLabels[machinegroup.LabelMachineType]
	group, err := h.groups.Get(groupName)
	if apierrors.IsNotFound(err) {
		return mutation.Mutation{}, http.StatusForbidden, h.unknownGroup(groupName)
	}
	if err != nil {
		return mutation.Mutation{}, http.StatusInternalServerError, fmt.Errorf("reading machine group %q: %w", groupName, err)
	}
	t, err := machinegroup.FindType(group, typeName)
	if err != nil {
		return mutation.Mutation{}, http.StatusForbidden, err
	}
	container := podLabels[machinegroup.LabelInjectingContainer]
	if container != "" {
		names, err := containerNames(pod)
		if err != nil {
			return mutation.Mutation{}, http.StatusBadRequest, err
		}
		if !slices.Contains(names, container) {
			return mutation.Mutation{}, http.StatusForbidden, fmt.Errorf("the label %s names the container %q, but the pod has no such container; its containers are %q",
				machinegroup.LabelInjectingContainer, container, names)
		}
	}
	amounts := machinegroup.Resources(t)
	return mutation.Mutation{
		Container:   container,
		Requests:    amounts,
		Limits:      amounts.DeepCopy(),
		Features:    machinegroup.NodeRequirements(group.Name, t),
		Tolerations: machinegroup.Tolerations(group.Name, t),
	}, 0, nil
}

// unknownGroup is the error for a guest of a group that does not exist,
// naming the groups that do.
func (h *Handler) unknownGroup(name string) error {
	groups, err := h.groups.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("machine group %q does not exist", name)
	}
	names := make([]string, 0, len(groups))
	for _, g := range groups {
		names = append(names, g.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("machine group %q does not exist; this cluster has no machine groups", name)
	}
	slices.Sort(names)
	return fmt.Errorf("machine group %q does not exist; the machine groups are %q", name, names)
}

// decodePod reads the pod of a request as unstructured, as pkg/mutation
// takes it, with JSON numbers as int64 where they are integers.
func decodePod(raw []byte) (*unstructured.Unstructured, error) {
	if len(raw) == 0 {
		return nil, errors.New("the request has no pod")
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decoding the pod: %w", err)
	}
	if obj == nil {
		return nil, errors.New("the request has no pod")
	}
	pod := &unstructured.Unstructured{Object: obj}
	// The API server sends the object with its kind; pkg/mutation finds the
	// pod spec by it.
	pod.SetKind("Pod")
	return pod, nil
}

// withoutObjectName is pkg/mutation's message without the kind and name it
// starts with: the pod is the one being created, and one created with
// generateName has no name yet.
func withoutObjectName(err error, pod *unstructured.Unstructured) string {
	msg := err.Error()
	prefix := pod.GetKind() + " " + pod.GetName()
	if rest, ok := strings.CutPrefix(msg, prefix+": "); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(msg, prefix+" "); ok {
		return "the pod " + rest
	}
	return msg
}

// containerNames are the names of a pod's containers, in order.
func containerNames(pod *unstructured.Unstructured) ([]string, error) {
	containers, _, err := unstructured.NestedSlice(pod.Object, "spec", "containers")
	if err != nil {
		return nil, fmt.Errorf("reading the pod's containers: %w", err)
	}
	names := make([]string, 0, len(containers))
	for _, c := range containers {
		m, _ := c.(map[string]any)
		name, _ := m["name"].(string)
		names = append(names, name)
	}
	return names, nil
}

// podName names a pod in logs; a pod created with generateName has no name
// yet.
func podName(req *admissionv1.AdmissionRequest, pod *unstructured.Unstructured) string {
	if req.Name != "" {
		return req.Name
	}
	if n := pod.GetName(); n != "" {
		return n
	}
	return pod.GetGenerateName()
}

func allow() *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func allowPatch(patch []byte) *admissionv1.AdmissionResponse {
	if patch == nil {
		return allow()
	}
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt}
}

func refuse(code int32, message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    code,
			Reason:  reasonFor(code),
			Message: message,
		},
	}
}

func reasonFor(code int32) metav1.StatusReason {
	switch code {
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	}
	return metav1.StatusReasonInternalError
}
