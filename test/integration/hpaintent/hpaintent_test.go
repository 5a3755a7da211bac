package hpaintent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterscheme "open-cluster-management.io/api/client/cluster/clientset/versioned/scheme"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	hpaintentctrl "github.com/fleetfit/fleetfit/pkg/controller/hpaintent"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitscheme "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/scheme"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// env is one test's namespace, clients and running controller.
type env struct {
	t        *testing.T
	ns       string
	kube     kubernetes.Interface
	clusters clusterclient.Interface
	fleetfit fleetfitclient.Interface
}

// newEnv creates a namespace and runs the controller until the test ends.
func newEnv(t *testing.T, name string) *env {
	t.Helper()
	ctx := t.Context()
	cfg := fleet.Hub.AdminConfig()
	e := &env{
		t: t, ns: name,
		kube:     fleet.Hub.AdminClient(),
		clusters: clusterclient.NewForConfigOrDie(cfg),
		fleetfit: fleetfitclient.NewForConfigOrDie(cfg),
	}
	// A generated name lets the test run again (-count) on the same hub.
	nsObj, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.ns = nsObj.Name
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clusterscheme.AddToScheme, fleetfitscheme.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	logger, _ := ktesting.NewTestContext(t)
	runCtx, cancel := context.WithCancel(context.Background())
	runCtx = klog.NewContext(runCtx, logger)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: e.kube.EventsV1()})
	broadcaster.StartRecordingToSink(runCtx.Done())
	recorder := broadcaster.NewRecorder(scheme, "fleetfit-hub")

	ocm := clusterinformers.NewSharedInformerFactoryWithOptions(e.clusters, 0, clusterinformers.WithNamespace(e.ns))
	ff := fleetfitinformers.NewSharedInformerFactoryWithOptions(e.fleetfit, 0, fleetfitinformers.WithNamespace(e.ns))
	ctrl, err := hpaintentctrl.New(e.fleetfit, recorder, ocm, ff, hpaintentctrl.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ocm.Start(runCtx.Done())
	ff.Start(runCtx.Done())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		ocm.Shutdown()
		ff.Shutdown()
		broadcaster.Shutdown()
	})
	return e
}

func (e *env) createIntent(in *v1alpha1.HPAIntent) *v1alpha1.HPAIntent {
	e.t.Helper()
	got, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Create(e.t.Context(), in, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// waitValid waits until the intent's Valid condition, for its current
// generation, has the status and reason, and returns it.
func (e *env) waitValid(name string, status metav1.ConditionStatus, reason string) metav1.Condition {
	e.t.Helper()
	var cond metav1.Condition
	framework.Eventually(e.t, func(ctx context.Context) error {
		in, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionValid)
		switch {
		case c == nil:
			return fmt.Errorf("no Valid condition yet")
		case c.ObservedGeneration != in.Generation:
			return fmt.Errorf("Valid condition is for generation %d, the intent is at %d", c.ObservedGeneration, in.Generation)
		case c.Status != status || c.Reason != reason:
			return fmt.Errorf("Valid is %s/%s (%s), want %s/%s", c.Status, c.Reason, c.Message, status, reason)
		}
		if valid, known := hpa.IsValid(in); !known || valid != (status == metav1.ConditionTrue) {
			return fmt.Errorf("IsValid = (%v, %v) disagrees with the condition", valid, known)
		}
		cond = *c
		return nil
	})
	return cond
}

// waitEvent waits for an events.k8s.io Event regarding the intent with the
// type and reason, and returns its note.
func (e *env) waitEvent(name, eventType, reason string) string {
	e.t.Helper()
	var note string
	framework.Eventually(e.t, func(ctx context.Context) error {
		list, err := e.kube.EventsV1().Events(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "HPAIntent" && ev.Regarding.Name == name && ev.Type == eventType && ev.Reason == reason {
				note = ev.Note
				return nil
			}
			seen = append(seen, ev.Type+"/"+ev.Reason+" "+ev.Regarding.Kind+"/"+ev.Regarding.Name)
		}
		return fmt.Errorf("no %s event %s for HPAIntent %s; events: %v", eventType, reason, name, seen)
	})
	return note
}

// TestPlacementCreatedLater: an intent whose Placement does not exist is
// invalid, with a Warning event; creating the Placement makes it valid.
func TestPlacementCreatedLater(t *testing.T) {
	e := newEnv(t, "placement-later")
	e.createIntent(utiltesting.FwallHPAIntent(e.ns).Obj())

	cond := e.waitValid(utiltesting.FwallName, metav1.ConditionFalse, hpa.ReasonPlacementNotFound)
	want := fmt.Sprintf(`Placement "fwall" not found in namespace %q: create it or fix spec.placementRef.name`, e.ns)
	if cond.Message != want {
		t.Errorf("message %q, want %q", cond.Message, want)
	}
	if note := e.waitEvent(utiltesting.FwallName, corev1.EventTypeWarning, hpa.ReasonPlacementNotFound); note != want {
		t.Errorf("event note %q, want %q", note, want)
	}

	if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(t.Context(),
		utiltesting.MakePlacement(utiltesting.FwallName, e.ns).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitValid(utiltesting.FwallName, metav1.ConditionTrue, hpaintentctrl.ReasonValid)
}

// TestWorkloadMissingContainer: an intent whose manifest lacks the target
// container is invalid and says which containers there are; fixing the
// target makes it valid.
func TestWorkloadMissingContainer(t *testing.T) {
	e := newEnv(t, "missing-container")
	if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(t.Context(),
		utiltesting.MakePlacement(utiltesting.FwallName, e.ns).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	container := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "registry.example/" + name, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}
	}
	in := e.createIntent(utiltesting.FwallHPAIntent(e.ns).
		Manifest(&appsv1.StatefulSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "core-fwall", Namespace: e.ns},
			Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{container("fw"), container("sidecar")},
			}}},
		}).
		Manifest(&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "api-server", Namespace: e.ns},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{container(utiltesting.FwallAPIContainer)},
			}}},
		}).Obj())

	cond := e.waitValid(in.Name, metav1.ConditionFalse, hpaintentctrl.ReasonInvalidWorkload)
	want := `consumer "core-fwall": target StatefulSet core-fwall has no container "palo-alto-e3000" (containers: fw, sidecar); set target.container to one of them`
	if cond.Message != want {
		t.Errorf("message %q, want %q", cond.Message, want)
	}
	if note := e.waitEvent(in.Name, corev1.EventTypeWarning, hpaintentctrl.ReasonInvalidWorkload); !strings.Contains(note, `has no container "palo-alto-e3000"`) {
		t.Errorf("event note %q does not name the missing container", note)
	}

	framework.Eventually(t, func(ctx context.Context) error {
		cur, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, in.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Consumers[0].Target.Container = "fw"
		_, err = e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	e.waitValid(in.Name, metav1.ConditionTrue, hpaintentctrl.ReasonValid)
	e.waitEvent(in.Name, corev1.EventTypeNormal, hpaintentctrl.ReasonValid)
}

// TestBuiltStepByStep: an intent is built as EMCO's API builds it — without consumers, then
// with a consumer without requirements, then complete. The API server accepts every step;
// the intent is Incomplete, naming what is missing, until the last one, then Valid.
func TestBuiltStepByStep(t *testing.T) {
	e := newEnv(t, "step-by-step")
	if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(t.Context(),
		utiltesting.MakePlacement("app", e.ns).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createIntent(utiltesting.MakeHPAIntent("app", e.ns).Placement("app").Obj())
	cond := e.waitValid("app", metav1.ConditionFalse, hpaintentctrl.ReasonIncomplete)
	if want := `the intent has no consumers yet: add at least one to spec.consumers; until then it changes nothing about the decisions of Placement "app"`; cond.Message != want {
		t.Errorf("message %q, want %q", cond.Message, want)
	}
	// A step of building an intent is no fault: the event says so without a warning.
	if note := e.waitEvent("app", corev1.EventTypeNormal, hpaintentctrl.ReasonIncomplete); note != cond.Message {
		t.Errorf("event note %q, want %q", note, cond.Message)
	}

	update := func(mutate func(*v1alpha1.HPAIntent)) {
		t.Helper()
		framework.Eventually(t, func(ctx context.Context) error {
			in, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(in)
			_, err = e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Update(ctx, in, metav1.UpdateOptions{})
			return err
		})
	}
	update(func(in *v1alpha1.HPAIntent) {
		in.Spec.Consumers = []v1alpha1.ResourceConsumer{utiltesting.MakeConsumer("web").Target("Deployment", "web", "nginx").Obj()}
	})
	cond = e.waitValid("app", metav1.ConditionFalse, hpaintentctrl.ReasonIncomplete)
	if !strings.Contains(cond.Message, `consumer "web" has no requirements yet`) {
		t.Errorf("message %q, want it to name consumer web", cond.Message)
	}

	update(func(in *v1alpha1.HPAIntent) {
		in.Spec.Consumers[0].Requirements = []v1alpha1.ResourceRequirement{utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()}
	})
	e.waitValid("app", metav1.ConditionTrue, hpaintentctrl.ReasonValid)
}
