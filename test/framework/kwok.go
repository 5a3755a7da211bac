package framework

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KwokNodeAnnotation marks the nodes kwok runs (with the value
// KwokNodeValue, the annotation kwok's own documentation uses): kwok keeps
// them Ready, renews their Leases and runs the pods bound to them. Nodes
// without it are left alone, so tests may still create nodes that nothing
// runs.
const (
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	KwokNodeValue      = "fake"
)

// kwokStages is the lifecycle kwok plays: nodes become Ready and report
// now and then; pods run at once, Job pods then succeed, deleted pods go.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// kwokNodeLeaseSeconds is the Lease duration kwok sets on its nodes. It
// renews them every quarter of it, as a kubelet does; the node lifecycle
// controller marks a node whose Lease is older than its grace period (50s)
// NotReady.
const kwokNodeLeaseSeconds = 40

// kwokPodCIDR is where kwok takes pod IPs from.
const kwokPodCIDR = "10.244.0.0/16"

// StartKwok runs kwok (sigs.k8s.io/kwok, built by `make tools`) against cp
// as its admin:
//
//	kwok --kubeconfig=<cp> --config=<stages> \
//	    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
//	    --node-lease-duration-seconds=40 --cidr=10.244.0.0/16 \
//	    --server-address=127.0.0.1:<port>
//
// and waits until it serves its health endpoint. It plays kubelet for the
// nodes annotated with KwokNodeAnnotation (see CreateKwokNode): they turn
// Ready with Leases renewed, and the pods bound to them turn Running (Job
// pods then Succeeded) and are removed at once when deleted. Binding pods
// is kube-scheduler's job (StartKubeScheduler). kwok reads no configuration
// from the home directory. The caller stops it with Stop, or leaves that to
// cp.Stop.
func StartKwok(ctx context.Context, cp *ControlPlane) (*Component, error) {
	return startComponent(ctx, componentSpec{
		binary: "kwok",
		name:   "kwok",
		home:   cp,
		planes: []*ControlPlane{cp},
		args: func(dir, addr string) ([]string, error) {
			kubeconfig, err := writeKubeconfig(cp, dir, "kubeconfig")
			if err != nil {
				return nil, err
			}
			stages := filepath.Join(dir, "stages.yaml")
			if err := os.WriteFile(stages, kwokStages, 0o600); err != nil {
				return nil, err
			}
			return []string{
				"--kubeconfig=" + kubeconfig,
				"--config=" + stages,
				"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeValue,
				fmt.Sprintf("--node-lease-duration-seconds=%d", kwokNodeLeaseSeconds),
				"--cidr=" + kwokPodCIDR,
				"--server-address=" + addr,
				// Every Lease renewal and status patch is logged at INFO.
				"--v=WARN",
			}, nil
		},
		// kwok's working directory, where it would read ~/.kwok/kwok.yaml.
		envFor: func(dir string) []string { return []string{"KWOK_WORKDIR=" + dir} },
		ready:  healthz("http://%s/healthz"),
	})
}

// CreateKwokNode creates a node for kwok to run: n with KwokNodeAnnotation
// and without conditions, keeping its labels, taints, capacity and
// allocatable. kwok makes it Ready; until then it carries the not-ready
// taint the API server adds to new nodes, which the node lifecycle
// controller (StartKubeControllerManager) removes once it is Ready. Wait for
// that (NodeSchedulable) before counting on pods landing there.
func CreateKwokNode(ctx context.Context, c kubernetes.Interface, n *corev1.Node) (*corev1.Node, error) {
	n = n.DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[KwokNodeAnnotation] = KwokNodeValue
	n.Status.Conditions = nil
	created, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating node %s: %w", n.Name, err)
	}
	return created, nil
}

// NodeSchedulable returns nil when the node is Ready and carries none of
// the taints Kubernetes puts on nodes that are not (yet) ready, and an error
// saying why not otherwise.
func NodeSchedulable(n *corev1.Node) error {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return fmt.Errorf("node %s is not Ready", n.Name)
	}
	for _, t := range n.Spec.Taints {
		switch t.Key {
		case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable:
			return fmt.Errorf("node %s has the taint %s", n.Name, t.ToString())
		}
	}
	return nil
}
