package machine

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// BenchmarkReconcile measures one reconcile of a group with 50 machine types
// of 500 running guests and 100 reservations each (30,000 cached pods), in a
// steady state: the caches hold what the controller would write, so it writes
// nothing and the figure is the cost of reading the caches, building the
// desired objects and the status, and comparing them.
func BenchmarkReconcile(b *testing.B) {
	const (
		types        = 50
		guests       = 500
		reservations = 100
	)
	machineTypes := make([]v1alpha1.MachineType, 0, types)
	for i := range types {
		machineTypes = append(machineTypes, makeType(fmt.Sprintf("type-%02d", i), "8", "32Gi", 1, guests+reservations))
	}
	g := makeGroup(machineTypes...)
	objs := []runtime.Object{g, makePool(true, "")}
	for _, t := range machineTypes {
		objs = append(objs, makeNode("node-"+t.Name, "64", "256Gi", "8"))
		for j := range guests {
			objs = append(objs, makePod(machinegroup.PodRoleGuest, t.Name, fmt.Sprintf("guest-%s-%d", t.Name, j), "running"))
		}
		for j := range reservations {
			objs = append(objs, makePod(machinegroup.PodRoleReservation, t.Name, fmt.Sprintf("%s-%d", machinegroup.ReservationName(testGroup, t.Name), j), "running"))
		}
	}
	f := newFixture(b, objs...)
	ctx := context.Background()
	if err := f.c.sync(ctx, testGroup); err != nil {
		b.Fatal(err)
	}
	f.settle(b)
	st := must(f.c.groups.Get(testGroup)).Status.AvailableMachines
	if len(st) != types || st[0].Usage.Used != guests || st[0].Usage.Reserved != reservations {
		b.Fatalf("usage after the first sync: %+v", st[0])
	}

	b.ReportAllocs()
	for b.Loop() {
		if err := f.c.sync(ctx, testGroup); err != nil {
			b.Fatal(err)
		}
	}
	if w := f.writes(); len(w) != 0 {
		b.Fatalf("a steady-state reconcile wrote %v", w)
	}
	pods := types * (guests + reservations)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pods), "ns/pod")
	b.ReportMetric(float64(pods), "pods")
}
