package simulate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// podIntent is an intent whose consumers app and sidecar, 3 cpu each, are containers of the
// Job web, or of the Jobs web and api when apart.
func podIntent(name string, apart bool) string {
	other := "web"
	if apart {
		other = "api"
	}
	return `
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata: {name: ` + name + `, namespace: ml}
spec:
  placementRef: {name: ` + name + `}
  consumers:
  - name: app
    target: {apiVersion: batch/v1, kind: Job, name: web, container: app}
    replicas: 1
    requirements: [{name: cpu, resource: {name: cpu, requests: 3}}]
  - name: sidecar
    target: {apiVersion: batch/v1, kind: Job, name: ` + other + `, container: sidecar}
    replicas: 1
    requirements: [{name: cpu, resource: {name: cpu, requests: 3}}]`
}

// TestPodOnOneNode: simulate fits the containers of one pod on one node, as the hub does. c1
// has two nodes of 4 cpu, c2 one of 8: a pod of 6 cpu fits c2 only, two pods of 3 fit both.
func TestPodOnOneNode(t *testing.T) {
	docs := []string{setAndBinding, cluster("c1"), cluster("c2"),
		gpuNode("c1", "h0", "4", "0"), gpuNode("c1", "h1", "4", "0"), gpuNode("c2", "big", "8", "0")}
	tests := map[string]struct {
		apart bool
		want  map[string][]string
	}{
		"containers of one Job": {want: map[string][]string{"ml/p": {"c2"}}},
		"two Jobs":              {apart: true, want: map[string][]string{"ml/p": {"c1"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// numberOfClusters is 1: both clusters fit two Jobs, and the tie goes to c1.
			res := run(t, fleetOf(t, append(docs, placementDoc("p"), podIntent("p", tc.apart))...))
			if diff := cmp.Diff(tc.want, selected(res)); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s", diff)
			}
		})
	}
}
