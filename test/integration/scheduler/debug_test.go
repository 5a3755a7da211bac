package scheduler

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"

	deployhub "github.com/fleetfit/fleetfit/deploy/hub"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestHubEndpoint runs fleetfit-hub as its ServiceAccount with deploy/hub's RBAC, leader
// election on and the HTTPS endpoint served, and checks explain, dry-run, metrics, Go's
// profiles and that every request is authorised with the caller's own permissions.
func TestHubEndpoint(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, "endpoint")
	if err := framework.Apply(ctx, fleet.Hub.AdminConfig(), deployhub.RBAC); err != nil {
		t.Fatal(err)
	}
	e.createCluster(e.cluster("gpu").Label("accelerator", "a100"))
	e.createCluster(e.cluster("cpu").Label("accelerator", "none"))
	e.createPlacement(utiltesting.MakePlacement("gpu", e.ns).PredicateLabels(map[string]string{"accelerator": "a100"}))

	hubUser, err := fleet.Hub.UserConfig(deployhub.ServiceAccountUser, "system:serviceaccounts", "system:serviceaccounts:"+deployhub.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	framework.RunHub(t, hubUser, "--leader-elect=true", "--leader-elect-namespace", deployhub.Namespace,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port), "--cert-dir", filepath.Join(t.TempDir(), "certs"))
	e.waitDecided("gpu", e.names("gpu")...)

	// A reader may explain placements of the namespace, nothing else.
	createRole(t, e.ns, "reader", []string{"get"})
	reader := endpointClient(t, "alice")
	stranger := endpointClient(t, "mallory")
	base := fmt.Sprintf("https://127.0.0.1:%d", port)

	t.Run("explain", func(t *testing.T) {
		var got placement.DebugResult
		status := getJSON(t, reader, base+placement.DebugPath+e.ns+"/gpu", &got)
		if status != http.StatusOK {
			t.Fatalf("status %d: %+v", status, got)
		}
		verdicts := map[string]string{}
		for _, v := range got.Clusters {
			verdicts[v.Name] = v.RejectedBy + ":" + v.Reason
			if v.Name == e.names("gpu")[0] && (!v.Selected || v.Total == nil) {
				t.Errorf("verdict for the gpu cluster: %+v, want selected with a total", v)
			}
		}
		if r := verdicts[e.names("cpu")[0]]; !strings.HasPrefix(r, "Predicate:") || !strings.Contains(r, "accelerator=a100") {
			t.Errorf("cpu cluster verdict %q, want a Predicate rejection naming the selector", r)
		}
		if len(got.FilterResults) == 0 || got.FilterResults[0].Name != "Predicate" {
			t.Errorf("filter pipeline %+v, want OCM's pipeline starting with Predicate", got.FilterResults)
		}
		if len(got.PrioritizeResults) == 0 {
			t.Error("no prioritizer results")
		}
	})

	t.Run("explain is forbidden without get on placements", func(t *testing.T) {
		var got placement.DebugResult
		if status := getJSON(t, stranger, base+placement.DebugPath+e.ns+"/gpu", &got); status != http.StatusForbidden {
			t.Errorf("status %d (%+v), want 403", status, got)
		}
	})

	t.Run("dry run changes nothing", func(t *testing.T) {
		p := utiltesting.MakePlacement("what-if", e.ns).PredicateLabels(map[string]string{"accelerator": "none"}).Obj()
		p.APIVersion, p.Kind = clusterv1beta1.SchemeGroupVersion.String(), "Placement"
		body, _ := yaml.Marshal(p)
		if status, _ := post(t, reader, base+placement.DebugPath, body); status != http.StatusForbidden {
			t.Errorf("a reader without create may not dry-run: status %d", status)
		}
		createRole(t, e.ns, "planner", []string{"get", "create"})
		planner := endpointClient(t, "bob")
		status, raw := post(t, planner, base+placement.DebugPath, body)
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, raw)
		}
		var got placement.DebugResult
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.PlacementDecisions) != 1 || len(got.PlacementDecisions[0].Status.Decisions) != 1 ||
			got.PlacementDecisions[0].Status.Decisions[0].ClusterName != e.names("cpu")[0] {
			t.Errorf("dry-run decisions %+v, want one decision for the cpu cluster", got.PlacementDecisions)
		}
		if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, "what-if", metav1.GetOptions{}); err == nil {
			t.Error("the dry run created the placement")
		}
		if names, _, _ := e.decided(ctx, "what-if"); len(names) != 0 {
			t.Errorf("the dry run wrote decisions: %v", names)
		}
	})

	t.Run("metrics need the metrics-reader role", func(t *testing.T) {
		if status, _ := get(t, stranger, base+"/metrics"); status != http.StatusForbidden {
			t.Errorf("status %d, want 403", status)
		}
		admin := endpointClientFor(t, fleet.Hub.AdminConfig())
		status, body := get(t, admin, base+"/metrics")
		if status != http.StatusOK || !strings.Contains(body, "fleetfit_scheduler_cycle_duration_seconds") {
			t.Errorf("status %d, metrics without the cycle histogram:\n%.500s", status, body)
		}
	})

	t.Run("profiles need get on /debug/pprof/", func(t *testing.T) {
		status, body := get(t, stranger, base+"/debug/pprof/")
		if status != http.StatusForbidden {
			t.Errorf("status %d, want 403", status)
		}
		if !strings.Contains(body, `"kind":"Status"`) {
			t.Errorf("the refusal is not a Status:\n%.300s", body)
		}
		admin := endpointClientFor(t, fleet.Hub.AdminConfig())
		if status, body := get(t, admin, base+"/debug/pprof/"); status != http.StatusOK || !strings.Contains(body, "goroutine") {
			t.Errorf("status %d, no profile index:\n%.300s", status, body)
		}
		if status, body := get(t, admin, base+"/debug/pprof/heap?debug=1"); status != http.StatusOK || !strings.Contains(body, "heap profile") {
			t.Errorf("status %d, no heap profile:\n%.300s", status, body)
		}
	})

	t.Run("leader election lease", func(t *testing.T) {
		lease, err := fleet.Hub.AdminClient().CoordinationV1().Leases(deployhub.Namespace).Get(ctx, "fleetfit-hub", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			t.Errorf("lease has no holder: %+v", lease.Spec)
		}
	})
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// createRole grants verbs on the placements of ns through a role named name, bound to the
// user the tests use for it: reader is alice, planner is bob.
func createRole(t *testing.T, ns, name string, verbs []string) {
	user := map[string]string{"reader": "alice", "planner": "bob"}[name]
	rbac := fleet.Hub.AdminClient().RbacV1()
	if _, err := rbac.Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{clusterv1beta1.GroupName}, Resources: []string{"placements"}, Verbs: verbs}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// endpointClient is an HTTPS client presenting a client certificate for user, signed by the
// hub's client CA, as kubectl would.
func endpointClient(t *testing.T, user string) *http.Client {
	cfg, err := fleet.Hub.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	return endpointClientFor(t, cfg)
}

func endpointClientFor(t *testing.T, cfg *rest.Config) *http.Client {
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	// The hub's serving certificate is self-signed in this test.
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true, //nolint:gosec
	}}}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	var status int
	var body string
	framework.Eventually(t, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		status, body = resp.StatusCode, string(b)
		return nil
	})
	return status, body
}

func getJSON(t *testing.T, c *http.Client, url string, out any) int {
	status, body := get(t, c, url)
	if err := json.Unmarshal([]byte(body), out); err != nil {
		t.Fatalf("decoding %q: %v", body, err)
	}
	return status
}

func post(t *testing.T, c *http.Client, url string, body []byte) (int, []byte) {
	var status int
	var out []byte
	framework.Eventually(t, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/yaml")
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, _ = io.ReadAll(resp.Body)
		status = resp.StatusCode
		return nil
	})
	return status, out
}
