package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/typed/fleetfit/v1alpha1"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// The DRA test has two managed clusters of its own, in a cluster set of its own, and plays
// their DRA driver: it publishes the GPUs of each kwok node as a ResourceSlice, and a
// DeviceClass that selects them.
const (
	draNS     = "dra-e2e"
	draSet    = "dra-e2e"
	draDriver = "gpu.example.com"
	draClass  = "gpu.example.com"
	// draPair asks for 2 A100s, which only cluster-dra1's node-a has; draEight for 8, which
	// no node has. Each intent has a Placement and a Deployment of its name.
	draPair  = "a100-pair"
	draEight = "a100-eight"
	// draA100 is the selector of the A100s, as a ResourceClaim writes it.
	draA100 = `device.attributes["gpu.example.com"].model == "A100"`
	// draLogLines is how much of each process's log a failure shows.
	draLogLines = 40
)

// draGPUs are alike GPUs of one node.
type draGPUs struct {
	model  string
	memory string
	count  int
}

// draNode is a kwok node and the GPUs its ResourceSlice publishes.
type draNode struct {
	name string
	gpus []draGPUs
}

type draCluster struct {
	name  string
	nodes []draNode
}

// draClusters: cluster-dra1 has 4 A100s on node-a and 2 L4s on node-b; cluster-dra2 has 1
// A100 and 4 L4s on its one node, 5 GPUs, but never 2 A100s on a node.
var draClusters = []draCluster{
	{name: "cluster-dra1", nodes: []draNode{
		{name: "node-a", gpus: []draGPUs{{model: "A100", memory: "80Gi", count: 4}}},
		{name: "node-b", gpus: []draGPUs{{model: "L4", memory: "24Gi", count: 2}}},
	}},
	{name: "cluster-dra2", nodes: []draNode{
		{name: "node-0", gpus: []draGPUs{{model: "A100", memory: "80Gi", count: 1}, {model: "L4", memory: "24Gi", count: 4}}},
	}},
}

func (c draCluster) kwokNodes() []*corev1.Node {
	var out []*corev1.Node
	for _, n := range c.nodes {
		out = append(out, cpuNode(n.name))
	}
	return out
}

// draDeviceClass selects every device of the driver.
func draDeviceClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: draClass},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draDriver)},
		}}},
	}
}

// resourceSlice is the node's one ResourceSlice, a complete pool named after the node: GPUs
// gpu-0, gpu-1... with a model, an index (which tells them apart, and which kinds leave out)
// and their memory.
func (n draNode) resourceSlice() *resourcev1.ResourceSlice {
	var devices []resourcev1.Device
	for _, g := range n.gpus {
		for range g.count {
			i := int64(len(devices))
			devices = append(devices, resourcev1.Device{
				Name: fmt.Sprintf("gpu-%d", i),
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
					"model": {StringValue: ptr.To(g.model)},
					"index": {IntValue: ptr.To(i)},
				},
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
					"memory": {Value: resource.MustParse(g.memory)},
				},
			})
		}
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: n.name + "-" + draDriver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   draDriver,
			Pool:     resourcev1.ResourcePool{Name: n.name, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(n.name),
			Devices:  devices,
		},
	}
}

// devicesOf returns the names of the node's devices of a model.
func (n draNode) devicesOf(model string) []string {
	var out []string
	for _, d := range n.resourceSlice().Spec.Devices {
		if *d.Attributes["model"].StringValue == model {
			out = append(out, d.Name)
		}
	}
	return out
}

// draDeployment is a workload of one replica that does nothing; the intent adds its devices.
func draDeployment(name string) *appsv1.Deployment {
	l := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// draIntent asks for count A100s beside a little cpu, on its Placement of one cluster of
// the test's set, ranked by Steady and HardwareFit.
func draIntent(name string, count int32) (*clusterv1beta1.Placement, *v1alpha1.HPAIntent) {
	placement := ut.MakePlacement(name, draNS).NumberOfClusters(1).ClusterSets(draSet).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("Steady", 1).BuiltIn("HardwareFit", 1).Obj()
	gpus := v1alpha1.ResourceRequirement{Name: "gpus", Devices: &v1alpha1.DeviceRequirement{
		DeviceClassName: draClass,
		Count:           ptr.To(count),
		Selectors:       []v1alpha1.DeviceSelector{{CEL: &v1alpha1.CELDeviceSelector{Expression: draA100}}},
	}}
	intent := ut.MakeHPAIntent(name, draNS).Placement(name).Consumer(
		ut.MakeConsumer(name).Target("Deployment", name, name).Requirement(
			ut.MakeResource("cpu", "cpu").Requests("100m").Obj(),
			gpus,
		).Obj(),
	).Manifest(draDeployment(name)).Obj()
	return placement, intent
}

// TestDRADevices follows devices of Dynamic Resource Allocation from the ResourceSlices of
// two managed clusters of the test's own to a running pod, on real processes (kube-apiserver,
// kube-controller-manager with the resource claim controller, kube-scheduler, kwok, OCM's work
// agent and fleetfit-agent on each cluster, fleetfit-hub), the test playing the DRA driver.
//
// The hub's inventories show the clusters' GPUs as kinds (A100 and L4), counted per node
// shape. An intent that needs 2 A100s on one node goes to cluster-dra1, whose node-a has 4,
// not to cluster-dra2, which has 5 GPUs but 1 A100; its ManifestWork applies a
// ResourceClaimTemplate there, the pod's ResourceClaim is allocated 2 of node-a's A100s by
// kube-scheduler, the pod runs on node-a, and the hub's inventory then shows 2 of node-a's
// A100s free. An intent that needs 8 A100s is not scheduled, and its Scheduled condition
// says, for each cluster, how many A100s its best node has free.
func TestDRADevices(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	fleetfit := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1()
	intents := fleetfit.HPAIntents(draNS)
	works := workclient.NewForConfigOrDie(hub.AdminConfig()).WorkV1()
	var logs []*framework.Component
	spokes := map[string]*framework.ControlPlane{}

	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: draNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet(draSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(draNS).Create(ctx, ut.MakeClusterSetBinding(draNS, draSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, c := range draClusters {
		spoke, l := draStartSpoke(t, c)
		spokes[c.name] = spoke
		logs = append(logs, l...)
	}
	hubProcess, err := framework.StartHubProcess(ctx, hub, "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hubProcess.Stop)
	logs = append(logs, hubProcess)
	// Cleanups run last first: the dump while everything runs, then the intents' deletion
	// while the work agents can still remove what they applied, then the processes stop.
	t.Cleanup(func() { draDelete(t, intents, clusters) })
	t.Cleanup(func() { draDump(t, intents, clusters, works, spokes, logs) })

	// 1. The inventories show each node's GPUs by kind, all free; alike GPUs are of one kind
	// on every cluster.
	kinds := map[string]map[string]string{} // cluster → model → kind
	for _, c := range draClusters {
		framework.Eventually(t, func(ctx context.Context) error {
			inv, err := fleetfit.ClusterInventories(c.name).Get(ctx, c.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := draCheckInventory(inv, c, nil); err != nil {
				return err
			}
			kinds[c.name] = map[string]string{}
			for i := range inv.Status.Devices.Kinds {
				k := &inv.Status.Devices.Kinds[i]
				kinds[c.name][draModel(k)] = k.Name
			}
			return nil
		})
	}
	if a, b := kinds[draClusters[0].name], kinds[draClusters[1].name]; !maps.Equal(a, b) {
		t.Errorf("the kinds by model are %v on %s and %v on %s, want the same names", a, draClusters[0].name, b, draClusters[1].name)
	}

	// 2. Two A100s on one node: only cluster-dra1 has them.
	dra1, dra2 := draClusters[0], draClusters[1]
	nodeA := dra1.nodes[0]
	placement, intent := draIntent(draPair, 2)
	if _, err := clusters.ClusterV1beta1().Placements(draNS).Create(ctx, placement, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := intents.Create(ctx, intent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		decided, err := draDecided(ctx, clusters, draPair)
		if err != nil {
			return err
		}
		if !slices.Equal(decided, []string{dra1.name}) {
			return fmt.Errorf("placement %s decides %v, want [%s]", draPair, decided, dra1.name)
		}
		in, err := intents.Get(ctx, draPair, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionScheduled); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("intent %s is not Scheduled: %+v", draPair, c)
		}
		return nil
	})
	// The ManifestWork applied the intent's ResourceClaimTemplate on cluster-dra1, with the
	// request as the intent asks it.
	var template string
	framework.Eventually(t, func(ctx context.Context) error {
		template, err = draCheckTemplate(ctx, works, spokes[dra1.name], dra1.name, draPair, 2)
		return err
	})
	// The pod's ResourceClaim, made by the resource claim controller from the template, has 2
	// of node-a's A100s, and the pod runs on node-a.
	var allocated []string
	framework.Eventually(t, func(ctx context.Context) error {
		allocated, err = draCheckPod(ctx, spokes[dra1.name], draPair, template, nodeA, 2)
		return err
	})
	t.Logf("%s runs on %s/%s with the A100s %v", draPair, dra1.name, nodeA.name, allocated)
	// cluster-dra2 got nothing.
	if err := draNothingOn(ctx, works, spokes[dra2.name], dra2.name, draPair); err != nil {
		t.Error(err)
	}
	// The agent reports the 2 A100s the claim took: 2 of node-a's 4 are free.
	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := fleetfit.ClusterInventories(dra1.name).Get(ctx, dra1.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return draCheckInventory(inv, dra1, map[string]map[string]int{nodeA.name: {"A100": 2}})
	})

	// 3. Eight A100s on one node: no cluster has them, and the intent says so.
	placement, intent = draIntent(draEight, 8)
	if _, err := clusters.ClusterV1beta1().Placements(draNS).Create(ctx, placement, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := intents.Create(ctx, intent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := func(cluster string, best int) string {
		return fmt.Sprintf("%s: consumer %s/%s: no schedulable node has 8 devices of class %s with %s free; the best has %d", cluster, draEight, draEight, draClass, draA100, best)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, draEight, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionScheduled)
		if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != in.Generation {
			return fmt.Errorf("intent %s has the Scheduled condition %+v, want False", draEight, c)
		}
		// node-a has 2 A100s free beside the first intent's pod, node-0 has 1.
		for _, w := range []string{"devices of class " + draClass, "the best has", want(dra1.name, 2), want(dra2.name, 1)} {
			if !strings.Contains(c.Message, w) {
				return fmt.Errorf("intent %s's Scheduled condition says %q, want it to say %q", draEight, c.Message, w)
			}
		}
		return nil
	})
	if decided, err := draDecided(ctx, clusters, draEight); err != nil || len(decided) > 0 {
		t.Errorf("placement %s decides %v (%v), want no cluster", draEight, decided, err)
	}
	for _, c := range draClusters {
		if err := draNothingOn(ctx, works, spokes[c.name], c.name, draEight); err != nil {
			t.Error(err)
		}
	}
	// The first intent's pod still runs on its devices.
	if _, err := draCheckPod(ctx, spokes[dra1.name], draPair, template, nodeA, 2); err != nil {
		t.Error(err)
	}
}

// draStartSpoke starts one of the test's managed clusters (see startExtraSpoke) with its
// kwok nodes (its kube-controller-manager runs the resource claim controller, which makes the
// ResourceClaims of pods from their templates), the DeviceClass and a ResourceSlice per node, registered on the hub
// in draSet (the hub forgets it when the test ends), with delivery into draNS granted,
// fleetfit-agent and OCM's work agent running, and waits until its agent reports every node
// Ready.
func draStartSpoke(t *testing.T, c draCluster) (*framework.ControlPlane, []*framework.Component) {
	t.Helper()
	ctx := t.Context()
	hub := fleet.Hub
	managed := clusterclient.NewForConfigOrDie(hub.AdminConfig()).ClusterV1().ManagedClusters()
	if _, err := managed.Create(ctx, ut.MakeCluster(c.name).Label("name", c.name).ClusterSet(draSet).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := managed.Delete(context.Background(), c.name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ManagedCluster %s: %v", c.name, err)
		}
	})
	spoke, logs := startExtraSpoke(t, c.name, c.kwokNodes())
	resources := spoke.AdminClient().ResourceV1()
	if _, err := resources.DeviceClasses().Create(ctx, draDeviceClass(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		if _, err := resources.ResourceSlices().Create(ctx, n.resourceSlice(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.GrantDelivery(ctx, spoke, draNS); err != nil {
		t.Fatal(err)
	}
	agent, err := framework.StartAgentProcess(ctx, hub, spoke, c.name, agentMinInterval)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Stop)
	work, err := framework.StartOCMWorkAgent(ctx, hub, spoke, c.name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(work.Stop)
	logs = append(logs, agent, work)
	waitSchedulable(t, spoke, c.kwokNodes())
	inventories := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(c.name)
	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := inventories.Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got, want := inv.Status.ReadyNodeCount, int32(len(c.nodes)); got != want {
			return fmt.Errorf("inventory of %s shows %d ready nodes, want %d", c.name, got, want)
		}
		return nil
	})
	return spoke, logs
}

// draKindName is the name of a kind of the driver: the prefix, the driver's first DNS label
// and a hash of what the kind's devices share.
var draKindName = regexp.MustCompile(`^` + regexp.QuoteMeta(v1alpha1.DeviceResourcePrefix) + `gpu-[0-9a-f]{12}$`)

// draModel returns the model of a reported kind, "" when it has none.
func draModel(k *v1alpha1.DeviceKind) string {
	for _, name := range []resourcev1.QualifiedName{"model", draDriver + "/model"} {
		if a, ok := k.Attributes[name]; ok && a.StringValue != nil {
			return *a.StringValue
		}
	}
	return ""
}

// draCheckInventory checks the devices of c in its inventory: one kind per model, of the
// driver, in the class, with the model and memory of its GPUs and without their index; and a
// node shape per node whose allocatable counts each of its models, with those devices free
// but the ones used gives (node → model → count).
func draCheckInventory(inv *v1alpha1.ClusterInventory, c draCluster, used map[string]map[string]int) error {
	d := inv.Status.Devices
	if d == nil || !d.Served {
		return fmt.Errorf("inventory of %s reports devices %+v, want those of a cluster that serves DRA", c.name, d)
	}
	if d.OmittedDevices != 0 {
		return fmt.Errorf("inventory of %s omits %d devices: %s", c.name, d.OmittedDevices, d.Message)
	}
	memory := map[string]string{}
	for _, n := range c.nodes {
		for _, g := range n.gpus {
			memory[g.model] = g.memory
		}
	}
	models := map[corev1.ResourceName]string{}
	var errs []error
	for i := range d.Kinds {
		k := &d.Kinds[i]
		model := draModel(k)
		models[corev1.ResourceName(k.Name)] = model
		if !draKindName.MatchString(k.Name) {
			errs = append(errs, fmt.Errorf("kind %s of %s is not named %s", k.Name, c.name, draKindName))
		}
		if k.Driver != draDriver || !slices.Equal(k.Classes, []string{draClass}) {
			errs = append(errs, fmt.Errorf("kind %s of %s has the driver %q and the classes %v, want %q and [%s]", k.Name, c.name, k.Driver, k.Classes, draDriver, draClass))
		}
		if len(k.Attributes) != 1 {
			errs = append(errs, fmt.Errorf("kind %s of %s has the attributes %v, want the model only (index tells devices apart)", k.Name, c.name, slices.Sorted(maps.Keys(k.Attributes))))
		}
		if m, ok := k.Capacity["memory"]; !ok || m.Value.Cmp(resource.MustParse(memory[model])) != 0 {
			errs = append(errs, fmt.Errorf("kind %s (%q) of %s has the capacity %v, want memory %s", k.Name, model, c.name, k.Capacity, memory[model]))
		}
	}
	if got, want := slices.Sorted(maps.Values(models)), slices.Sorted(maps.Keys(memory)); !slices.Equal(got, want) {
		errs = append(errs, fmt.Errorf("inventory of %s reports kinds of the models %q, want one kind per model %q", c.name, got, want))
	}
	// One line per node: its GPUs by model, allocatable and free.
	var got, want []string
	for _, s := range inv.Status.NodeShapes {
		alloc, free := map[string]int64{}, map[string]int64{}
		for name, q := range s.Allocatable {
			if m, ok := models[name]; ok {
				alloc[m] += q.Value()
			}
		}
		if len(alloc) == 0 {
			continue
		}
		if len(s.Free) != 1 || s.Free[0].Count != s.NodeCount {
			errs = append(errs, fmt.Errorf("node shape %s of %s has %d nodes and the free vectors %+v, want one for all its nodes", s.Name, c.name, s.NodeCount, s.Free))
			continue
		}
		for name, q := range s.Free[0].Resources {
			if m, ok := models[name]; ok {
				free[m] += q.Value()
			}
		}
		for range s.NodeCount {
			got = append(got, draCounts(alloc, free))
		}
	}
	for _, n := range c.nodes {
		alloc, free := map[string]int64{}, map[string]int64{}
		for _, g := range n.gpus {
			alloc[g.model] += int64(g.count)
			free[g.model] += int64(g.count - used[n.name][g.model])
		}
		want = append(want, draCounts(alloc, free))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		errs = append(errs, fmt.Errorf("node shapes of %s count the GPUs %q, want %q", c.name, got, want))
	}
	return errors.Join(errs...)
}

// draCounts writes a node's GPUs by model: "allocatable A100=4 L4=0, free A100=2 L4=0".
func draCounts(alloc, free map[string]int64) string {
	var a, f []string
	for _, m := range slices.Sorted(maps.Keys(alloc)) {
		a = append(a, fmt.Sprintf("%s=%d", m, alloc[m]))
		f = append(f, fmt.Sprintf("%s=%d", m, free[m]))
	}
	return "allocatable " + strings.Join(a, " ") + ", free " + strings.Join(f, " ")
}

// draIntentLabels selects what the hub labels as the intent's: its ManifestWorks, and the
// objects they deliver.
func draIntentLabels(intent string) string {
	return labels.SelectorFromSet(labels.Set{
		v1alpha1.LabelIntentNamespace: draNS, v1alpha1.LabelIntentName: v1alpha1.IntentLabelValue(intent),
	}).String()
}

// draCheckTemplate checks that the intent's ManifestWork on cluster applied a
// ResourceClaimTemplate, and that the spoke has it with one request of count A100s of the
// class; it returns the template's name.
func draCheckTemplate(ctx context.Context, works workv1client.WorkV1Interface, spoke *framework.ControlPlane, cluster, intent string, count int64) (string, error) {
	list, err := works.ManifestWorks(cluster).List(ctx, metav1.ListOptions{LabelSelector: draIntentLabels(intent)})
	if err != nil {
		return "", err
	}
	if len(list.Items) != 1 {
		return "", fmt.Errorf("%s has %d ManifestWorks of %s, want one", cluster, len(list.Items), intent)
	}
	name := ""
	var seen []string
	for _, m := range list.Items[0].Status.ResourceStatus.Manifests {
		r := m.ResourceMeta
		seen = append(seen, fmt.Sprintf("%s %s/%s applied=%v", r.Kind, r.Namespace, r.Name, meta.IsStatusConditionTrue(m.Conditions, workv1.WorkApplied)))
		if r.Group == resourcev1.GroupName && r.Kind == "ResourceClaimTemplate" && r.Namespace == draNS && meta.IsStatusConditionTrue(m.Conditions, workv1.WorkApplied) {
			name = r.Name
		}
	}
	if name == "" {
		return "", fmt.Errorf("ManifestWork %s/%s has applied %v, want a ResourceClaimTemplate in %s", cluster, list.Items[0].Name, seen, draNS)
	}
	tmpl, err := spoke.AdminClient().ResourceV1().ResourceClaimTemplates(draNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	reqs := tmpl.Spec.Spec.Devices.Requests
	if len(reqs) != 1 || reqs[0].Exactly == nil {
		return "", fmt.Errorf("ResourceClaimTemplate %s on %s has the requests %+v, want one", name, cluster, reqs)
	}
	e := reqs[0].Exactly
	if e.DeviceClassName != draClass || e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != count ||
		len(e.Selectors) != 1 || e.Selectors[0].CEL == nil || e.Selectors[0].CEL.Expression != draA100 {
		return "", fmt.Errorf("ResourceClaimTemplate %s on %s requests %+v, want exactly %d of class %s with %s", name, cluster, e, count, draClass, draA100)
	}
	return name, nil
}

// draCheckPod checks the intent's one pod on spoke: it claims a ResourceClaim from template
// for its container, which kube-scheduler allocated count of node's A100s, and it is bound
// to node and Running. It returns the devices allocated.
func draCheckPod(ctx context.Context, spoke *framework.ControlPlane, intent, template string, node draNode, count int) ([]string, error) {
	pods, err := spoke.AdminClient().CoreV1().Pods(draNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + intent})
	if err != nil {
		return nil, err
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		return nil, fmt.Errorf("%d pods of %s, want one", len(live), intent)
	}
	p := live[0]
	if len(p.Spec.ResourceClaims) != 1 || ptr.Deref(p.Spec.ResourceClaims[0].ResourceClaimTemplateName, "") != template {
		return nil, fmt.Errorf("pod %s claims %+v, want one claim of the ResourceClaimTemplate %s", p.Name, p.Spec.ResourceClaims, template)
	}
	podClaim := p.Spec.ResourceClaims[0].Name
	if cl := p.Spec.Containers[0].Resources.Claims; len(cl) != 1 || cl[0].Name != podClaim {
		return nil, fmt.Errorf("pod %s's container has the claims %+v, want %s", p.Name, cl, podClaim)
	}
	claimName := ""
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.Name == podClaim && s.ResourceClaimName != nil {
			claimName = *s.ResourceClaimName
		}
	}
	if claimName == "" {
		return nil, fmt.Errorf("pod %s has no ResourceClaim for %s yet: %+v", p.Name, podClaim, p.Status.ResourceClaimStatuses)
	}
	claim, err := spoke.AdminClient().ResourceV1().ResourceClaims(draNS).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("ResourceClaim %s of pod %s is not allocated", claimName, p.Name)
	}
	a100s := node.devicesOf("A100")
	var devices []string
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != draDriver || r.Pool != node.name || !slices.Contains(a100s, r.Device) {
			return nil, fmt.Errorf("ResourceClaim %s is allocated %s/%s/%s, want an A100 of %s (%v)", claimName, r.Driver, r.Pool, r.Device, node.name, a100s)
		}
		devices = append(devices, r.Device)
	}
	slices.Sort(devices)
	if len(slices.Compact(slices.Clone(devices))) != count || len(devices) != count {
		return nil, fmt.Errorf("ResourceClaim %s is allocated %v, want %d A100s", claimName, devices, count)
	}
	if !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
		return nil, fmt.Errorf("ResourceClaim %s is reserved for %+v, not for pod %s", claimName, claim.Status.ReservedFor, p.Name)
	}
	if p.Spec.NodeName != node.name || p.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("pod %s is %s on %q, want Running on %s", p.Name, p.Status.Phase, p.Spec.NodeName, node.name)
	}
	return devices, nil
}

// draNothingOn checks that the intent has no ManifestWork on cluster, and no pod or
// ResourceClaimTemplate on its spoke.
func draNothingOn(ctx context.Context, works workv1client.WorkV1Interface, spoke *framework.ControlPlane, cluster, intent string) error {
	list, err := works.ManifestWorks(cluster).List(ctx, metav1.ListOptions{LabelSelector: draIntentLabels(intent)})
	if err != nil {
		return err
	}
	pods, err := spoke.AdminClient().CoreV1().Pods(draNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + intent})
	if err != nil {
		return err
	}
	templates, err := spoke.AdminClient().ResourceV1().ResourceClaimTemplates(draNS).List(ctx, metav1.ListOptions{LabelSelector: draIntentLabels(intent)})
	if err != nil {
		return err
	}
	if n, p, rct := len(list.Items), len(pods.Items), len(templates.Items); n+p+rct > 0 {
		return fmt.Errorf("%s has %d ManifestWorks, %d pods and %d ResourceClaimTemplates of %s, want none", cluster, n, p, rct, intent)
	}
	return nil
}

// draDecided returns the clusters the placement's decisions name, sorted.
func draDecided(ctx context.Context, clusters clusterclient.Interface, placement string) ([]string, error) {
	list, err := clusters.ClusterV1beta1().PlacementDecisions(draNS).List(ctx, metav1.ListOptions{
		LabelSelector: clusterv1beta1.PlacementLabel + "=" + placement,
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range list.Items {
		for _, cd := range d.Status.Decisions {
			out = append(out, cd.ClusterName)
		}
	}
	slices.Sort(out)
	return out, nil
}

// draDelete deletes the intents while the spokes still run, so that their ManifestWorks go
// and no finalizer keeps them, and then their Placements.
func draDelete(t *testing.T, intents fleetfitv1alpha1.HPAIntentInterface, clusters clusterclient.Interface) {
	ctx := context.Background()
	for _, name := range []string{draPair, draEight} {
		if err := intents.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting HPAIntent %s: %v", name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, framework.PollInterval, framework.EventuallyTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := intents.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("the test's HPAIntents are still there %v after their deletion", framework.EventuallyTimeout)
	}
	for _, name := range []string{draPair, draEight} {
		if err := clusters.ClusterV1beta1().Placements(draNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Placement %s: %v", name, err)
		}
	}
}

// draDump shows, when the test failed, the intents' status, the decisions, the
// ManifestWorks, the inventories' devices, the pods and ResourceClaims on each spoke and the
// end of every process's log.
func draDump(t *testing.T, intents fleetfitv1alpha1.HPAIntentInterface, clusters clusterclient.Interface, works workv1client.WorkV1Interface,
	spokes map[string]*framework.ControlPlane, logs []*framework.Component) {
	if !t.Failed() {
		return
	}
	ctx := context.Background()
	for _, name := range []string{draPair, draEight} {
		if in, err := intents.Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Logf("intent %s conditions: %+v", name, in.Status.Conditions)
		}
		decided, err := draDecided(ctx, clusters, name)
		t.Logf("placement %s decides %v (%v)", name, decided, err)
	}
	inventories := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1()
	for _, cluster := range slices.Sorted(maps.Keys(spokes)) {
		if inv, err := inventories.ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{}); err == nil {
			t.Logf("%s: devices %+v node shapes %+v", cluster, inv.Status.Devices, inv.Status.NodeShapes)
		}
		if list, err := works.ManifestWorks(cluster).List(ctx, metav1.ListOptions{}); err == nil {
			for _, w := range list.Items {
				t.Logf("%s: ManifestWork %s conditions %+v manifests %+v", cluster, w.Name, w.Status.Conditions, w.Status.ResourceStatus.Manifests)
			}
		}
		spoke := spokes[cluster].AdminClient()
		if pods, err := spoke.CoreV1().Pods(draNS).List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				t.Logf("%s: pod %s on %q: %s claims %+v conditions %+v", cluster, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.ResourceClaimStatuses, p.Status.Conditions)
			}
		}
		if claims, err := spoke.ResourceV1().ResourceClaims(draNS).List(ctx, metav1.ListOptions{}); err == nil {
			for _, c := range claims.Items {
				t.Logf("%s: ResourceClaim %s allocation %+v reservedFor %+v", cluster, c.Name, c.Status.Allocation, c.Status.ReservedFor)
			}
		}
	}
	for _, c := range logs {
		t.Logf("--- %s ---\n%s", c.Name(), c.LogTail(draLogLines))
	}
}
