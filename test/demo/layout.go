package demo

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// Node labels and resources the demo's hardware is described with, as Node Feature
// Discovery, NVIDIA's GPU feature discovery and the device plugins leave them.
const (
	LabelGPUProduct = "nvidia.com/gpu.product"
	LabelAVX512     = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
	// LabelQAT is NFD's label for a PCI device of class 0b40 (co-processor) from Intel:
	// a QuickAssist accelerator.
	LabelQAT = "feature.node.kubernetes.io/pci-0b40_8086.present"

	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
	ResourceQAT corev1.ResourceName = "intel.com/qat"
)

// ClusterLayout is what one managed cluster of the demo holds: its nodes, and pods that
// already run on them when fleetfit arrives.
type ClusterLayout struct {
	Name  string
	Nodes []*corev1.Node
	// Pods are bound to their nodes directly, as if they had been running for a while.
	Pods []*corev1.Pod
}

// PodNamespace holds the pods that run on the managed clusters before the demo's workloads.
const PodNamespace = "batch"

// Layout is the demo fleet, three managed clusters:
//
//   - cluster1: an A100 node with AVX-512 (20 of its 32 cores and 1 of its 4 GPUs taken) and a
//     small CPU node, nearly full;
//   - cluster2: a Tesla T4 node and a CPU node with AVX-512 (9 of 16 cores taken);
//   - cluster3: a CPU node, nearly full, and one with Intel QuickAssist (QAT).
//
// GPU nodes carry the usual nvidia.com/gpu:NoSchedule taint, so only pods that ask for a GPU
// go there. fleetfit-agent's own pod (50m cpu, 64Mi) runs on one of each cluster's CPU nodes
// too: cluster2's AVX-512 node keeps room for it next to the 6 cores fwall needs there.
func Layout() []ClusterLayout {
	return []ClusterLayout{
		{
			Name: "cluster1",
			Nodes: []*corev1.Node{
				gpuNode("gpu-a100-0", "A100", "32", "128Gi", "4").Label(LabelAVX512, "true").Obj(),
				cpuNode("cpu-0", "8", "32Gi").Obj(),
			},
			Pods: []*corev1.Pod{
				runningPod("training-batch-0", "gpu-a100-0", "20", "64Gi", 1),
				runningPod("web-0", "cpu-0", "6", "24Gi", 0),
			},
		},
		{
			Name: "cluster2",
			Nodes: []*corev1.Node{
				gpuNode("gpu-t4-0", "Tesla-T4", "16", "64Gi", "2").Obj(),
				cpuNode("cpu-avx512-0", "16", "64Gi").Label(LabelAVX512, "true").Obj(),
			},
			Pods: []*corev1.Pod{
				runningPod("db-0", "cpu-avx512-0", "9", "40Gi", 0),
			},
		},
		{
			Name: "cluster3",
			Nodes: []*corev1.Node{
				cpuNode("cpu-1", "16", "64Gi").Obj(),
				cpuNode("qat-0", "16", "64Gi").Resource(ResourceQAT, "4").Label(LabelQAT, "true").Obj(),
			},
			Pods: []*corev1.Pod{
				runningPod("cache-0", "cpu-1", "14", "48Gi", 0),
			},
		},
	}
}

func cpuNode(name, cpu, memory string) *ut.NodeWrapper {
	return ut.MakeNode(name).Resource(corev1.ResourceCPU, cpu).Resource(corev1.ResourceMemory, memory).
		Label(corev1.LabelHostname, name).Label(corev1.LabelOSStable, "linux")
}

func gpuNode(name, product, cpu, memory, gpus string) *ut.NodeWrapper {
	return cpuNode(name, cpu, memory).Resource(ResourceGPU, gpus).Label(LabelGPUProduct, product).
		Taint(string(ResourceGPU), "present", corev1.TaintEffectNoSchedule)
}

// runningPod is a pod bound to node that requests cpu, memory and gpus (tolerating the GPU
// taint when it asks for GPUs).
func runningPod(name, node, cpu, memory string, gpus int64) *corev1.Pod {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	if gpus > 0 {
		requests[ResourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	p := ut.MakePod(PodNamespace, name, node, requests)
	p.Labels = map[string]string{"app": name}
	if gpus > 0 {
		p.Spec.Tolerations = []corev1.Toleration{{Key: string(ResourceGPU), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	return p
}
