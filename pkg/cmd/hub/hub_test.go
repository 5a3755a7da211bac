package hub

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func TestRequireAPIsSaysWhatFailed(t *testing.T) {
	cases := map[string]struct {
		handler http.HandlerFunc
		closed  bool
		want    string
	}{
		"CRDs missing": {
			handler: func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) },
			want:    "does not serve fleetfit.io/v1alpha1: install the CRDs with `fleetfit install crds --side hub`",
		},
		"credentials refused": {
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
			},
			want: "does not accept the credentials of the kubeconfig",
		},
		"hub down": {
			handler: func(http.ResponseWriter, *http.Request) {},
			closed:  true,
			want:    "cannot read the APIs of the hub",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			if tc.closed {
				srv.Close()
			} else {
				defer srv.Close()
			}
			dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = RequireAPIs(srv.URL, dc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("RequireAPIs() = %v, want an error containing %q", err, tc.want)
			}
			if tc.want != "does not serve fleetfit.io/v1alpha1: install the CRDs with `fleetfit install crds --side hub`" && err != nil && strings.Contains(err.Error(), "install the CRDs") {
				t.Errorf("RequireAPIs() = %v: a hub that is not missing CRDs is told to install them", err)
			}
		})
	}
}
