package emco

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	deployhub "github.com/fleetfit/fleetfit/deploy/hub"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// Who calls the API in these tests: a user with every verb on the project's hpaintents, one
// who may only read them, one who may read and change them, and one with no rights.
const (
	editor   = "emco-editor"
	viewer   = "emco-viewer"
	stranger = "emco-stranger"
	// updater may change intents, not create them.
	updater = "emco-updater"
)

// env is one test's project (a namespace), clients, and the base URL of a running hub.
type env struct {
	t        *testing.T
	project  string
	kube     kubernetes.Interface
	clusters clusterclient.Interface
	fleetfit fleetfitclient.Interface
	base     string
}

// newEnv creates a project namespace named project-<random> with the roles of editor and viewer, a cluster set
// bound to it, and runs fleetfit-hub with deploy/hub's RBAC until the test ends.
func newEnv(t *testing.T, project string) *env {
	t.Helper()
	ctx := t.Context()
	cfg := fleet.Hub.AdminConfig()
	e := &env{
		t: t, project: project,
		kube:     fleet.Hub.AdminClient(),
		clusters: clusterclient.NewForConfigOrDie(cfg),
		fleetfit: fleetfitclient.NewForConfigOrDie(cfg),
	}
	// A generated name lets the test run again (-count) on the same hub, where the namespaces
	// of earlier runs stay terminating (no controller empties them).
	ns, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: project + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.project = ns.Name
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Namespaces().Delete(context.Background(), e.project, metav1.DeleteOptions{})
	})
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, utiltesting.MakeExclusiveClusterSet(e.project), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.clusters.ClusterV1beta2().ManagedClusterSets().Delete(context.Background(), e.project, metav1.DeleteOptions{})
	})
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSetBindings(e.project).Create(ctx, utiltesting.MakeClusterSetBinding(e.project, e.project), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.grant(editor, "create", "get", "list", "update", "delete")
	e.grant(viewer, "get", "list")
	e.grant(updater, "get", "update")

	if err := framework.Apply(ctx, cfg, deployhub.RBAC); err != nil {
		t.Fatal(err)
	}
	hubUser, err := fleet.Hub.UserConfig(deployhub.ServiceAccountUser, "system:serviceaccounts", "system:serviceaccounts:"+deployhub.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	framework.RunHub(t, hubUser, "--workers=2", "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", filepath.Join(t.TempDir(), "certs"))
	e.base = fmt.Sprintf("https://127.0.0.1:%d/v2/projects/%s/composite-apps/my-capp1/v1.0/deployment-intent-groups/my-dig1/hpa-intents", port, e.project)
	// The endpoint is up once it answers.
	c := e.client(editor)
	framework.Eventually(t, func(ctx context.Context) error {
		if code, body := c.do(ctx, http.MethodGet, "", "", nil); code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		return nil
	})
	return e
}

// grant gives user verbs on the hpaintents of the project.
func (e *env) grant(user string, verbs ...string) {
	e.t.Helper()
	ctx := e.t.Context()
	rbac := e.kube.RbacV1()
	if _, err := rbac.Roles(e.project).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"hpaintents"}, Verbs: verbs}},
	}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(e.project).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// createCluster creates an available managed cluster of the project's set, named
// <project>-<suffix>, whose agent has just reported one node, and returns its name.
func (e *env) createCluster(suffix string, node *corev1.Node) string {
	e.t.Helper()
	name := e.project + "-" + suffix
	ctx := e.t.Context()
	want := utiltesting.MakeCluster(name).ClusterSet(e.project).Available().Obj()
	got, err := e.clusters.ClusterV1().ManagedClusters().Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	got.Status = want.Status
	if _, err := e.clusters.ClusterV1().ManagedClusters().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.clusters.ClusterV1().ManagedClusters().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	inv := utiltesting.MakeInventory(name, time.Now(), []*corev1.Node{node})
	created, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(name).Create(ctx, inv.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	created.Status = inv.Status
	if _, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(name).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return name
}

// createPlacement creates the Placement of an app: one cluster of the project's set.
func (e *env) createPlacement(app string) {
	e.t.Helper()
	p := utiltesting.MakePlacement(app, e.project).NumberOfClusters(1).ClusterSets(e.project).Obj()
	if _, err := e.clusters.ClusterV1beta1().Placements(e.project).Create(e.t.Context(), p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// client is an HTTPS client of the API presenting user's client certificate, or none for
// user "".
type client struct {
	t    *testing.T
	http *http.Client
	base string
}

func (e *env) client(user string) *client {
	e.t.Helper()
	tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the hub's serving certificate is self-signed here
	if user != "" {
		cfg, err := fleet.Hub.UserConfig(user)
		if err != nil {
			e.t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
		if err != nil {
			e.t.Fatal(err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	return &client{t: e.t, http: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: time.Minute}, base: e.base}
}

// do sends a request to base+path with body as contentType, and returns the status and body.
func (c *client) do(ctx context.Context, method, path, contentType string, body []byte) (int, string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// must sends a request and fails the test unless it gets want; it decodes a JSON answer into
// out when out is not nil.
func (c *client) must(want int, method, path, contentType, body string, out any) string {
	c.t.Helper()
	code, got := c.do(c.t.Context(), method, path, contentType, []byte(body))
	if code != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, got)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(got), out); err != nil {
			c.t.Fatalf("%s %s: decoding %q: %v", method, path, got, err)
		}
	}
	return got
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// clientFor is an HTTPS client of the API presenting cfg's client certificate.
func (e *env) clientFor(cfg *rest.Config) *client {
	e.t.Helper()
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		e.t.Fatal(err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true} //nolint:gosec // self-signed here
	return &client{t: e.t, http: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: time.Minute}, base: e.base}
}
