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

func TestValidateRateLimits(t *testing.T) {
	for name, tc := range map[string]struct {
		qps, eventQPS     float32
		burst, eventBurst int
		want              string
	}{
		"default, no client-side limit": {qps: -1, burst: 100, eventQPS: 50, eventBurst: 100},
		"a rate":                        {qps: 50, burst: 100, eventQPS: 50, eventBurst: 100},
		"zero rate":                     {qps: 0, burst: 100, eventQPS: 50, eventBurst: 100, want: "--kube-api-qps must not be 0"},
		"a rate without burst":          {qps: 50, burst: 0, eventQPS: 50, eventBurst: 100, want: "--kube-api-burst must be at least 1"},
		"no event limit":                {qps: -1, burst: 100, eventQPS: 0, eventBurst: 0},
		"an event rate without burst":   {qps: -1, burst: 100, eventQPS: 5, eventBurst: 0, want: "--event-burst must be at least 1"},
	} {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			o.QPS, o.Burst, o.EventQPS, o.EventBurst = tc.qps, tc.burst, tc.eventQPS, tc.eventBurst
			err := o.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
