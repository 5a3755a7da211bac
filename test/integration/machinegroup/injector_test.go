package machinegroup

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/injector"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

const (
	injectorGroupName = "general-machine"
	injectorOptedIn   = "injector-opted-in"
	injectorPlain     = "injector-plain"
)

// injectorSpoke is a managed cluster's API server with the spoke CRDs and
// deploy/agent's namespace and RBAC, and the injector running in-process as
// the agent's ServiceAccount. The API server calls it on loopback through
// deploy/agent's webhook configuration, changed only to use a URL instead
// of the Service; the caBundle is left to the injector.
type injectorSpoke struct {
	cp    *framework.ControlPlane
	admin kubernetes.Interface
	// addr is where the injector serves.
	addr string
}

func injectorStartSpoke(t *testing.T) *injectorSpoke {
	t.Helper()
	ctx := t.Context()
	cp, err := framework.StartControlPlane(ctx, "injector-spoke", framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	crds, err := manifests.SpokeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if err := install.ApplyCRDs(ctx, cp.AdminConfig(), crds); err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, cp.AdminConfig(), deployagent.SpokeRBAC); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &injectorSpoke{cp: cp, admin: cp.AdminClient(), addr: ln.Addr().String()}

	if err := framework.RegisterInjector(ctx, cp, s.addr); err != nil {
		t.Fatal(err)
	}
	for name, labels := range map[string]map[string]string{
		injectorOptedIn: {machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled},
		injectorPlain:   nil,
	} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		if _, err := s.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The injector, as the agent's ServiceAccount.
	agentCfg, err := cp.UserConfig("system:serviceaccount:"+deployagent.Namespace+":fleetfit-agent",
		"system:serviceaccounts", "system:serviceaccounts:"+deployagent.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	opts := injector.NewOptions()
	opts.Listener = ln
	opts.ExtraHostnames = []string{"127.0.0.1"}
	opts.ResyncInterval = framework.PollInterval
	srv, err := injector.New(kubernetes.NewForConfigOrDie(agentCfg), fleetfitclient.NewForConfigOrDie(agentCfg), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, logCtx := ktesting.NewTestContext(t)
	runCtx, stop := context.WithCancel(logCtx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the injector: %v", err)
		}
	})
	return s
}

func injectorMachineGroup() *v1alpha1.MachineGroup {
	return ut.MakeMachineGroup(injectorGroupName).
		MachineType(
			ut.MakeGroupMachineType("compute-medium", "6", "48Gi").Available(4).
				GPU(v1alpha1.MachineGPU{Num: 1, Machine: "DGX-1"}).Obj(),
			ut.MakeGroupMachineType("compute-xlarge", "40", "128Gi").Available(1).
				GPU(v1alpha1.MachineGPU{Num: 2, Product: "NVIDIA-GeForce-RTX-3090"}).Obj(),
		).
		Obj()
}

// injectorPod is a pod with the containers named, and labels.
func injectorPod(name string, labels map[string]string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	return p
}

// create creates pod in namespace and returns it as stored.
func (s *injectorSpoke) create(ctx context.Context, namespace string, pod *corev1.Pod) (*corev1.Pod, error) {
	return s.admin.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
}

// TestInjector creates pods on a managed cluster whose API server calls the
// injector, and checks what is stored: guests in opted-in namespaces get
// their machine type, anything else is left alone, and wrong guests are
// refused with messages naming what exists. Then the injector's CA is
// replaced, and guests are still admitted.
func TestInjector(t *testing.T) {
	ctx := t.Context()
	s := injectorStartSpoke(t)
	ff := fleetfitclient.NewForConfigOrDie(s.cp.AdminConfig())
	if _, err := ff.FleetfitV1alpha1().MachineGroups().Create(ctx, injectorMachineGroup(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Until the injector serves with a certificate the configuration's
	// caBundle trusts, and knows the group, guests are refused.
	probe := injectorPod("probe", machinegroup.GuestLabels(injectorGroupName, "compute-medium", ""), "train")
	injectorEventuallyAdmitted(t, s, probe)
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := injectorCABundle(ctx, s)
		return err
	})

	zone := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	t.Run("a guest in an opted-in namespace gets its machine type", func(t *testing.T) {
		pod := injectorPod("guest", machinegroup.GuestLabels(injectorGroupName, "compute-xlarge", "train"), "sidecar", "train")
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{zone}}},
		}}}
		got, err := s.create(ctx, injectorOptedIn, pod)
		if err != nil {
			t.Fatal(err)
		}
		amounts := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("40"), corev1.ResourceMemory: resource.MustParse("128Gi"),
			"nvidia.com/gpu": resource.MustParse("2"),
		}
		want := corev1.PodSpec{
			Containers: []corev1.Container{{Name: "sidecar"}, {Name: "train", Resources: corev1.ResourceRequirements{Requests: amounts, Limits: amounts}}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					zone,
					{Key: machinegroup.Prefix + "compute-xlarge", Operator: corev1.NodeSelectorOpIn, Values: []string{injectorGroupName}},
					{Key: machinegroup.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{machinegroup.NodePoolReady}},
					{Key: machinegroup.GPUProductLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"NVIDIA-GeForce-RTX-3090"}},
				}}},
			}}},
			Tolerations: []corev1.Toleration{
				{Key: machinegroup.Prefix + "compute-xlarge", Operator: corev1.TolerationOpEqual, Value: injectorGroupName, Effect: corev1.TaintEffectNoSchedule},
				{Key: machinegroup.LabelNodePool, Operator: corev1.TolerationOpEqual, Value: machinegroup.NodePoolReady, Effect: corev1.TaintEffectNoSchedule},
			},
		}
		if diff := cmp.Diff(want, injectorInjected(got), injectorQuantityEqual); diff != "" {
			t.Errorf("stored pod (-want,+got):\n%s", diff)
		}
	})

	t.Run("a guest in a namespace without the opt-in is left alone", func(t *testing.T) {
		got, err := s.create(ctx, injectorPlain, injectorPod("guest", machinegroup.GuestLabels(injectorGroupName, "compute-xlarge", ""), "train"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(corev1.PodSpec{Containers: []corev1.Container{{Name: "train"}}}, injectorInjected(got)); diff != "" {
			t.Errorf("stored pod (-want,+got):\n%s", diff)
		}
	})

	t.Run("a pod that is no guest is left alone", func(t *testing.T) {
		// It names a group that does not exist: the injector never sees it.
		labels := map[string]string{machinegroup.LabelMachineGroup: "nope", machinegroup.LabelMachineType: "nope", "app": "web"}
		got, err := s.create(ctx, injectorOptedIn, injectorPod("web", labels, "web"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}, injectorInjected(got)); diff != "" {
			t.Errorf("stored pod (-want,+got):\n%s", diff)
		}
	})

	noType := machinegroup.GuestLabels(injectorGroupName, "x", "")
	delete(noType, machinegroup.LabelMachineType)
	for name, tc := range map[string]struct {
		pod         *corev1.Pod
		wantMessage string
	}{
		"unknown machine type": {
			pod:         injectorPod("p", machinegroup.GuestLabels(injectorGroupName, "compute-huge", ""), "train"),
			wantMessage: `machine group general-machine has no machine type "compute-huge"; its types are ["compute-medium" "compute-xlarge"]`,
		},
		"unknown machine group": {
			pod:         injectorPod("p", machinegroup.GuestLabels("gpu-machines", "compute-xlarge", ""), "train"),
			wantMessage: `machine group "gpu-machines" does not exist; the machine groups are ["general-machine"]`,
		},
		"unknown injecting container": {
			pod:         injectorPod("p", machinegroup.GuestLabels(injectorGroupName, "compute-xlarge", "trainer"), "train", "sidecar"),
			wantMessage: `the label machines.fleetfit.io/injecting-container names the container "trainer", but the pod has no such container; its containers are ["train" "sidecar"]`,
		},
		"no machine type label": {
			pod:         injectorPod("p", noType, "train"),
			wantMessage: `but the label machines.fleetfit.io/machine-type is missing`,
		},
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			_, err := s.create(ctx, injectorOptedIn, tc.pod)
			if err == nil {
				t.Fatalf("created, want refused with %q", tc.wantMessage)
			}
			if !strings.Contains(err.Error(), tc.wantMessage) || !strings.Contains(err.Error(), "pods.injector.machines.fleetfit.io") {
				t.Errorf("error %q; want the webhook's refusal with %q", err, tc.wantMessage)
			}
		})
	}

	t.Run("a new CA is trusted before it signs what is served", func(t *testing.T) {
		before := injectorServedCertificate(t, s.addr)
		if err := s.admin.CoreV1().Secrets(deployagent.Namespace).Delete(ctx, injector.SignerSecret, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The bundle holds the old and the new CA, and so does the
		// caBundle; the certificate of the old CA is still served until it
		// is due, and still trusted.
		framework.Eventually(t, func(ctx context.Context) error {
			n, err := injectorCABundle(ctx, s)
			if err == nil && n != 2 {
				err = fmt.Errorf("the CA bundle has %d certificates, want the old and the new CA", n)
			}
			return err
		})
		if after := injectorServedCertificate(t, s.addr); !bytes.Equal(after, before) {
			t.Errorf("the serving certificate was replaced before it was due")
		}
		injectorEventuallyAdmitted(t, s, probe)

		// A serving certificate issued now is signed by the new CA.
		if err := s.admin.CoreV1().Secrets(deployagent.Namespace).Delete(ctx, injector.ServingSecret, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			if after := injectorServedCertificate(t, s.addr); bytes.Equal(after, before) {
				return errors.New("the injector still serves the old certificate")
			}
			return nil
		})
		injectorEventuallyAdmitted(t, s, probe)
	})
}

// injectorEventuallyAdmitted waits until creating pod in the opted-in
// namespace, as a dry run, is admitted.
func injectorEventuallyAdmitted(t *testing.T, s *injectorSpoke, pod *corev1.Pod) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := s.admin.CoreV1().Pods(injectorOptedIn).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

// injectorCABundle checks that the webhook configuration's caBundle is the
// injector's CA bundle and returns how many CAs that holds.
func injectorCABundle(ctx context.Context, s *injectorSpoke) (int, error) {
	cm, err := s.admin.CoreV1().ConfigMaps(deployagent.Namespace).Get(ctx, injector.CABundleConfigMap, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	cfg, err := s.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, deployagent.InjectorWebhookConfiguration, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	bundle := []byte(cm.Data["ca-bundle.crt"])
	if got := cfg.Webhooks[0].ClientConfig.CABundle; !bytes.Equal(got, bundle) {
		return 0, fmt.Errorf("caBundle %q, want the CA bundle %q", got, bundle)
	}
	certs, err := cert.ParseCertsPEM(bundle)
	return len(certs), err
}

// injectorServedCertificate is the certificate the injector serves, DER.
func injectorServedCertificate(t *testing.T, addr string) []byte {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}

// injectorInjected keeps of a pod's spec what the injector may change, and
// the container names.
func injectorInjected(p *corev1.Pod) corev1.PodSpec {
	spec := corev1.PodSpec{Affinity: p.Spec.Affinity, Tolerations: nil}
	for _, c := range p.Spec.Containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: c.Name, Resources: c.Resources})
	}
	for _, tol := range p.Spec.Tolerations {
		// The API server's DefaultTolerationSeconds admission adds these.
		if tol.Key == corev1.TaintNodeNotReady || tol.Key == corev1.TaintNodeUnreachable {
			continue
		}
		spec.Tolerations = append(spec.Tolerations, tol)
	}
	return spec
}

var injectorQuantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
