package apis

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
)

// TestClusterInventoryLabelKeys: spec.labelKeys admits sorted, distinct label keys, at most
// MaxLabelKeys of them, and the status subresource and the main resource each leave the
// other's part alone, so the agent and the hub never overwrite each other.
func TestClusterInventoryLabelKeys(t *testing.T) {
	ctx := t.Context()
	const ns = "labelkeys"
	if _, err := fleet.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	invs := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(ns)
	inv, err := invs.Create(ctx, &v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	many := make([]string, v1alpha1.MaxLabelKeys+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%04d"`, i)
	}
	tests := map[string]struct {
		patch   string
		wantErr string
	}{
		"sorted keys":          {patch: `{"spec":{"labelKeys":["example.com/accel","gpu"]}}`},
		"unsorted keys":        {patch: `{"spec":{"labelKeys":["gpu","example.com/accel"]}}`, wantErr: "labelKeys must be sorted"},
		"a key twice":          {patch: `{"spec":{"labelKeys":["gpu","gpu"]}}`, wantErr: "Duplicate value"},
		"not a label key":      {patch: `{"spec":{"labelKeys":["not a key"]}}`, wantErr: "spec.labelKeys[0]"},
		"a name part too long": {patch: `{"spec":{"labelKeys":["` + strings.Repeat("a", 64) + `"]}}`, wantErr: "spec.labelKeys[0]"},
		"the most keys":        {patch: `{"spec":{"labelKeys":[` + strings.Join(many[:v1alpha1.MaxLabelKeys], ",") + `]}}`},
		"too many keys":        {patch: `{"spec":{"labelKeys":[` + strings.Join(many, ",") + `]}}`, wantErr: "must have at most 128 items"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := invs.Patch(ctx, ns, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}

	// The hub's spec survives the agent's status write, and the other way round.
	inv.Spec.LabelKeys = []string{"gpu"}
	inv.Status.NodeCount = 2
	if inv, err = invs.UpdateStatus(ctx, inv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if inv.Spec.LabelKeys != nil || inv.Status.NodeCount != 2 {
		t.Errorf("a status write gave spec %v, nodeCount %d; want no spec, 2", inv.Spec.LabelKeys, inv.Status.NodeCount)
	}
	if inv, err = invs.Patch(ctx, ns, types.MergePatchType, []byte(`{"spec":{"labelKeys":["gpu"]},"status":{"nodeCount":7}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(inv.Spec.LabelKeys) != 1 || inv.Status.NodeCount != 2 {
		t.Errorf("a spec patch gave spec %v, nodeCount %d; want [gpu], 2", inv.Spec.LabelKeys, inv.Status.NodeCount)
	}
}
