package hubauth

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// failure is the Status of a refused request: its code, reason and message, and what it
// needed, when that is a resource.
func failure(code int32, reason metav1.StatusReason, message string, a Access) *metav1.Status {
	s := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: message,
	}
	if a.Resource != "" {
		s.Details = &metav1.StatusDetails{Group: a.Group, Kind: a.Resource, Name: a.Name}
	}
	return s
}

// writeStatus answers with s as JSON, as the Kubernetes API server writes its errors.
func writeStatus(w http.ResponseWriter, s *metav1.Status) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(s.Code))
	_ = json.NewEncoder(w).Encode(s)
}
