package registration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/test/framework"
)

// The template add-on of this test: its agent runs in addonNamespace on the
// spoke, and its hub identity gets addonClusterRole in its cluster's
// namespace.
const (
	addonName        = "hello-fleet"
	addonTemplate    = "hello-fleet-v1"
	addonNamespace   = "hello-fleet-agent"
	addonClusterRole = "hello-fleet:configmap-reader"
)

// TestAddOnTemplate enables a minimal AddOnTemplate add-on with
// registration KubeClient on the first cluster and checks each step of OCM's
// add-on flow: the add-on manager renders the agent's ManifestWork (with the
// hub kubeconfig Secret mounted), the work agent applies it, the add-on's CSR
// is approved by the add-on manager and signed by the hub, the registration
// agent writes the add-on's hub kubeconfig Secret on the spoke, and those
// credentials may do on the hub exactly what hubPermissions grant.
func TestAddOnTemplate(t *testing.T) {
	joined(t)
	ctx := t.Context()
	cluster, other := framework.SpokeName(0), framework.SpokeName(1)
	hub := fleet.Hub.AdminClient()
	addons := addonclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).AddonV1alpha1()

	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: addonClusterRole},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := hub.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := addons.AddOnTemplates().Create(ctx, helloTemplate(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addonName},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
				DefaultConfig:       &addonv1alpha1.ConfigReferent{Name: addonTemplate},
			}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
		},
	}
	if _, err := addons.ClusterManagementAddOns().Create(ctx, cma, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What `clusteradm addon enable --names hello-fleet --clusters cluster1` creates.
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: addonName}}
	if _, err := addons.ManagedClusterAddOns(cluster).Create(ctx, mca, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("manifestwork rendered and applied", func(t *testing.T) {
		works := workclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).WorkV1().ManifestWorks(cluster)
		var deployment *appsv1.Deployment
		framework.Eventually(t, func(ctx context.Context) error {
			list, err := works.List(ctx, metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + addonName})
			if err != nil {
				return err
			}
			if len(list.Items) != 1 {
				return fmt.Errorf("%d ManifestWorks of the add-on, want 1", len(list.Items))
			}
			deployment, err = deploymentIn(list.Items[0])
			return err
		})
		pod := deployment.Spec.Template.Spec
		if got := pod.Containers[0].Args; !slices.Contains(got, "--cluster-name="+cluster) {
			t.Errorf("agent args %v: the cluster name is not rendered", got)
		}
		mounted := false
		for _, v := range pod.Volumes {
			if v.Secret != nil && v.Secret.SecretName == addonName+"-hub-kubeconfig" {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("the agent's pod mounts no Secret %s-hub-kubeconfig: volumes %v", addonName, pod.Volumes)
		}
		t.Logf("rendered agent: env %v, mounts %v", pod.Containers[0].Env, pod.Containers[0].VolumeMounts)
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := fleet.Spokes[0].AdminClient().AppsV1().Deployments(addonNamespace).Get(ctx, deployment.Name, metav1.GetOptions{})
			return err
		})
	})

	t.Run("csr approved and signed", func(t *testing.T) {
		framework.Eventually(t, func(ctx context.Context) error {
			list, err := hub.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
				LabelSelector: "open-cluster-management.io/cluster-name=" + cluster + "," + addonv1alpha1.AddonLabelKey + "=" + addonName,
			})
			if err != nil {
				return err
			}
			for _, csr := range list.Items {
				for _, c := range csr.Status.Conditions {
					if c.Type == certificatesv1.CertificateApproved && len(csr.Status.Certificate) > 0 {
						t.Logf("add-on CSR %s by %s approved (%s: %s) and signed", csr.Name, csr.Spec.Username, c.Reason, c.Message)
						return nil
					}
				}
			}
			return fmt.Errorf("no approved and signed CSR of the add-on among %d", len(list.Items))
		})
	})

	var creds *rest.Config
	credsDir := t.TempDir() // outlives the subtest that writes it
	t.Run("hub kubeconfig secret on the spoke", func(t *testing.T) {
		var secret *corev1.Secret
		framework.Eventually(t, func(ctx context.Context) error {
			var err error
			secret, err = fleet.Spokes[0].AdminClient().CoreV1().Secrets(addonNamespace).Get(ctx, addonName+"-hub-kubeconfig", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(secret.Data["tls.crt"]) == 0 {
				return fmt.Errorf("secret has no certificate yet (keys %v)", keys(secret.Data))
			}
			return nil
		})
		t.Logf("add-on hub kubeconfig Secret %s/%s keys %v", secret.Namespace, secret.Name, keys(secret.Data))
		var err error
		if creds, err = configFromSecret(credsDir, secret); err != nil {
			t.Fatal(err)
		}
	})
	if creds == nil {
		t.FailNow()
	}

	t.Run("credentials have exactly the hub permissions", func(t *testing.T) {
		c := kubernetes.NewForConfigOrDie(creds)
		// The RoleBinding that grants them is made by the add-on manager: wait for it.
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := c.CoreV1().ConfigMaps(cluster).List(ctx, metav1.ListOptions{})
			return err
		})
		if _, err := c.CoreV1().ConfigMaps(other).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing config maps of another cluster: got %v, want Forbidden", err)
		}
		if _, err := c.CoreV1().Secrets(cluster).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing secrets of its cluster: got %v, want Forbidden", err)
		}
		if _, err := c.CoreV1().ConfigMaps(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing config maps of default: got %v, want Forbidden", err)
		}
	})

	t.Run("cluster labelled with the add-on", func(t *testing.T) {
		clusters := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).ClusterV1().ManagedClusters()
		label := "feature.open-cluster-management.io/addon-" + addonName
		framework.Eventually(t, func(ctx context.Context) error {
			mc, err := clusters.Get(ctx, cluster, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if _, ok := mc.Labels[label]; !ok {
				return fmt.Errorf("%s has no label %s: %v", cluster, label, mc.Labels)
			}
			return nil
		})
		mc, err := clusters.Get(ctx, other, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := mc.Labels[label]; ok {
			t.Errorf("%s, without the add-on, has label %s=%s", other, label, v)
		}
	})
}

// helloTemplate is the add-on's AddOnTemplate: a namespace and a Deployment,
// hub credentials by CSR, and hubPermissions binding addonClusterRole in
// the cluster's namespace.
func helloTemplate() *addonv1alpha1.AddOnTemplate {
	labels := map[string]string{"app": addonName}
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: addonNamespace},
	}
	deployment := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: addonNamespace, Name: addonName + "-agent"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "agent",
					Image: "example.com/hello-fleet:v1",
					Args:  []string{"--cluster-name={{CLUSTER_NAME}}", "--hub-kubeconfig={{HUB_KUBECONFIG}}"},
				}}},
			},
		},
	}
	return &addonv1alpha1.AddOnTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: addonTemplate},
		Spec: addonv1alpha1.AddOnTemplateSpec{
			AddonName: addonName,
			AgentSpec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				{RawExtension: runtime.RawExtension{Object: ns}},
				{RawExtension: runtime.RawExtension{Object: deployment}},
			}}},
			Registration: []addonv1alpha1.RegistrationSpec{{
				Type: addonv1alpha1.RegistrationTypeKubeClient,
				KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{
					HubPermissions: []addonv1alpha1.HubPermissionConfig{{
						Type:           addonv1alpha1.HubPermissionsBindingCurrentCluster,
						CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: addonClusterRole},
					}},
				},
			}},
		},
	}
}

// deploymentIn returns the Deployment among a ManifestWork's manifests.
func deploymentIn(work workv1.ManifestWork) (*appsv1.Deployment, error) {
	for _, m := range work.Spec.Workload.Manifests {
		d := &appsv1.Deployment{}
		if err := json.Unmarshal(m.Raw, d); err != nil {
			return nil, fmt.Errorf("decoding a manifest of ManifestWork %s: %w", work.Name, err)
		}
		if d.Kind == "Deployment" {
			return d, nil
		}
	}
	return nil, fmt.Errorf("ManifestWork %s has no Deployment", work.Name)
}

// configFromSecret writes the files of an add-on's hub kubeconfig Secret
// into dir, as the Secret is mounted in the add-on's pod, and loads the
// kubeconfig from there.
func configFromSecret(dir string, secret *corev1.Secret) (*rest.Config, error) {
	for k, v := range secret.Data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			return nil, err
		}
	}
	return clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
