package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/injector"
)

// AddonAgentDeployment is the Deployment the fleetfit-agent add-on puts on a
// managed cluster, in deployagent.Namespace.
const AddonAgentDeployment = "fleetfit-agent"

// SecretSyncPeriod is how often StartAddonAgentProcess copies the Secrets the
// agent's pod mounts into its files, as a kubelet refreshes a Secret volume.
const SecretSyncPeriod = time.Second

// StartAddonAgentProcess runs bin/fleetfit-agent as the pod of the Deployment
// that OCM's work agent applied on spoke for the fleetfit-agent add-on would
// run, since the test control planes have no kubelet: it waits for that
// Deployment, then runs its container's command line with
//
//   - every Secret volume the container mounts (the add-on's hub kubeconfig
//     among them, issued by OCM's registration agent) copied into a directory
//     of its own and kept current while the process runs, files replaced
//     atomically as a kubelet does, so a rotated certificate reaches the agent
//     the way it reaches a pod;
//   - the mount paths in its arguments and environment pointing at those
//     directories, and $(VAR) references expanded from its environment;
//   - the pod's ServiceAccount as its spoke identity, through a kubeconfig
//     holding a token the spoke's TokenRequest API issued for it (the
//     in-cluster configuration a pod would use has fixed paths);
//   - the pod resource injector on a free loopback port that the spoke's
//     webhook configuration is pointed at (RegisterInjector), as the spoke has
//     no Service network, and pointed at again while the process runs when
//     OCM's work agent re-applies the add-on's Service reference;
//
// and args appended. It returns once the agent has written its first report
// to the hub.
func StartAddonAgentProcess(ctx context.Context, hub, spoke *ControlPlane, cluster string, timeout time.Duration, args ...string) (*Component, error) {
	client := spoke.AdminClient()
	var dep *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		dep, err = client.AppsV1().Deployments(deployagent.Namespace).Get(ctx, AddonAgentDeployment, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: waiting for the add-on's Deployment %s/%s: %w", cluster, deployagent.Namespace, AddonAgentDeployment, err)
	}
	pod := dep.Spec.Template.Spec
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "fleetfit-agent" })
	if i < 0 {
		return nil, fmt.Errorf("%s: the add-on's Deployment has no container fleetfit-agent", cluster)
	}
	container := pod.Containers[i]

	var mounts secretMounts
	c, err := startComponent(ctx, componentSpec{
		binary: "fleetfit-agent",
		name:   "fleetfit-agent " + cluster + " (add-on)",
		home:   spoke,
		planes: []*ControlPlane{hub, spoke},
		args: func(dir, addr string) ([]string, error) {
			var err error
			mounts, err = mountSecrets(ctx, client, deployagent.Namespace, pod.Volumes, container.VolumeMounts, filepath.Join(dir, "volumes"), timeout)
			if err != nil {
				return nil, err
			}
			spokeKubeconfig, err := writeServiceAccountKubeconfig(ctx, spoke, deployagent.Namespace, pod.ServiceAccountName, dir, timeout)
			if err != nil {
				return nil, err
			}
			if err := RegisterInjector(ctx, spoke, addr); err != nil {
				return nil, err
			}
			argv, err := podArgs(container, deployagent.Namespace, mounts)
			if err != nil {
				return nil, err
			}
			argv = append(argv,
				"--kubeconfig="+spokeKubeconfig,
				"--injector-bind-address="+addr,
				"--injector-cert-hostnames="+strings.Split(addr, ":")[0],
			)
			return append(argv, args...), nil
		},
		ready: inventoryReported(hub, cluster),
	})
	if err != nil {
		return nil, err
	}
	go keepPodEnvironment(context.WithoutCancel(ctx), client, c, mounts, "https://"+c.Addr()+injector.Path)
	return c, nil
}

// secretMount is a Secret volume of the pod, copied into dir.
type secretMount struct {
	namespace, secret string
	mountPath, dir    string
	optional          bool
}

type secretMounts []secretMount

// mountSecrets copies the Secret volumes that mounts name into directories
// under root, waiting for Secrets that are not optional to exist.
func mountSecrets(ctx context.Context, client kubernetes.Interface, namespace string, volumes []corev1.Volume, mounts []corev1.VolumeMount, root string, timeout time.Duration) (secretMounts, error) {
	var out secretMounts
	for _, m := range mounts {
		i := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || volumes[i].Secret == nil {
			continue
		}
		sm := secretMount{
			namespace: namespace,
			secret:    volumes[i].Secret.SecretName,
			mountPath: m.MountPath,
			dir:       filepath.Join(root, m.Name),
			optional:  ptr.Deref(volumes[i].Secret.Optional, false),
		}
		if err := os.MkdirAll(sm.dir, 0o700); err != nil {
			return nil, err
		}
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			last = sm.sync(ctx, client)
			return last == nil || (sm.optional && apierrors.IsNotFound(last)), nil
		})
		if err != nil {
			return nil, fmt.Errorf("waiting for Secret %s/%s of volume %s: %w (last: %v)", namespace, sm.secret, m.Name, err, last)
		}
		out = append(out, sm)
	}
	return out, nil
}

// keepPodEnvironment keeps, every SecretSyncPeriod until the agent's process
// has exited, what a kubelet and a Service network would keep for its pod:
// the Secrets copied into their files, and the injector's webhook
// configuration pointed at the process. OCM's work agent applies the add-on's
// manifests again now and then — when the add-on manager changes the
// ManifestWork, and every few minutes — and so puts the configuration's
// Service, which this spoke cannot reach, back in the place of the URL.
func keepPodEnvironment(ctx context.Context, client kubernetes.Interface, c *Component, ms secretMounts, injectorURL string) {
	for {
		time.Sleep(SecretSyncPeriod)
		if exited, _ := c.Exited(); exited {
			return
		}
		for _, m := range ms {
			// A failed copy is retried on the next tick; the files keep their
			// last content meanwhile, as a kubelet's volume does.
			_ = m.sync(ctx, client)
		}
		// A failed update (a conflict with the agent setting its caBundle)
		// is retried on the next tick too.
		_ = pointInjector(ctx, client, injectorURL)
	}
}

// pointInjector points every webhook of the spoke's injector configuration
// at url where it points elsewhere, keeping the rest (the agent's caBundle).
func pointInjector(ctx context.Context, client kubernetes.Interface, url string) error {
	want, err := InjectorWebhookConfiguration(url)
	if err != nil {
		return err
	}
	configs := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg, err := configs.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	changed := false
	for i := range cfg.Webhooks {
		cc := &cfg.Webhooks[i].ClientConfig
		if cc.Service != nil || cc.URL == nil || *cc.URL != url {
			cc.Service, cc.URL = nil, ptr.To(url)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	_, err = configs.Update(ctx, cfg, metav1.UpdateOptions{})
	return err
}

// sync writes each key of the Secret to a file of its name in m.dir, through
// a temporary file and a rename so that a reader never sees half a file, and
// removes files of keys the Secret no longer has. Unchanged files are left
// alone.
func (m secretMount) sync(ctx context.Context, client kubernetes.Interface) error {
	s, err := client.CoreV1().Secrets(m.namespace).Get(ctx, m.secret, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(s.Data) == 0 {
		return fmt.Errorf("secret %s/%s has no data yet", m.namespace, m.secret)
	}
	for key, value := range s.Data {
		path := filepath.Join(m.dir, key)
		if old, err := os.ReadFile(path); err == nil && string(old) == string(value) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, value, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := s.Data[e.Name()]; !ok && !strings.HasSuffix(e.Name(), ".tmp") {
			_ = os.Remove(filepath.Join(m.dir, e.Name()))
		}
	}
	return nil
}

// podArgs is the container's arguments as the process gets them: $(VAR)
// references expanded from its environment (values and the pod's namespace),
// and mount paths replaced by the directories the Secrets are copied into.
// The command's first word is the binary, which the caller runs.
func podArgs(c corev1.Container, namespace string, mounts secretMounts) ([]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = namespace
		}
	}
	paths := make([]string, 0, 2*len(mounts))
	for _, m := range mounts {
		paths = append(paths, strings.TrimSuffix(m.mountPath, "/"), m.dir)
	}
	rewrite := strings.NewReplacer(paths...)
	var out []string
	if len(c.Command) > 1 {
		out = append(out, c.Command[1:]...)
	}
	out = append(out, c.Args...)
	for i, a := range out {
		expanded := os.Expand(strings.NewReplacer("$(", "${", ")", "}").Replace(a), func(name string) string {
			if v, ok := env[name]; ok {
				return v
			}
			return "$(" + name + ")"
		})
		out[i] = rewrite.Replace(expanded)
	}
	return out, nil
}

// writeServiceAccountKubeconfig writes a kubeconfig of cp for the
// ServiceAccount namespace/name, with a token from the TokenRequest API
// valid for a day, waiting for the ServiceAccount to exist.
func writeServiceAccountKubeconfig(ctx context.Context, cp *ControlPlane, namespace, name, dir string, timeout time.Duration) (string, error) {
	if name == "" {
		name = "default"
	}
	var token *authenticationv1.TokenRequest
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		token, last = cp.AdminClient().CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
		}, metav1.CreateOptions{})
		return last == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("a token for ServiceAccount %s/%s: %w (last: %v)", namespace, name, err, last)
	}
	cfg := &rest.Config{Host: cp.AdminConfig().Host, BearerToken: token.Status.Token}
	cfg.CAData = cp.AdminConfig().CAData
	b, err := Kubeconfig(cfg, cp.Name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "spoke.kubeconfig")
	return path, os.WriteFile(path, b, 0o600)
}
