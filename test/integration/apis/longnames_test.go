package apis

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/controller/action"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestLongIntentNamesCanBeDelivered: every HPAIntent name the hub's API server
// admits, up to 253 characters in a namespace of 63, gets a ManifestWork the
// API server admits too, and the readers of ManifestWorks find exactly the
// intent's by its labels.
func TestLongIntentNamesCanBeDelivered(t *testing.T) {
	ctx := t.Context()
	// createNamespace adds "-" and five characters: a namespace of 63.
	ns := createNamespace(t, strings.Repeat("l", 57))
	if len(ns) != 63 {
		t.Fatalf("namespace %q has %d characters, want 63", ns, len(ns))
	}
	cluster := createNamespace(t, "cluster")
	intents := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(ns)
	works := workclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).WorkV1().ManifestWorks(cluster)

	// name is a DNS subdomain of n characters ending in last: segments of 60
	// letters joined by dots.
	name := func(n int, last string) string {
		var b strings.Builder
		for b.Len() < n-len(last) {
			if b.Len()%61 == 60 {
				b.WriteByte('.')
			} else {
				b.WriteByte('f')
			}
		}
		return b.String() + last
	}
	names := []string{
		name(63, "a"),  // its own label
		name(63, "b"),  // shares the first 62 characters
		name(64, "a"),  // a cut label
		name(189, "a"), // "<namespace>.<name>" is 253 characters
		name(190, "a"), // one more: a cut ManifestWork name
		name(253, "a"),
		name(253, "b"),
	}
	for _, n := range names {
		in := ut.FwallHPAIntent(ns).Obj()
		in.Name = n
		created, err := intents.Create(ctx, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating an HPAIntent named with %d characters: %v", len(n), err)
		}
		w := &workv1.ManifestWork{ObjectMeta: action.WorkMeta(created, cluster)}
		if _, err := works.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Errorf("the ManifestWork of an HPAIntent named with %d characters: %v", len(n), err)
		}
	}
	for _, n := range names {
		list, err := works.List(ctx, metav1.ListOptions{LabelSelector: action.WorkSelector(ns, n).String()})
		if err != nil {
			t.Fatalf("listing the ManifestWorks of the HPAIntent named with %d characters: %v", len(n), err)
		}
		var got []string
		for i := range list.Items {
			if wns, wname, ok := action.IntentOf(&list.Items[i]); ok && wns == ns {
				got = append(got, wname)
			}
		}
		if diff := cmp.Diff([]string{n}, got); diff != "" {
			t.Errorf("the ManifestWorks found for the HPAIntent named with %d characters (-want,+got):\n%s", len(n), diff)
		}
	}
}
