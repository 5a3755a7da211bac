package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestDryRunCannotPlantCompiledIntents: an HPAIntent posted to the dry run with the UID and
// generation of a stored intent (of another namespace, here) must not change what the stored
// one compiles to.
func TestDryRunCannotPlantCompiledIntents(t *testing.T) {
	consumer := func(cpu string) *utiltesting.HPAIntentWrapper {
		return utiltesting.MakeHPAIntent("web", "team-a").Placement("p").Consumer(
			utiltesting.MakeConsumer("web").Target("Deployment", "web", "main").
				Requirement(utiltesting.MakeResource("cpu", "cpu").Requests(cpu).Obj()).Obj())
	}
	real := consumer("1").Obj()
	real.UID, real.Generation = types.UID("3f1c"), 4

	posted := consumer("64").Obj()
	posted.Namespace = "team-b"
	posted.UID, posted.Generation = real.UID, real.Generation
	p := utiltesting.MakePlacement("p", "team-b").Obj()
	p.APIVersion, p.Kind = "cluster.open-cluster-management.io/v1beta1", "Placement"
	p.UID = "7e2a"
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{p, posted}}
	body, err := yaml.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	gotP, gotIntents, err := decodeDryRun(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if gotP.UID != "" || len(gotIntents) != 1 || gotIntents[0].UID != "" || gotIntents[0].Generation != 0 {
		t.Fatalf("posted objects keep their identity: placement uid %q, intents %v", gotP.UID, gotIntents)
	}
	// Both go through the hub's cache of compiled intents, the posted one first.
	compiledIntents := cache.New()
	if _, err := compiledIntents.Intent(gotIntents[0]); err != nil {
		t.Fatal(err)
	}
	compiled, err := compiledIntents.Intent(real)
	if err != nil {
		t.Fatal(err)
	}
	if got := compiled.Consumers[0].Requests[corev1.ResourceCPU]; got.String() != "1" {
		t.Errorf("the stored intent compiles to cpu %s after a dry run posted 64 under its UID, want 1", got.String())
	}

	posted.Namespace = "team-c"
	list["items"] = []any{p, posted}
	body, _ = yaml.Marshal(list)
	_, _, err = decodeDryRun(strings.NewReader(string(body)))
	want := `HPAIntent web is in namespace "team-c": post intents in the Placement's namespace "team-b"`
	if err == nil || !cmp.Equal(err.Error(), want) {
		t.Errorf("decodeDryRun of an intent of another namespace = %v, want %q", err, want)
	}
}
