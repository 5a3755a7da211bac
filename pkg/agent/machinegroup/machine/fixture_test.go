package machine

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const (
	testGroup     = "general-machine"
	testNamespace = "reservations"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a controller whose caches are filled by hand, over fake
// clients that record its writes; its informers never start.
type fixture struct {
	c        *Controller
	kube     *k8sfake.Clientset
	fleetfit *fleetfitfake.Clientset
}

// newFixture puts objs into the caches, and all but pods into the fake
// clients too (the controller never writes pods).
func newFixture(t testing.TB, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{kube: k8sfake.NewClientset(), fleetfit: fleetfitfake.NewSimpleClientset()}
	f.c = New(f.kube, f.fleetfit, Options{Namespace: testNamespace, Clock: testingclock.NewFakePassiveClock(testNow)})
	// makePod's guests are in "guests", opted in to machine groups.
	f.cache(t, optedInNamespace("guests"))
	for _, o := range objs {
		f.add(t, o)
	}
	return f
}

func (f *fixture) add(t testing.TB, o runtime.Object) {
	t.Helper()
	var err error
	switch o := o.(type) {
	case *v1alpha1.MachineGroup, *v1alpha1.MachineNodePool:
		err = f.fleetfit.Tracker().Add(o)
	case *corev1.Pod:
	default:
		err = f.kube.Tracker().Add(o)
	}
	if err != nil {
		t.Fatal(err)
	}
	f.cache(t, o)
}

// cache puts o into its informer's cache.
func (f *fixture) cache(t testing.TB, o runtime.Object) {
	t.Helper()
	var err error
	switch o := o.(type) {
	case *v1alpha1.MachineGroup:
		err = f.c.groupIndexer.Update(o)
	case *v1alpha1.MachineNodePool:
		err = f.c.fleetfit.Fleetfit().V1alpha1().MachineNodePools().Informer().GetIndexer().Update(o)
	case *appsv1.StatefulSet:
		err = f.c.reserved.Apps().V1().StatefulSets().Informer().GetIndexer().Update(o)
	case *corev1.Service:
		err = f.c.reserved.Core().V1().Services().Informer().GetIndexer().Update(o)
	case *corev1.Pod:
		err = f.c.pods.Update(o)
	case *corev1.Node:
		err = f.c.nodesInf.Core().V1().Nodes().Informer().GetIndexer().Update(o)
	case *corev1.Namespace:
		err = f.c.optedIn.Update(o)
	default:
		t.Fatalf("no cache for %T", o)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// settle copies what the controller wrote into its caches and forgets the
// writes, as if the informers had caught up.
func (f *fixture) settle(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	groups, _ := f.fleetfit.FleetfitV1alpha1().MachineGroups().List(ctx, metav1.ListOptions{})
	for i := range groups.Items {
		f.cache(t, &groups.Items[i])
	}
	for _, g := range must(f.c.groups.List(labels.Everything())) {
		if _, err := f.fleetfit.FleetfitV1alpha1().MachineGroups().Get(ctx, g.Name, metav1.GetOptions{}); err != nil {
			_ = f.c.groupIndexer.Delete(g)
		}
	}
	sets, _ := f.kube.AppsV1().StatefulSets(testNamespace).List(ctx, metav1.ListOptions{})
	setIndexer := f.c.reserved.Apps().V1().StatefulSets().Informer().GetIndexer()
	for _, o := range setIndexer.List() {
		_ = setIndexer.Delete(o)
	}
	for i := range sets.Items {
		f.cache(t, &sets.Items[i])
	}
	services, _ := f.kube.CoreV1().Services(testNamespace).List(ctx, metav1.ListOptions{})
	svcIndexer := f.c.reserved.Core().V1().Services().Informer().GetIndexer()
	for _, o := range svcIndexer.List() {
		_ = svcIndexer.Delete(o)
	}
	for i := range services.Items {
		f.cache(t, &services.Items[i])
	}
	f.kube.ClearActions()
	f.fleetfit.ClearActions()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// writes are the fake clients' recorded writes, as "verb resource[/subresource] name".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range append(f.kube.Actions(), f.fleetfit.Actions()...) {
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		name := ""
		switch a := a.(type) {
		case clienttesting.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case clienttesting.UpdateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case clienttesting.DeleteAction:
			name = a.GetName()
		default:
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s", a.GetVerb(), res, name))
	}
	return out
}

// Builders.

func makeType(name, cpu, memory string, gpus int32, available int32) v1alpha1.MachineType {
	t := v1alpha1.MachineType{Name: name, Available: available,
		Spec: v1alpha1.MachineTypeSpec{CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory)}}
	if gpus > 0 {
		t.Spec.GPU = &v1alpha1.MachineGPU{Type: machinegroup.DefaultGPUType, Num: gpus}
	}
	return t
}

func makeGroup(machineTypes ...v1alpha1.MachineType) *v1alpha1.MachineGroup {
	w := utiltesting.MakeMachineGroup(testGroup).UID(types.UID("group-uid")).Generation(1).MachineType(machineTypes...)
	for _, t := range machineTypes {
		w.Node("node-"+t.Name, t.Name, v1alpha1.NodePoolModeReady, false)
	}
	return w.Obj()
}

func makePool(ready bool, message string) *v1alpha1.MachineNodePool {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	return utiltesting.MakeMachineNodePool(machinegroup.NodePoolName(testGroup), testGroup).
		Condition(machinegroup.ConditionReady, status, "Test", message).Obj()
}

func makeNode(name, cpu, memory, gpus string) *corev1.Node {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	if gpus != "" {
		alloc[machinegroup.DefaultGPUType] = resource.MustParse(gpus)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
}

// makePod is a guest or reservation pod of machineType in a state of Imperator's design:
// "running", "waiting" or "deleting".
func makePod(role, machineType, name, state string) *corev1.Pod {
	ns := "guests"
	if role == machinegroup.PodRoleReservation {
		ns = testNamespace
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
		machinegroup.LabelMachineGroup: testGroup, machinegroup.LabelMachineType: machineType, machinegroup.LabelPodRole: role,
	}}}
	switch state {
	case "running":
		p.Spec.NodeName, p.Status.Phase = "node-"+machineType, corev1.PodRunning
	case "waiting":
		p.Status.Phase = corev1.PodPending
	case "deleting":
		p.Spec.NodeName, p.Status.Phase = "node-"+machineType, corev1.PodRunning
		p.DeletionTimestamp = &metav1.Time{Time: testNow}
	}
	return p
}

// optedInNamespace is a namespace whose guests may take machines.
func optedInNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled,
	}}}
}

func resourceParse(s string) (resource.Quantity, error) { return resource.ParseQuantity(s) }

// update changes an object in its fake client and its cache.
func (f *fixture) update(t testing.TB, o runtime.Object) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch o := o.(type) {
	case *v1alpha1.MachineGroup:
		_, err = f.fleetfit.FleetfitV1alpha1().MachineGroups().Update(ctx, o, metav1.UpdateOptions{})
	case *appsv1.StatefulSet:
		_, err = f.kube.AppsV1().StatefulSets(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	default:
		t.Fatalf("no update for %T", o)
	}
	if err != nil {
		t.Fatal(err)
	}
	f.cache(t, o)
	f.kube.ClearActions()
	f.fleetfit.ClearActions()
}
