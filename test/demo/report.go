package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/cli"
	"github.com/fleetfit/fleetfit/test/framework"
)

// console serialises what the demo prints, from the goroutines that start the clusters too,
// and stamps progress lines with the time since the start.
type console struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

func newConsole(out io.Writer) *console { return &console{out: out, start: time.Now()} }

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

// step prints one progress line.
func (c *console) step(format string, args ...any) {
	fmt.Fprintf(c, "[%5.1fs] %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

// fleetfit runs the fleetfit CLI in-process against the hub, after printing the command a
// user would type. A failing command is reported and the demo goes on.
func (c *console) fleetfit(ctx context.Context, kubeconfig string, args ...string) {
	if err := c.fleetfitStep(ctx, kubeconfig, args...); err != nil {
		fmt.Fprintf(c, "Error: %v\n", err)
	}
}

// fleetfitStep is fleetfit for a command the demo cannot go on without: it returns the
// command's error.
func (c *console) fleetfitStep(ctx context.Context, kubeconfig string, args ...string) error {
	args = append(args, "--kubeconfig", kubeconfig)
	fmt.Fprintf(c, "\n$ bin/fleetfit %s\n", strings.Join(args, " "))
	root := cli.NewCommand()
	root.SetOut(c)
	root.SetErr(c)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// printPods prints the pods delivered to each cluster, the node each runs on with that
// node's hardware, and what the pod asks for after fleetfit mutated it.
func printPods(ctx context.Context, c *console, f *framework.Fleet, layout []ClusterLayout) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tPOD\tSTATUS\tNODE\tNODE HAS\tPOD ASKS FOR")
	for i, spoke := range f.Spokes {
		client := spoke.AdminClient()
		pods, err := client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		nodes := map[string]*corev1.Node{}
		for _, n := range layout[i].Nodes {
			nodes[n.Name] = n
		}
		sort.Slice(pods.Items, func(a, b int) bool { return pods.Items[a].Name < pods.Items[b].Name })
		for _, p := range pods.Items {
			has := "-"
			if n, ok := nodes[p.Spec.NodeName]; ok {
				has = nodeHardware(n)
			}
			node := p.Spec.NodeName
			if node == "" {
				node = "(not scheduled)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", framework.SpokeName(i), p.Name, p.Status.Phase, node, has, podAsks(&p))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c, "\nPods delivered in namespace %s (kubectl --kubeconfig <cluster>.kubeconfig get pods -n %s -o wide):\n%s", Namespace, Namespace, b.String())
	return nil
}

// featureNames are short names for the node labels the demo uses.
var featureNames = map[string]string{LabelAVX512: "AVX-512", LabelQAT: "QAT"}

// nodeHardware describes a node's accelerators and CPU features, e.g. "4× A100, AVX-512".
func nodeHardware(n *corev1.Node) string {
	var parts []string
	if q, ok := n.Status.Allocatable[ResourceGPU]; ok {
		parts = append(parts, fmt.Sprintf("%s× %s", q.String(), n.Labels[LabelGPUProduct]))
	}
	if q, ok := n.Status.Allocatable[ResourceQAT]; ok {
		parts = append(parts, fmt.Sprintf("%s× %s", q.String(), ResourceQAT))
	}
	var features []string
	for k := range n.Labels {
		if name, ok := featureNames[k]; ok {
			features = append(features, name)
		}
	}
	slices.Sort(features)
	parts = append(parts, features...)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// podAsks describes what the pod's containers request and the node affinity it must meet,
// e.g. "cpu 4, nvidia.com/gpu 1; nvidia.com/gpu.product In [A100]".
func podAsks(p *corev1.Pod) string {
	var requests []string
	for _, c := range p.Spec.Containers {
		names := make([]string, 0, len(c.Resources.Requests))
		for name := range c.Resources.Requests {
			names = append(names, string(name))
		}
		slices.Sort(names)
		for _, name := range names {
			q := c.Resources.Requests[corev1.ResourceName(name)]
			requests = append(requests, name+" "+q.String())
		}
	}
	var affinity []string
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchExpressions {
				key := r.Key
				if name, ok := featureNames[key]; ok {
					key = name
				}
				s := key + " " + string(r.Operator)
				if len(r.Values) > 0 {
					s += " [" + strings.Join(r.Values, ",") + "]"
				}
				affinity = append(affinity, s)
			}
		}
	}
	out := strings.Join(requests, ", ")
	if len(affinity) > 0 {
		out += "; " + strings.Join(affinity, ", ")
	}
	if out == "" {
		return "-"
	}
	return out
}

// printAccess prints where each cluster is and how to look at the fleet.
func printAccess(c *console, f *framework.Fleet, kubeconfigs []string) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tROLE\tSERVER\tKUBECONFIG\tLOGS")
	for i, cp := range append([]*framework.ControlPlane{f.Hub}, f.Spokes...) {
		role := "managed cluster"
		if i == 0 {
			role = "hub"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cp.Name, role, cp.URL(), kubeconfigs[i], cp.Dir())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	hub := kubeconfigs[0]
	fmt.Fprintf(c, `
The fleet keeps running:
%s
Look around, for example:
  bin/fleetfit get clusters --kubeconfig %[2]s
  bin/fleetfit explain placement training -n %[3]s --kubeconfig %[2]s
  kubectl --kubeconfig %[2]s get placements,placementdecisions,hpaintents,manifestworks -A
  kubectl --kubeconfig %[2]s get managedclusters,managedclusteraddons,clusterinventories -A
  kubectl --kubeconfig %[4]s get nodes,pods -A -o wide
  kubectl --kubeconfig %[4]s get machinegroups,machinenodepools,statefulsets -A

The fleet's web page, read with the hub kubeconfig's identity:
  bin/fleetfit ui --kubeconfig %[2]s    then open http://127.0.0.1:8001/

Stop it with Ctrl-C or, from another terminal, make demo-down: every process is stopped and
every file removed.
`, b.String(), hub, Namespace, kubeconfigs[1])
	return nil
}
