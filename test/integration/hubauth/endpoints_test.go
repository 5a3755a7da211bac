package hubauth

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"

	deployhub "github.com/fleetfit/fleetfit/deploy/hub"
	"github.com/fleetfit/fleetfit/pkg/allocationcandidates"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// The callers: one with every right the endpoints need, one with none.
const (
	allowed  = "hubauth-allowed"
	stranger = "hubauth-stranger"
)

// caller is how a request presents itself.
type caller int

const (
	noCredentials caller = iota
	// forgedToken presents a bearer token the hub API server does not know.
	forgedToken
	asStranger
	asAllowed
)

func (c caller) String() string {
	return [...]string{"no credentials", "forged token", stranger, allowed}[c]
}

// TestEveryEndpoint sends each endpoint of the hub a request as each caller.
func TestEveryEndpoint(t *testing.T) {
	ctx := t.Context()
	admin := fleet.Hub.AdminClient()
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hubauth-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	clusters := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
	p := utiltesting.MakePlacement("p", ns.Name).NumberOfClusters(1).Obj()
	if _, err := clusters.ClusterV1beta1().Placements(ns.Name).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantAllowed(t, ns.Name)
	base := runHub(t)

	dryRun := utiltesting.MakePlacement("what-if", ns.Name).NumberOfClusters(1).Obj()
	dryRun.APIVersion, dryRun.Kind = clusterv1beta1.SchemeGroupVersion.String(), "Placement"
	dryRunBody, err := yaml.Marshal(dryRun)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		method, path string
		body         []byte
		// needs is what the 403 names; "" for an endpoint that answers anyone.
		needs string
		// served is in the answer to the allowed caller.
		served string
	}{
		"explain": {method: http.MethodGet, path: placement.DebugPath + ns.Name + "/p",
			needs:  fmt.Sprintf(`get placements.%s "p" in the namespace %q`, clusterv1beta1.GroupName, ns.Name),
			served: `"placement":"` + ns.Name + `/p"`},
		"dry run": {method: http.MethodPost, path: placement.DebugPath, body: dryRunBody,
			needs:  fmt.Sprintf(`create placements.%s in the namespace %q`, clusterv1beta1.GroupName, ns.Name),
			served: `"placement":"` + ns.Name + `/what-if"`},
		"EMCO's intents": {method: http.MethodGet, path: "/v2/projects/" + ns.Name + "/composite-apps/capp/v1/deployment-intent-groups/dig/hpa-intents",
			needs:  fmt.Sprintf(`list hpaintents.%s in the namespace %q`, v1alpha1.SchemeGroupVersion.Group, ns.Name),
			served: "[]"},
		"allocation candidates": {method: http.MethodGet, path: allocationcandidates.Path + "?resources=cpu:1",
			needs:  "list managedclusters." + clusterv1.GroupName,
			served: `"allocation_requests":[]`},
		"metrics": {method: http.MethodGet, path: "/metrics",
			needs: `get path "/metrics"`, served: "fleetfit_"},
		"profiles": {method: http.MethodGet, path: "/debug/pprof/",
			needs: `get path "/debug/pprof/"`, served: "goroutine"},
		"health": {method: http.MethodGet, path: "/healthz", served: "ok"},
	}
	for name, tc := range cases {
		for _, who := range []caller{noCredentials, forgedToken, asStranger, asAllowed} {
			t.Run(name+"/"+who.String(), func(t *testing.T) {
				var code int
				var body string
				// The hub's caches may not hold the placement yet: an allowed explain waits
				// for it.
				framework.Eventually(t, func(ctx context.Context) error {
					code, body = send(ctx, t, who, tc.method, base+tc.path, tc.body)
					if who == asAllowed && code != http.StatusOK {
						return fmt.Errorf("status %d: %.300s", code, body)
					}
					return nil
				})
				switch {
				case tc.needs == "" || who == asAllowed:
					if code != http.StatusOK || !strings.Contains(body, tc.served) {
						t.Errorf("got %d %.300s, want 200 with %s", code, body, tc.served)
					}
				case who == asStranger:
					wantStatus(t, code, body, http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf("user %q cannot %s", stranger, tc.needs))
				default:
					wantStatus(t, code, body, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "unauthenticated")
				}
			})
		}
	}
}

// wantStatus fails t unless the answer is a Status of code and reason whose message starts
// with message.
func wantStatus(t *testing.T, code int, body string, wantCode int32, reason metav1.StatusReason, message string) {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.Kind != "Status" {
		t.Fatalf("got %d %.300s, want a Status (%v)", code, body, err)
	}
	if code != int(wantCode) || s.Code != wantCode || s.Reason != reason || !strings.HasPrefix(s.Message, message) {
		t.Errorf("got %d %+v, want %d %s with a message starting %q", code, s, wantCode, reason, message)
	}
}

// grantAllowed gives the allowed caller what every endpoint needs: placements and hpaintents
// in ns, the list of managed clusters, and the metrics and profile paths.
func grantAllowed(t *testing.T, ns string) {
	ctx := t.Context()
	rbac := fleet.Hub.AdminClient().RbacV1()
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: allowed}}
	if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: allowed},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{clusterv1beta1.GroupName}, Resources: []string{"placements"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"hpaintents"}, Verbs: []string{"list"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: allowed},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: allowed},
		Subjects:   subjects,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A cluster role of the test's own name: tests of other runs (-count) keep theirs.
	cr, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: allowed + "-"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"}, Verbs: []string{"list"}},
			{NonResourceURLs: []string{"/metrics", "/debug/pprof/*"}, Verbs: []string{"get"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{}) })
	crb, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{}) })
}

// runHub runs fleetfit-hub as its ServiceAccount with deploy/hub's RBAC until the test ends,
// and returns the base URL of its HTTPS endpoint once it answers the allowed caller.
func runHub(t *testing.T) string {
	ctx := t.Context()
	if err := framework.Apply(ctx, fleet.Hub.AdminConfig(), deployhub.RBAC); err != nil {
		t.Fatal(err)
	}
	hubUser, err := fleet.Hub.UserConfig(deployhub.ServiceAccountUser, "system:serviceaccounts", "system:serviceaccounts:"+deployhub.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	// The hub stops when the test ends.
	hub, _ := framework.RunHubServing(t, hubUser, "--workers=2")
	base := "https://" + hub.Addr()
	// The endpoint is up once the door knows client certificates: until the hub has read the
	// client CA from the hub API server, every caller is taken for anonymous.
	framework.Eventually(t, func(ctx context.Context) error {
		if code, body := send(ctx, t, asAllowed, http.MethodGet, base+"/metrics", nil); code != http.StatusOK {
			return fmt.Errorf("status %d: %.300s", code, body)
		}
		return nil
	})
	return base
}

// send sends a request as who and returns the status and body; status 0 when there is no
// answer.
func send(ctx context.Context, t *testing.T, who caller, method, url string, body []byte) (int, string) {
	t.Helper()
	tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the hub's serving certificate is self-signed here
	if who == asStranger || who == asAllowed {
		cfg, err := fleet.Hub.UserConfig(who.String())
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
		if err != nil {
			t.Fatal(err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if who == forgedToken {
		req.Header.Set("Authorization", "Bearer forged")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/yaml")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}
