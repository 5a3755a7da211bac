package apiserved

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestServed(t *testing.T) {
	served := []*metav1.APIResourceList{{
		GroupVersion: "fleetfit.io/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "machinegroups"}, {Name: "machinegroups/status"}},
	}}
	cases := map[string]struct {
		groupVersion, resource string
		fail                   bool
		want                   bool
		wantErr                bool
	}{
		"served":                     {groupVersion: "fleetfit.io/v1alpha1", resource: "machinegroups", want: true},
		"another resource":           {groupVersion: "fleetfit.io/v1alpha1", resource: "clusterclaims"},
		"a group version not served": {groupVersion: "cluster.open-cluster-management.io/v1alpha1", resource: "clusterclaims"},
		"a failed look-up":           {groupVersion: "fleetfit.io/v1alpha1", resource: "machinegroups", fail: true, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: served}}
			if tc.fail {
				d.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("connection refused")
				})
			}
			got, err := Served(d, tc.groupVersion, tc.resource)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Served(%s, %s) = %v, %v; want %v, error %v", tc.groupVersion, tc.resource, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
