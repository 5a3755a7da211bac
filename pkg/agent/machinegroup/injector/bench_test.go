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

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// BenchmarkAdmitGuest measures the admission of one guest pod through the
// HTTP handler, from the AdmissionReview the API server sends to the JSON
// patch it gets back, with 50 machine types in the lister (two groups of 25,
// within the 32 types a group may have) and the guest asking for the last
// type of the second group.
func BenchmarkAdmitGuest(b *testing.B) {
	var groups []*v1alpha1.MachineGroup
	for g := range 2 {
		group := utiltesting.MakeMachineGroup(fmt.Sprintf("group-%d", g))
		for i := range 25 {
			group.MachineType(utiltesting.MakeGroupMachineType(fmt.Sprintf("type-%02d", i), fmt.Sprint(i+1), fmt.Sprintf("%dGi", 4*(i+1))).
				Available(4).GPU(v1alpha1.MachineGPU{Num: 1, Product: "NVIDIA-A100"}).Obj())
		}
		groups = append(groups, group.Obj())
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
