// Package demo checks that `make demo` brings up what the README promises.
package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/test/demo"
	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// syncBuffer lets the demo write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDemoFleet(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		err := demo.Run(ctx, demo.Options{Dir: dir, Spokes: 2}, &out, func(*framework.Fleet) {
			defer cancel()
			// Use the kubeconfig the demo wrote, as a user would.
			cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "hub.kubeconfig"))
			if err != nil {
				t.Errorf("loading the hub kubeconfig: %v", err)
				return
			}
			clusters, err := clusterclient.NewForConfigOrDie(cfg).ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
			if err != nil || len(clusters.Items) != 2 {
				t.Errorf("managed clusters on the hub: got %d (err %v), want 2", len(clusters.Items), err)
			}
			intent, err := fleetfitclient.NewForConfigOrDie(cfg).FleetfitV1alpha1().HPAIntents(demo.Namespace).Get(ctx, "fwall", metav1.GetOptions{})
			if err != nil {
				t.Errorf("getting the demo HPAIntent: %v", err)
			} else if len(intent.Spec.Consumers) != 2 {
				t.Errorf("demo HPAIntent has %d consumers, want 2", len(intent.Spec.Consumers))
			}
			for _, name := range []string{"cluster1", "cluster2"} {
				if _, err := os.Stat(filepath.Join(dir, name+".kubeconfig")); err != nil {
					t.Errorf("kubeconfig of %s: %v", name, err)
				}
			}
		})
		if err != nil {
			t.Errorf("demo.Run: %v", err)
		}
	}()
	<-checked
	for _, want := range []string{"CLUSTER", "hub.kubeconfig", "cluster2", "Placement by the intent's requirements: cluster1", "Press Ctrl-C"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
