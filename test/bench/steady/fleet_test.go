package steady

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/action"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const (
	clusterSet = "bench"
	// namespaces is how many namespaces, each bound to the cluster set, hold the placements.
	namespaces = 5
	// clustersPerPlacement is every placement's numberOfClusters.
	clustersPerPlacement = 3
	// waitingEvery makes every waitingEvery-th placement (the last of each run of ten) one that
	// no cluster has room for.
	waitingEvery = 10

	gpuResource corev1.ResourceName = "nvidia.com/gpu"
	gpuProduct                      = "nvidia.com/gpu.product"
	cpuidAVX512                     = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
	container                       = "app"
)

// jitterCPU is what one report in two changes on a cluster: a pod of this size appears on, or
// leaves, one CPU node. It is one step of the agent's cpu rounding (100m) above the smallest
// change a report can show, and far below the room any satisfiable intent needs there.
var jitterCPU = resource.MustParse("200m")

var regions = []string{"us-east", "us-west", "eu-central", "eu-west", "ap-south"}

func clusterName(i int) string { return fmt.Sprintf("cluster-%05d", i) }

// clusterModel is what one cluster's agent sees (its Nodes and Pods) and what it last wrote to
// the hub. mu serialises the reports of the cluster, as one agent writes them one at a time.
type clusterModel struct {
	name string

	mu    sync.Mutex
	nodes []*corev1.Node
	pods  []*corev1.Pod
	// jitterNode is the CPU node the jitter pod comes and goes on; jittered says it is there.
	jitterNode string
	jittered   bool
	// reports counts the reports written since the fleet was created.
	reports int
	// last is the ClusterInventory as the hub returned it after the last write.
	last *v1alpha1.ClusterInventory
}

// newClusterModel returns cluster i with 4 to 8 nodes: in two clusters of three an A100 node
// (4 GPUs, 2 of them taken), in one of two a T4 node (2 GPUs, 0 to 2 taken), the rest CPU
// nodes, some with AVX-512, each with pods taking 0 to 14 cores. No node has more than two
// GPUs free. GPU nodes have the usual nvidia.com/gpu:NoSchedule taint, which the hub tolerates
// for the pods that ask for GPUs.
func newClusterModel(i int) *clusterModel {
	c := &clusterModel{name: clusterName(i)}
	count := 4 + i%5
	for j := range count {
		name := fmt.Sprintf("%s-node-%d", c.name, j)
		var n *corev1.Node
		var taken corev1.ResourceList
		switch {
		case j == 0 && i%3 != 2:
			n = utiltesting.MakeNode(name).Resource(corev1.ResourceCPU, "48").Resource(corev1.ResourceMemory, "192Gi").
				Resource(gpuResource, "4").Label(gpuProduct, "A100").Label(cpuidAVX512, "true").
				Taint(string(gpuResource), "present", corev1.TaintEffectNoSchedule).Obj()
			taken = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), gpuResource: resource.MustParse("2")}
		case j == 1 && i%2 == 0:
			n = utiltesting.MakeNode(name).Resource(corev1.ResourceCPU, "16").Resource(corev1.ResourceMemory, "64Gi").
				Resource(gpuResource, "2").Label(gpuProduct, "Tesla-T4").
				Taint(string(gpuResource), "present", corev1.TaintEffectNoSchedule).Obj()
			if g := (i / 2) % 3; g > 0 {
				taken = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), gpuResource: *resource.NewQuantity(int64(g), resource.DecimalSI)}
			}
		default:
			w := utiltesting.MakeNode(name).Resource(corev1.ResourceCPU, "32").Resource(corev1.ResourceMemory, "128Gi")
			if (i+j)%3 == 0 {
				w.Label(cpuidAVX512, "true")
			}
			n = w.Obj()
			if k := (i + j) % 8; k > 0 {
				taken = corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewQuantity(int64(2*k), resource.DecimalSI),
					corev1.ResourceMemory: resource.MustParse(strconv.Itoa(8*k) + "Gi"),
				}
			}
			c.jitterNode = name
		}
		c.nodes = append(c.nodes, n)
		if taken != nil {
			c.pods = append(c.pods, utiltesting.MakePod("default", name+"-work", name, taken))
		}
	}
	return c
}

// status is the report the agent computes from the cluster's nodes and pods, with pkg/inventory
// as the agent does; revision and observedAt are left to the write.
func (c *clusterModel) status(agentVersion string) v1alpha1.ClusterInventoryStatus {
	pods := c.pods
	if c.jittered {
		pods = append(pods[:len(pods):len(pods)], utiltesting.MakePod("default", "jitter", c.jitterNode, corev1.ResourceList{corev1.ResourceCPU: jitterCPU}))
	}
	st := utiltesting.InventoryStatus(c.nodes, pods...)
	st.AgentVersion = agentVersion
	return st
}

// waitingNeed is what one replica of waiting placement w (0, 1, ...) asks for on one node: four
// GPUs, which no node has free, with cpu and memory chosen so that no two waiting placements'
// needs are ordered (cpu grows with w by 100m, memory shrinks by 64Mi, the agent's rounding
// steps): a node with exactly w's need free fits w and no other waiting placement.
func waitingNeed(w int) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(2000+100*w), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(40<<30-int64(w)*64<<20, resource.BinarySI),
		gpuResource:           resource.MustParse("4"),
	}
}

// roomFor is the node that, added to a cluster, makes room for waiting placement w alone (see
// waitingNeed): an idle H100 node with exactly that much allocatable, tainted as GPU nodes are,
// so that neither the placements that need no GPU nor those that need an A100 can use it.
func roomFor(cluster string, w int) *corev1.Node {
	n := utiltesting.MakeNode(fmt.Sprintf("%s-room-%d", cluster, w)).Label(gpuProduct, "H100").
		Taint(string(gpuResource), "present", corev1.TaintEffectNoSchedule).Obj()
	for name, q := range waitingNeed(w) {
		n.Status.Capacity[name] = q
		n.Status.Allocatable[name] = q
	}
	return n
}

// placementRef is one placement of the benchmark and its HPAIntent, both named name.
type placementRef struct {
	namespace, name string
	// waiting is the index among the placements that no cluster has room for, -1 for the others.
	waiting int
}

func (p placementRef) key() string { return p.namespace + "/" + p.name }

// workName is the name of the ManifestWork of the placement's intent on every decided cluster.
func (p placementRef) workName() string {
	return action.WorkName(&v1alpha1.HPAIntent{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name}})
}

func placementAt(i int) placementRef {
	p := placementRef{namespace: fmt.Sprintf("bench-%d", i%namespaces), name: fmt.Sprintf("p-%05d", i), waiting: -1}
	if i%waitingEvery == waitingEvery-1 {
		p.waiting = i / waitingEvery
	}
	return p
}

// intentOf is placement i's HPAIntent: one consumer, the container of a small Deployment that
// the intent delivers. A satisfiable one asks, per replica (two), for 1-4 cores and 2-8Gi, and
// one in four also for an A100; a waiting one for waitingNeed, one replica.
func intentOf(i int, p placementRef) *v1alpha1.HPAIntent {
	consumer := utiltesting.MakeConsumer(container).Target("Deployment", p.name, container)
	replicas := int32(2)
	if p.waiting >= 0 {
		replicas = 1
		need := waitingNeed(p.waiting)
		cpu, mem, gpu := need[corev1.ResourceCPU], need[corev1.ResourceMemory], need[gpuResource]
		consumer.Requirement(
			utiltesting.MakeResource("cpu", "cpu").Requests(cpu.String()).Obj(),
			utiltesting.MakeResource("memory", "memory").Requests(mem.String()).Obj(),
			utiltesting.MakeResource("gpu", string(gpuResource)).Limits(gpu.String()).Obj(),
		)
	} else {
		consumer.Requirement(
			utiltesting.MakeResource("cpu", "cpu").Requests(strconv.Itoa(1+i%4)).Obj(),
			utiltesting.MakeResource("memory", "memory").Requests(strconv.Itoa(2*(1+i%4))+"Gi").Obj(),
		)
		if i%4 == 1 {
			consumer.Requirement(
				utiltesting.MakeResource("gpu", string(gpuResource)).Limits("1").Obj(),
				utiltesting.MakeFeature("a100", gpuProduct).Values("A100").Obj(),
			)
		}
	}
	return utiltesting.MakeHPAIntent(p.name, p.namespace).Placement(p.name).Consumer(consumer.Obj()).
		Manifest(deployment(p.name, replicas)).Obj()
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// populate creates, with a pool of writers, the cluster set bound to the placements'
// namespaces; every cluster (its namespace, the Available ManagedCluster and its first
// ClusterInventory report, written by rep as its agent writes it); and the placements with
// their intents. It returns the placements in creation order.
func populate(ctx context.Context, cfg *rest.Config, rep *reporter, placements int) ([]placementRef, error) {
	client := clusterclient.NewForConfigOrDie(cfg)
	kube := kubernetes.NewForConfigOrDie(cfg)
	intents := fleetfitclient.NewForConfigOrDie(cfg).FleetfitV1alpha1()
	if _, err := client.ClusterV1beta2().ManagedClusterSets().Create(ctx, utiltesting.MakeExclusiveClusterSet(clusterSet), metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	for n := range namespaces {
		ns := fmt.Sprintf("bench-%d", n)
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if _, err := client.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, utiltesting.MakeClusterSetBinding(ns, clusterSet), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	pool := newPool(ctx, 32)
	for i, c := range rep.clusters {
		pool.run(func() error {
			if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.name}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			want := utiltesting.MakeCluster(c.name).ClusterSet(clusterSet).Label("region", regions[i%len(regions)]).Available().Obj()
			got, err := client.ClusterV1().ManagedClusters().Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			// The status subresource ignores status on create, as for the agents' reports.
			got.Status = want.Status
			if _, err := client.ClusterV1().ManagedClusters().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				return err
			}
			return rep.create(ctx, c)
		})
	}
	refs := make([]placementRef, placements)
	for i := range placements {
		p := placementAt(i)
		refs[i] = p
		pool.run(func() error {
			pl := utiltesting.MakePlacement(p.name, p.namespace).NumberOfClusters(clustersPerPlacement).Obj()
			if _, err := client.ClusterV1beta1().Placements(p.namespace).Create(ctx, pl, metav1.CreateOptions{}); err != nil {
				return err
			}
			_, err := intents.HPAIntents(p.namespace).Create(ctx, intentOf(i, p), metav1.CreateOptions{})
			return err
		})
	}
	return refs, pool.wait()
}

// pool runs jobs on a fixed number of goroutines and keeps the first error.
type pool struct {
	jobs chan func() error
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

func newPool(ctx context.Context, workers int) *pool {
	p := &pool{jobs: make(chan func() error)}
	for range workers {
		p.wg.Go(func() {
			for job := range p.jobs {
				if ctx.Err() != nil {
					continue
				}
				if err := job(); err != nil {
					p.once.Do(func() { p.err = err })
				}
			}
		})
	}
	return p
}

func (p *pool) run(job func() error) { p.jobs <- job }

func (p *pool) wait() error {
	close(p.jobs)
	p.wg.Wait()
	return p.err
}
