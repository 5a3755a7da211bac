package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/agent/clusterclaims"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// clusterSet is the cluster set the managed clusters join and the demo's namespace is bound
// to: OCM's "default", where OCM puts every cluster that names no other.
const clusterSet = "default"

// joinOptions join the spokes as `clusteradm join` with a Klusterlet that reserves the suffix
// fleetfit.io for ClusterClaims, so that OCM's registration agent reports every claim of
// fleetfit-agent whatever other claims a cluster has. The work agents run with the hub
// identity the registration agents obtained.
var joinOptions = framework.JoinOptions{
	WorkAgents: true,
	Agent:      framework.RegistrationAgentOptions{ReservedClusterClaimSuffixes: []string{"fleetfit.io"}},
}

// joinClusters makes the spokes managed clusters the way OCM's users do, with OCM's own
// registration controller, add-on manager and agents (see framework.JoinSpokes).
func joinClusters(ctx context.Context, con *console, f *framework.Fleet) error {
	j, err := f.JoinSpokes(ctx, joinOptions)
	if err != nil {
		return err
	}
	var names []string
	for i := range f.Spokes {
		names = append(names, framework.SpokeName(i))
	}
	con.step("%s joined the hub as clusteradm join and accept do: OCM's registration agents bootstrapped, their CSRs approved and signed, the clusters Available from their agents' leases (%.1fs)",
		strings.Join(names, ", "), j.Took.Seconds())
	con.step("OCM's work agents started with the hub identity their registration agents obtained")
	return nil
}

// bindClusterSet creates the demo's namespace on the hub and binds the cluster set the
// clusters joined to it, so that the demo's Placements may choose among them. OCM's
// registration controller creates the set itself; it is created here only when the
// controller has not done so yet.
func bindClusterSet(ctx context.Context, f *framework.Fleet) error {
	if _, err := f.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	clusters := clusterclient.NewForConfigOrDie(f.Hub.AdminConfig()).ClusterV1beta2()
	_, err := clusters.ManagedClusterSets().Get(ctx, clusterSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = clusters.ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet(clusterSet), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("ManagedClusterSet %s: %w", clusterSet, err)
	}
	if _, err := clusters.ManagedClusterSetBindings(Namespace).Create(ctx, ut.MakeClusterSetBinding(Namespace, clusterSet), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding ManagedClusterSet %s to namespace %s: %w", clusterSet, Namespace, err)
	}
	return nil
}

// installAddOn installs the fleetfit-agent add-on on the hub and enables it on every cluster
// with the fleetfit CLI, as a user without clusteradm does.
func installAddOn(ctx context.Context, con *console, f *framework.Fleet, hubKubeconfig string) error {
	if err := con.fleetfitStep(ctx, hubKubeconfig, "install", "addon"); err != nil {
		return fmt.Errorf("installing the add-on: %w", err)
	}
	var names []string
	for i := range f.Spokes {
		names = append(names, framework.SpokeName(i))
	}
	if err := con.fleetfitStep(ctx, hubKubeconfig, "addon", "enable", "--clusters", strings.Join(names, ",")); err != nil {
		return fmt.Errorf("enabling the add-on: %w", err)
	}
	fmt.Fprintln(con)
	return nil
}

// startAddOnAgents runs each cluster's fleetfit-agent as the pod of the Deployment OCM's
// work agent applied from the add-on's template (framework.StartAddonAgentProcess), once
// that pod runs on one of the cluster's kwok nodes, and returns when every agent has
// reported.
func startAddOnAgents(ctx context.Context, con *console, f *framework.Fleet, timeout time.Duration) error {
	errs := make([]error, len(f.Spokes))
	var wg sync.WaitGroup
	for i, spoke := range f.Spokes {
		wg.Go(func() { errs[i] = startAddOnAgent(ctx, con, f, spoke, framework.SpokeName(i), timeout) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func startAddOnAgent(ctx context.Context, con *console, f *framework.Fleet, spoke *framework.ControlPlane, cluster string, timeout time.Duration) error {
	node, err := waitAddOnPod(ctx, spoke, timeout)
	if err != nil {
		return fmt.Errorf("%s: %w", cluster, err)
	}
	con.step("%s: OCM's work agent applied the add-on; its pod %s/%s runs on node %s", cluster, deployagent.Namespace, framework.AddonAgentDeployment, node)
	if _, err := framework.StartAddonAgentProcess(ctx, f.Hub, spoke, cluster, timeout,
		"--min-interval="+agentMinInterval.String(), "--cluster-claims-interval="+agentClaimsInterval.String()); err != nil {
		return err
	}
	user := "?"
	mca, err := addonclient.NewForConfigOrDie(f.Hub.AdminConfig()).AddonV1alpha1().ManagedClusterAddOns(cluster).Get(ctx, deployaddon.Name, metav1.GetOptions{})
	if err == nil && len(mca.Status.Registrations) > 0 {
		user = mca.Status.Registrations[0].Subject.User
	}
	con.step("%s: fleetfit-agent reports to the hub as %s, with the credentials OCM's registration agent issued", cluster, user)
	return nil
}

// addOnPodSelector selects the pods of the add-on's Deployment (deploy/agent), not the
// reservation pods machine groups run in the same namespace.
const addOnPodSelector = "app.kubernetes.io/name=" + framework.AddonAgentDeployment

// waitAddOnPod waits until the add-on's Deployment on spoke has its pod running, and returns
// the node it runs on: the pod asks for resources there like any other, and the agent
// reports them.
func waitAddOnPod(ctx context.Context, spoke *framework.ControlPlane, timeout time.Duration) (string, error) {
	var node string
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := spoke.AdminClient().CoreV1().Pods(deployagent.Namespace).List(ctx, metav1.ListOptions{LabelSelector: addOnPodSelector})
		if err != nil {
			last = err
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				node = p.Spec.NodeName
				return true, nil
			}
		}
		last = fmt.Errorf("%d pods %s in namespace %s, none of them running", len(pods.Items), addOnPodSelector, deployagent.Namespace)
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for the add-on's pod: %w (last: %v)", err, last)
	}
	return node, nil
}

// waitClaims waits until OCM's registration agent reports, in the ManagedCluster's status,
// the ClusterClaim node-count.fleetfit.io of each cluster with the number of nodes the
// cluster has now: fleetfit-agent updates its claims at most every agentClaimsInterval, so
// the node count comes some time after the machine groups' nodes.
func waitClaims(ctx context.Context, f *framework.Fleet, timeout time.Duration) error {
	clusters := clusterclient.NewForConfigOrDie(f.Hub.AdminConfig()).ClusterV1().ManagedClusters()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = nil
		for i, spoke := range f.Spokes {
			name := framework.SpokeName(i)
			nodes, err := spoke.AdminClient().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			mc, err := clusters.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			got := "none"
			for _, c := range mc.Status.ClusterClaims {
				if c.Name == clusterclaims.NodeCountClaim {
					got = c.Value
				}
			}
			if want := fmt.Sprint(len(nodes.Items)); got != want {
				last = fmt.Errorf("ManagedCluster %s reports %s=%s, the cluster has %s nodes", name, clusterclaims.NodeCountClaim, got, want)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// printAddOns prints the hub's ManagedClusterAddOns as kubectl does, with the user each
// add-on agent was registered as.
func printAddOns(ctx context.Context, c *console, f *framework.Fleet) error {
	list, err := addonclient.NewForConfigOrDie(f.Hub.AdminConfig()).AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	slices.SortFunc(list.Items, func(a, b addonv1alpha1.ManagedClusterAddOn) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tAVAILABLE\tDEGRADED\tPROGRESSING\tHUB USER")
	for _, a := range list.Items {
		user := "-"
		if len(a.Status.Registrations) > 0 {
			user = a.Status.Registrations[0].Subject.User
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Namespace, a.Name,
			conditionStatus(a.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable),
			conditionStatus(a.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionDegraded),
			conditionStatus(a.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing), user)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c, "\n$ kubectl get managedclusteraddons -A   (and each add-on agent's hub user, from status.registrations)\n%s", b.String())
	return nil
}

func conditionStatus(conditions []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conditions, t); c != nil {
		return string(c.Status)
	}
	return ""
}

// printClaims prints the ClusterClaims of one managed cluster as OCM's registration agent
// reports them on the hub, fleetfit-agent's hardware facts among OCM's own.
func printClaims(ctx context.Context, c *console, f *framework.Fleet, cluster string) error {
	mc, err := clusterclient.NewForConfigOrDie(f.Hub.AdminConfig()).ClusterV1().ManagedClusters().Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return err
	}
	claims := slices.Clone(mc.Status.ClusterClaims)
	slices.SortFunc(claims, func(a, b clusterv1.ManagedClusterClaim) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVALUE")
	for _, cl := range claims {
		fmt.Fprintf(tw, "%s\t%s\n", cl.Name, cl.Value)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c, "\n$ kubectl get managedcluster %s -o jsonpath='{.status.clusterClaims}'   (as a table; *.fleetfit.io kept by fleetfit-agent)\n%s", cluster, b.String())
	return nil
}
