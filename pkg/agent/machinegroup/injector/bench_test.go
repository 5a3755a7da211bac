package injector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// BenchmarkAdmitGuest measures the admission of one guest pod through the
// HTTP handler, from the AdmissionReview the API server sends to the JSON
// patch it gets back, with 50 machine types in the lister (two groups of 25,
// within the 32 types a group may have) and the guest asking for the last
// type of the second group.
func BenchmarkAdmitGuest(b *testing.B) {
	var groups []*v1alpha1.MachineGroup
	for g := range 2 {
		group := &v1alpha1.MachineGroup{}
		group.Name = fmt.Sprintf("group-%d", g)
		for i := range 25 {
			group.Spec.MachineTypes = append(group.Spec.MachineTypes, v1alpha1.MachineType{
				Name: fmt.Sprintf("type-%02d", i), Available: 4,
				Spec: v1alpha1.MachineTypeSpec{
					CPU: *resource.NewQuantity(int64(i+1), resource.DecimalSI), Memory: resource.MustParse(fmt.Sprintf("%dGi", 4*(i+1))),
					GPU: &v1alpha1.MachineGPU{Num: 1, Product: "NVIDIA-A100"},
				},
			})
		}
		groups = append(groups, group)
	}
	h := NewHandler(injectorLister(b, groups...), logr.Discard())
	pod := makePod("guest", "train", "sidecar").Guest("group-1", "type-24", "train").
		Terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in("topology.kubernetes.io/zone", "a", "b")}}).Obj()
	raw, err := json.Marshal(pod)
	if err != nil {
		b.Fatal(err)
	}
	body := injectorReview(b, raw)
	if resp := post(b, h, body); !resp.Allowed || len(resp.Patch) == 0 {
		b.Fatalf("allowed %v, patch %s; want a patch", resp.Allowed, resp.Patch)
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			b.Fatalf("HTTP %d", rec.Code)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/admission")
}
