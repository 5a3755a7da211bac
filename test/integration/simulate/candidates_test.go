package simulate

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetfit/fleetfit/pkg/allocationcandidates"
	"github.com/fleetfit/fleetfit/pkg/cli"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// testCandidates checks that the hub's GET /allocation_candidates and `fleetfit candidates`
// give the same answer on the live fleet, that bad queries are refused by both naming the
// parameter, and that the endpoint needs "list" on managedclusters.
func testCandidates(t *testing.T, kubeconfig, base string) {
	admin := httpsClient(t, "")
	// The last query asks for cluster1's A100 node, where the hub holds an in-flight
	// reservation for infer: the CLI reads it back from the intent's status, as a restarted
	// hub would, so both answers leave the reserved GPU out.
	for _, tc := range []struct{ query, want string }{
		{"resources1=cpu:1,nvidia.com/gpu:1&required1=nvidia.com/gpu.product=Tesla-T4", `"cluster2/`},
		{"resources=VCPU:4,MEMORY_MB:1024&required=!nvidia.com/gpu.product=A100", `"cluster2/`},
		{"resources1=nvidia.com/gpu:1&required1=in:nvidia.com/gpu.product=Tesla-T4,nvidia.com/gpu.product=H100" +
			"&resources2=cpu:2&required2=nvidia.com/gpu.product=Tesla-T4&group_policy=none&limit=5", `"cluster2/`},
		{"resources1=nvidia.com/gpu:1&required1=nvidia.com/gpu.product=A100", `"cluster1/`},
	} {
		query := tc.query
		status, body := getURL(t, admin, base+allocationcandidates.Path+"?"+query)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", query, status, body)
		}
		var fromHub, fromCLI any
		if err := json.Unmarshal([]byte(body), &fromHub); err != nil {
			t.Fatalf("decoding the hub's answer %q: %v", body, err)
		}
		out := fleetfit(t, kubeconfig, "candidates", query, "-o", "json")
		if err := json.Unmarshal([]byte(out), &fromCLI); err != nil {
			t.Fatalf("decoding the CLI's answer %q: %v", out, err)
		}
		if diff := cmp.Diff(fromHub, fromCLI); diff != "" {
			t.Errorf("%s: the hub and the CLI differ (-hub,+cli):\n%s", query, diff)
		}
		if !strings.Contains(body, tc.want) {
			t.Errorf("%s: no candidate with %s: %s", query, tc.want, body)
		}
	}
	out := fleetfit(t, kubeconfig, "candidates", "resources1=cpu:1,nvidia.com/gpu:1&required1=nvidia.com/gpu.product=Tesla-T4")
	if rows := ut.TableRows(out); len(rows) != 2 || rows[1][0] != "cluster2" || !strings.Contains(out, "cpu 1, nvidia.com/gpu 1") {
		t.Errorf("the table is not one row for cluster2:\n%s", out)
	}

	bad := "resources1=cpu&resources2=cpu:1"
	status, body := getURL(t, admin, base+allocationcandidates.Path+"?"+bad)
	var e allocationcandidates.ErrorResponse
	if err := json.Unmarshal([]byte(body), &e); err != nil || status != http.StatusBadRequest || len(e.Errors) != 1 ||
		!strings.HasPrefix(e.Errors[0].Detail, "resources1: cpu has no amount") {
		t.Errorf("GET %s = %d %s, want 400 naming resources1", bad, status, body)
	}
	var buf bytes.Buffer
	root := cli.NewCommand()
	root.SetOut(&buf)
	root.SetErr(&buf)
	root.SetArgs([]string{"candidates", bad, "--kubeconfig", kubeconfig})
	if err := root.ExecuteContext(t.Context()); err == nil || !strings.HasPrefix(err.Error(), "resources1: cpu has no amount") {
		t.Errorf("fleetfit candidates %s = %v, want an error naming resources1", bad, err)
	}

	stranger := httpsClient(t, "mallory")
	if status, body := getURL(t, stranger, base+allocationcandidates.Path+"?resources=cpu:1"); status != http.StatusForbidden ||
		!strings.Contains(body, "cannot list managedclusters") {
		t.Errorf("a user without list on managedclusters got %d %s, want 403", status, body)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpsClient returns a client that authenticates to the hub's endpoint with a client
// certificate of user, in groups; "" is the hub's admin.
func httpsClient(t *testing.T, user string, groups ...string) *http.Client {
	cfg := fleet.Hub.AdminConfig()
	if user != "" {
		var err error
		if cfg, err = fleet.Hub.UserConfig(user, groups...); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	// The hub's serving certificate is self-signed in this test.
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true, //nolint:gosec
	}}}
}

// getURL gets u once the endpoint answers and authenticates (it starts with the hub).
func getURL(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	if _, err := url.Parse(u); err != nil {
		t.Fatal(err)
	}
	var status int
	var body string
	framework.Eventually(t, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", u, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		status, body = resp.StatusCode, string(b)
		// Until the hub has read the API server's client CA, certificates are not checked and
		// every caller is anonymous.
		if strings.Contains(body, "system:anonymous") {
			return fmt.Errorf("GET %s: the hub does not know the client CA yet: %s", u, body)
		}
		return nil
	})
	return status, body
}
