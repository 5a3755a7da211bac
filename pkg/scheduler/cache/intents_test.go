package cache_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// intentRequesting is an intent of one consumer requesting cpu.
func intentRequesting(cpu string, uid types.UID, generation int64) *fleetfitv1alpha1.HPAIntent {
	in := utiltesting.MakeHPAIntent("web", "team-a").Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("Deployment", "web", "main").
			Requirement(utiltesting.MakeResource("cpu", "cpu").Requests(cpu).Obj()).Obj()).Obj()
	in.UID, in.Generation = uid, generation
	return in
}

func cpuOf(t *testing.T, c *cache.Cache, in *fleetfitv1alpha1.HPAIntent) string {
	t.Helper()
	compiled, err := c.Intent(in)
	if err != nil {
		t.Fatal(err)
	}
	q := compiled.Consumers[0].Requests[corev1.ResourceCPU]
	return q.String()
}

func TestCompiledIntents(t *testing.T) {
	c := cache.New()
	stored := intentRequesting("1", "3f1c", 4)
	first, err := c.Intent(stored)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Intent(stored); again != first {
		t.Error("the same generation is compiled twice")
	}
	if snapped, _ := c.Snapshot().Intent(stored); snapped != first {
		t.Error("the snapshot hands out another compiled form than the cache")
	}

	// An object that is not stored (a dry run's) is compiled for its caller alone.
	posted := intentRequesting("64", "", 0)
	if got := cpuOf(t, c, posted); got != "64" {
		t.Errorf("posted intent compiles to cpu %s, want 64", got)
	}
	if got := cpuOf(t, c, stored); got != "1" {
		t.Errorf("stored intent compiles to cpu %s after a posted one, want 1", got)
	}

	// A new generation replaces the old one.
	next := intentRequesting("2", "3f1c", 5)
	if got := cpuOf(t, c, next); got != "2" {
		t.Errorf("generation 5 compiles to cpu %s, want 2", got)
	}
	if again, _ := c.Intent(next); again == first {
		t.Error("generation 5 reads generation 4's compiled form")
	}

	// A deleted intent is forgotten: the same UID and generation compile afresh.
	kept, _ := c.Intent(next)
	c.DeleteIntent(next)
	if again, _ := c.Intent(next); again == kept {
		t.Error("a deleted intent's compiled form is still handed out")
	}
}
