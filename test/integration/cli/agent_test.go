package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	agentcmd "github.com/fleetfit/fleetfit/pkg/cmd/agent"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/test/framework"
)

// agentObjectRefs are the managed cluster's objects of `install agent`, in
// the order it applies and prints them.
var agentObjectRefs = []string{
	"namespace/fleetfit-agent",
	"serviceaccount/fleetfit-agent",
	"clusterrole.rbac.authorization.k8s.io/fleetfit:spoke:agent",
	"clusterrolebinding.rbac.authorization.k8s.io/fleetfit:spoke:agent",
	"role.rbac.authorization.k8s.io/fleetfit:spoke:agent",
	"rolebinding.rbac.authorization.k8s.io/fleetfit:spoke:agent",
	"secret/fleetfit-hub-kubeconfig",
	"service/fleetfit-agent-injector",
	"mutatingwebhookconfiguration.admissionregistration.k8s.io/fleetfit-agent-injector",
	"deployment.apps/fleetfit-agent",
}

// agentAccessRefs are the hub's objects of `install agent-access` for cluster.
func agentAccessRefs(cluster string) []string {
	return []string{
		"clusterrole.rbac.authorization.k8s.io/fleetfit:agent",
		"rolebinding.rbac.authorization.k8s.io/fleetfit:agent",
	}
}

// TestInstallAgent installs fleetfit-agent on managed clusters with the CLI,
// with and without the hub's admin credentials, and checks what the agent
// gets: its objects in the managed cluster, a hub kubeconfig that reaches the
// hub as its own identity, the rights to report for its cluster and no
// other. Bad input changes nothing anywhere.
func TestInstallAgent(t *testing.T) {
	ctx := t.Context()
	fleet, err := framework.StartFleet(ctx, 2, framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Stop)
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	const image = "registry.example.com/fleetfit:test"
	cluster1, cluster2 := framework.SpokeName(0), framework.SpokeName(1)
	hubAdmin := kubeconfigFile(t, "hub-admin", fleet.Hub.AdminConfig())
	spoke1 := kubeconfigFile(t, cluster1, fleet.Spokes[0].AdminConfig())
	spoke2 := kubeconfigFile(t, cluster2, fleet.Spokes[1].AdminConfig())
	agentHub := func(cluster string) string {
		cfg, err := fleet.Hub.UserConfig(deployagent.AgentUser(cluster))
		if err != nil {
			t.Fatal(err)
		}
		return kubeconfigFile(t, "agent-hub-"+cluster, cfg)
	}
	agent1Hub := agentHub(cluster1)

	t.Run("bad input changes nothing", func(t *testing.T) {
		dir := t.TempDir()
		file := func(name, content string) string {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
		garbage := file("garbage", "clusters: {this is: [not a kubeconfig\n")
		noContext := file("no-context", `apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://hub.example.com"}}]
users: [{name: agent, user: {token: abc}}]
contexts: [{name: hub, context: {cluster: hub, user: agent}}]
`)
		execPlugin := file("exec", `apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://hub.example.com"}}]
users: [{name: agent, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token}}}]
contexts: [{name: hub, context: {cluster: hub, user: agent}}]
current-context: hub
`)
		missing := filepath.Join(dir, "missing.kubeconfig")
		for name, tc := range map[string]struct {
			args []string
			want []string
		}{
			"no cluster name": {
				args: []string{"--hub-kubeconfig", agent1Hub},
				want: []string{"--cluster-name is required"},
			},
			"bad cluster name": {
				args: []string{"--cluster-name", "Cluster_1", "--hub-kubeconfig", agent1Hub},
				want: []string{`--cluster-name: "Cluster_1" is not a valid cluster name`},
			},
			"no hub kubeconfig": {
				args: []string{"--cluster-name", cluster1},
				want: []string{"--hub-kubeconfig is required"},
			},
			"every problem at once": {
				args: []string{"--cluster-name", "-", "--image", " "},
				want: []string{"--cluster-name: \"-\" is not a valid cluster name", "--image:", "--hub-kubeconfig is required"},
			},
			"missing hub kubeconfig": {
				args: []string{"--cluster-name", cluster1, "--hub-kubeconfig", missing},
				want: []string{"--hub-kubeconfig: hub kubeconfig " + missing, "no such file or directory"},
			},
			"unparsable hub kubeconfig": {
				args: []string{"--cluster-name", cluster1, "--hub-kubeconfig", garbage},
				want: []string{"--hub-kubeconfig: hub kubeconfig " + garbage},
			},
			"hub kubeconfig without a current context": {
				args: []string{"--cluster-name", cluster1, "--hub-kubeconfig", noContext},
				want: []string{"no current-context"},
			},
			"hub kubeconfig with an exec plugin": {
				args: []string{"--cluster-name", cluster1, "--hub-kubeconfig", execPlugin},
				want: []string{`runs "get-token" to get credentials, which the agent's container cannot`},
			},
			"missing hub admin kubeconfig": {
				args: []string{"--cluster-name", cluster1, "--hub-kubeconfig", agent1Hub, "--hub-admin-kubeconfig", missing},
				want: []string{"--hub-admin-kubeconfig: stat " + missing},
			},
			"cluster unknown to the hub": {
				args: []string{"--cluster-name", "cluster9", "--hub-kubeconfig", agent1Hub, "--hub-admin-kubeconfig", hubAdmin},
				want: []string{"has no namespace cluster9", "clusteradm accept --clusters cluster9"},
			},
		} {
			t.Run(name, func(t *testing.T) {
				args := append([]string{"install", "agent", "--kubeconfig", spoke1, "--image", image}, tc.args...)
				_, _, err := runFleetfit(t, args...)
				if err == nil {
					t.Fatalf("no error, want one containing %q", tc.want)
				}
				for _, want := range tc.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("got error %q, want one containing %q", err, want)
					}
				}
			})
		}
		_, _, err := runFleetfit(t, "install", "agent-access", "--kubeconfig", hubAdmin)
		if err == nil || !strings.Contains(err.Error(), "--cluster-name is required") {
			t.Errorf("agent-access without --cluster-name: got error %v, want one saying it is required", err)
		}

		notFound := map[string]error{}
		_, notFound["spoke namespace"] = fleet.Spokes[0].AdminClient().CoreV1().Namespaces().Get(ctx, deployagent.Namespace, metav1.GetOptions{})
		_, notFound["spoke clusterrole"] = fleet.Spokes[0].AdminClient().RbacV1().ClusterRoles().Get(ctx, "fleetfit:spoke:agent", metav1.GetOptions{})
		_, notFound["hub clusterrole"] = fleet.Hub.AdminClient().RbacV1().ClusterRoles().Get(ctx, "fleetfit:agent", metav1.GetOptions{})
		_, notFound["hub rolebinding"] = fleet.Hub.AdminClient().RbacV1().RoleBindings(cluster1).Get(ctx, "fleetfit:agent", metav1.GetOptions{})
		for what, err := range notFound {
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s after bad input: got error %v, want NotFound", what, err)
			}
		}
	})

	// cluster1, the hub side with the hub's admin credentials.
	installAgent1 := []string{"install", "agent", "--kubeconfig", spoke1, "--cluster-name", cluster1,
		"--hub-kubeconfig", agent1Hub, "--hub-admin-kubeconfig", hubAdmin, "--image", image}
	out, stderr, err := runFleetfit(t, installAgent1...)
	if err != nil {
		t.Fatalf("fleetfit install agent: %v", err)
	}
	want := []string{fmt.Sprintf("On the hub (%s):", fleet.Hub.URL())}
	for _, ref := range agentAccessRefs(cluster1) {
		want = append(want, ref+" serverside-applied")
	}
	want = append(want, fmt.Sprintf("On the managed cluster %s (%s):", cluster1, fleet.Spokes[0].URL()))
	for _, ref := range append(crdRefs(t, manifests.SpokeCRDs), agentObjectRefs...) {
		want = append(want, ref+" serverside-applied")
	}
	if diff := cmp.Diff(want, lines(out)); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
	for _, unwanted := range []string{"authenticates as", "agent-access"} {
		if strings.Contains(stderr, unwanted) {
			t.Errorf("stderr says %q, though the identity is the agent's and the hub side is done:\n%s", unwanted, stderr)
		}
	}

	spoke := fleet.Spokes[0].AdminClient()
	d, err := spoke.AppsV1().Deployments(deployagent.Namespace).Get(ctx, "fleetfit-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantPod := corev1.PodSpec{
		ServiceAccountName: "fleetfit-agent",
		SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
		Containers: []corev1.Container{{
			Name:    "fleetfit-agent",
			Image:   image,
			Command: []string{"/usr/local/bin/fleetfit-agent"},
			Args:    []string{"--cluster-name=" + cluster1, "--hub-kubeconfig=" + deployagent.HubKubeconfigPath},
			VolumeMounts: []corev1.VolumeMount{{
				Name: "hub-kubeconfig", MountPath: filepath.Dir(deployagent.HubKubeconfigPath), ReadOnly: true,
			}},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
		Volumes: []corev1.Volume{{Name: "hub-kubeconfig", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: deployagent.HubKubeconfigSecret},
		}}},
	}
	gotPod := d.Spec.Template.Spec
	// Compared without what the API server defaults.
	c := &gotPod.Containers[0]
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("the agent's container requests no cpu or memory: %v", c.Resources.Requests)
	}
	gotPod = corev1.PodSpec{
		ServiceAccountName: gotPod.ServiceAccountName,
		SecurityContext:    gotPod.SecurityContext,
		Containers: []corev1.Container{{
			Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args, VolumeMounts: c.VolumeMounts, SecurityContext: c.SecurityContext,
		}},
		Volumes: gotPod.Volumes,
	}
	if v := gotPod.Volumes; len(v) == 1 && v[0].Secret != nil {
		v[0].Secret.DefaultMode = nil
	}
	if diff := cmp.Diff(wantPod, gotPod); diff != "" {
		t.Errorf("the agent's pod (-want,+got):\n%s", diff)
	}

	// The Secret holds the agent's own hub kubeconfig, self-contained.
	secret, err := spoke.CoreV1().Secrets(deployagent.Namespace).Get(ctx, deployagent.HubKubeconfigSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secretHub, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[deployagent.HubKubeconfigSecretKey])
	if err != nil {
		t.Fatalf("the Secret's kubeconfig: %v", err)
	}
	agentCfg, err := clientcmd.BuildConfigFromFlags("", agent1Hub)
	if err != nil {
		t.Fatal(err)
	}
	type identity struct {
		Host       string
		CA, Cert   []byte
		KeyPresent bool
	}
	if diff := cmp.Diff(
		identity{fleet.Hub.URL(), agentCfg.CAData, agentCfg.CertData, true},
		identity{secretHub.Host, secretHub.CAData, secretHub.CertData, len(secretHub.KeyData) > 0},
	); diff != "" {
		t.Errorf("the Secret's hub kubeconfig (-want,+got):\n%s", diff)
	}

	// Installing again writes nothing, on either side.
	spokeObjs, err := install.AgentObjects(install.AgentOptions{ClusterName: cluster1, Image: image, HubKubeconfig: secret.Data[deployagent.HubKubeconfigSecretKey]})
	if err != nil {
		t.Fatal(err)
	}
	hubObjs, err := install.AgentAccessObjects(cluster1)
	if err != nil {
		t.Fatal(err)
	}
	rvs := func() map[string]map[string]string {
		return map[string]map[string]string{
			"hub":   resourceVersions(t, fleet.Hub.AdminConfig(), hubObjs),
			"spoke": resourceVersions(t, fleet.Spokes[0].AdminConfig(), spokeObjs),
		}
	}
	before := rvs()
	if _, _, err := runFleetfit(t, installAgent1...); err != nil {
		t.Fatalf("second fleetfit install agent: %v", err)
	}
	if diff := cmp.Diff(before, rvs()); diff != "" {
		t.Errorf("resourceVersions changed by installing again (-before,+after):\n%s", diff)
	}

	t.Run("the agent reports with what was installed", func(t *testing.T) {
		runAgentAsDeployed(t, fleet, 0, d, secret)
		framework.Eventually(t, func(ctx context.Context) error {
			inv, err := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(cluster1).Get(ctx, cluster1, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if inv.Status.ObservedAt.IsZero() {
				return errors.New("no report in the inventory yet")
			}
			return nil
		})

		// The same identity can do nothing for another cluster.
		asAgent1 := fleetfitclient.NewForConfigOrDie(secretHub).FleetfitV1alpha1()
		inv := &v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: cluster2, Namespace: cluster2}}
		if _, err := asAgent1.ClusterInventories(cluster2).Create(ctx, inv, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("agent of %s creating the inventory of %s: got error %v, want Forbidden", cluster1, cluster2, err)
		}
		if _, err := asAgent1.ClusterInventories(cluster2).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("agent of %s listing the inventories of %s: got error %v, want Forbidden", cluster1, cluster2, err)
		}
		if _, err := clusterclient.NewForConfigOrDie(secretHub).ClusterV1().ManagedClusters().Get(ctx, cluster2, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("agent of %s reading ManagedCluster %s: got error %v, want Forbidden", cluster1, cluster2, err)
		}
	})

	t.Run("without the hub's admin credentials", func(t *testing.T) {
		// A kubeconfig of another identity is worth a warning; a dry run
		// writes nothing.
		_, stderr, err := runFleetfit(t, "install", "agent", "--kubeconfig", spoke2, "--cluster-name", cluster2,
			"--hub-kubeconfig", hubAdmin, "--image", image, "--dry-run")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`authenticates as "fleetfit-admin" (its client certificate's common name), not %q`, deployagent.AgentUser(cluster2)); !strings.Contains(stderr, want) {
			t.Errorf("stderr does not warn %q:\n%s", want, stderr)
		}
		if _, err := fleet.Spokes[1].AdminClient().CoreV1().Namespaces().Get(ctx, deployagent.Namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s after a dry run: got error %v, want NotFound", deployagent.Namespace, err)
		}

		out, stderr, err := runFleetfit(t, "install", "agent", "--kubeconfig", spoke2, "--cluster-name", cluster2,
			"--hub-kubeconfig", agentHub(cluster2), "--image", image)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "On the hub") {
			t.Errorf("the hub was written to without --hub-admin-kubeconfig:\n%s", out)
		}
		if want := "fleetfit install agent-access --cluster-name " + cluster2 + " --kubeconfig <hub admin kubeconfig>"; !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say to run %q on the hub:\n%s", want, stderr)
		}
		if _, err := fleet.Hub.AdminClient().RbacV1().RoleBindings(cluster2).Get(ctx, "fleetfit:agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the agent's RoleBinding in namespace %s on the hub: got error %v, want NotFound", cluster2, err)
		}

		// What it said to run grants the access.
		out, _, err = runFleetfit(t, "install", "agent-access", "--kubeconfig", hubAdmin, "--cluster-name", cluster2)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, ref := range agentAccessRefs(cluster2) {
			want = append(want, ref+" serverside-applied")
		}
		if diff := cmp.Diff(want, lines(out)); diff != "" {
			t.Errorf("agent-access output (-want,+got):\n%s", diff)
		}
		d, err := fleet.Spokes[1].AdminClient().AppsV1().Deployments(deployagent.Namespace).Get(ctx, "fleetfit-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secret, err := fleet.Spokes[1].AdminClient().CoreV1().Secrets(deployagent.Namespace).Get(ctx, deployagent.HubKubeconfigSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runAgentAsDeployed(t, fleet, 1, d, secret)
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(cluster2).Get(ctx, cluster2, metav1.GetOptions{})
			return err
		})
	})

	t.Run("on a hub that manages itself", func(t *testing.T) {
		// The agent's roles on the hub and in its own cluster are then on
		// the same API server, and must not replace each other.
		const local = "local-cluster"
		hubKube := fleet.Hub.AdminClient()
		if _, err := hubKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: local}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := runFleetfit(t, "install", "agent", "--kubeconfig", hubAdmin, "--cluster-name", local,
			"--hub-kubeconfig", agentHub(local), "--hub-admin-kubeconfig", hubAdmin, "--image", image); err != nil {
			t.Fatal(err)
		}
		sa := []string{"system:serviceaccount:" + deployagent.Namespace + ":fleetfit-agent", "system:serviceaccounts"}
		for name, tc := range map[string]struct {
			user  []string
			attrs authorizationv1.ResourceAttributes
		}{
			"reads nodes": {sa, authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}},
			"reads pods":  {sa, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "pods"}},
			"reports": {[]string{deployagent.AgentUser(local)}, authorizationv1.ResourceAttributes{
				Verb: "create", Group: "fleetfit.io", Resource: "clusterinventories", Namespace: local}},
			"scores": {[]string{deployagent.AgentUser(local)}, authorizationv1.ResourceAttributes{
				Verb: "update", Group: "cluster.open-cluster-management.io", Resource: "addonplacementscores", Subresource: "status", Name: "fleetfit-resources", Namespace: local}},
		} {
			if !allowed(t, hubKube, tc.user[0], tc.user[1:], tc.attrs) {
				t.Errorf("%s: %s may not %+v", name, tc.user[0], tc.attrs)
			}
		}
	})
}

// allowed asks the API server whether user in groups may do attrs.
func allowed(t *testing.T, kube kubernetes.Interface, user string, groups []string, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}
	got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Allowed
}

// runAgentAsDeployed runs the fleetfit-agent command in-process as the
// Deployment d would in spoke i: with the container's arguments, the
// Secret's kubeconfig where the Deployment mounts it (here, a file) and the
// ServiceAccount's identity, until the test ends.
func runAgentAsDeployed(t *testing.T, fleet *framework.Fleet, i int, d *appsv1.Deployment, secret *corev1.Secret) {
	t.Helper()
	spokeCfg, err := fleet.Spokes[i].UserConfig("system:serviceaccount:"+deployagent.Namespace+":"+d.Spec.Template.Spec.ServiceAccountName, "system:serviceaccounts")
	if err != nil {
		t.Fatal(err)
	}
	hubKubeconfig := filepath.Join(t.TempDir(), deployagent.HubKubeconfigSecretKey)
	if err := os.WriteFile(hubKubeconfig, secret.Data[deployagent.HubKubeconfigSecretKey], 0o600); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(d.Spec.Template.Spec.Containers[0].Args)
	for j, a := range args {
		args[j] = strings.Replace(a, deployagent.HubKubeconfigPath, hubKubeconfig, 1)
	}
	args = append(args, "--kubeconfig", kubeconfigFile(t, "agent-spoke", spokeCfg), "--min-interval", "100ms")
	c := agentcmd.NewCommand()
	c.SetArgs(args)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("fleetfit-agent %s: %v", strings.Join(args, " "), err)
		}
	})
}
