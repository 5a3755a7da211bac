package framework

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// CreateNode creates the node and then sets its status through the status subresource, as a
// kubelet would. The API server's TaintNodesByCondition admission taints new nodes not-ready;
// with no node lifecycle controller running, the taints are set back to the node's own, as
// that controller would once the node is Ready.
func CreateNode(ctx context.Context, c kubernetes.Interface, n *corev1.Node) error {
	created, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", n.Name, err)
	}
	created.Spec.Taints = n.Spec.Taints
	if created, err = c.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("untainting node %s: %w", n.Name, err)
	}
	created.Status = n.Status
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting status of node %s: %w", n.Name, err)
	}
	return nil
}

// ApplyAgentRBAC applies deploy/agent's RBAC for cluster's agent on the hub and on the spoke.
func ApplyAgentRBAC(ctx context.Context, hub, spoke *ControlPlane, cluster string) error {
	for _, m := range [][]byte{deployagent.HubRBAC, deployagent.HubClusterRBAC(cluster)} {
		if err := Apply(ctx, hub.AdminConfig(), m); err != nil {
			return err
		}
	}
	return Apply(ctx, spoke.AdminConfig(), deployagent.SpokeRBAC)
}

// GrantDelivery lets the HPAIntents of each namespace deliver into that namespace of spoke,
// with the objects `fleetfit install agent --delivery-namespace` applies: the namespace, the
// ServiceAccount that OCM's work agent applies their ManifestWorks as, and its RBAC.
func GrantDelivery(ctx context.Context, spoke *ControlPlane, namespaces ...string) error {
	for _, ns := range namespaces {
		if err := Apply(ctx, spoke.AdminConfig(), deployagent.DeliveryRBAC(ns)); err != nil {
			return fmt.Errorf("granting delivery into %s: %w", ns, err)
		}
	}
	return nil
}

// AgentOption changes the reporter options StartAgent runs with.
type AgentOption func(*reporter.Options)

// WithMachineGroups makes the agent report the spoke's MachineGroups, as fleetfit-agent does
// with --machine-groups.
func WithMachineGroups() AgentOption {
	return func(o *reporter.Options) { o.MachineGroups = true }
}

// WithUsageScore makes the agent write resource-usage-score too, as fleetfit-agent does by
// default (--resource-usage-score).
func WithUsageScore() AgentOption {
	return func(o *reporter.Options) { o.UsageScore = true }
}

// StartAgent runs fleetfit-agent's reporter for cluster in-process, with the identities
// deploy/agent grants (the spoke's ServiceAccount, the hub user system:fleetfit:agent:<cluster>;
// see ApplyAgentRBAC), until ctx ends. It returns a channel that receives the reporter's result
// when it stops.
func StartAgent(ctx context.Context, hub, spoke *ControlPlane, cluster string, minInterval time.Duration, opts ...AgentOption) (<-chan error, error) {
	spokeCfg, err := spoke.UserConfig(agentServiceAccount, "system:serviceaccounts")
	if err != nil {
		return nil, err
	}
	hubCfg, err := hub.UserConfig(deployagent.AgentUser(cluster))
	if err != nil {
		return nil, err
	}
	ropts := reporter.Options{ClusterName: cluster, Inventory: inventory.DefaultConfig(), MinInterval: minInterval}
	for _, o := range opts {
		o(&ropts)
	}
	c, err := reporter.New(reporter.Clients{
		Spoke:         kubernetes.NewForConfigOrDie(spokeCfg),
		Hub:           fleetfitclient.NewForConfigOrDie(hubCfg),
		HubCluster:    clusterclient.NewForConfigOrDie(hubCfg),
		SpokeFleetfit: fleetfitclient.NewForConfigOrDie(spokeCfg),
	}, ropts)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return done, nil
}
