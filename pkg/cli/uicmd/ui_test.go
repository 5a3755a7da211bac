package uicmd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/ui"
)

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		address string
		port    int
		wantErr string
	}{
		"loopback":      {address: "127.0.0.1", port: 8001},
		"ipv6 loopback": {address: "::1", port: 0},
		"localhost":     {address: "localhost", port: 8001},
		"any address":   {address: "0.0.0.0", port: 8001, wantErr: "not a loopback address"},
		"another host":  {address: "10.0.0.5", port: 8001, wantErr: "not a loopback address"},
		"a name":        {address: "example.com", port: 8001, wantErr: "not a loopback address"},
		"bad port":      {address: "127.0.0.1", port: 70000, wantErr: "not a port number"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &Options{Address: tc.address, Port: tc.port, InventoryStaleAfter: time.Minute, MaxAge: time.Second}
			err := o.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestRunServesThePage: the command serves the page where it says, and a hub it cannot reach
// is an answer of the JSON endpoints, 502, not the end of the server.
func TestRunServesThePage(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: hub, context: {cluster: hub, user: u}}]
current-context: hub
`), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := clientopts.New()
	flags.SetKubeconfig(kubeconfig)
	o := &Options{Flags: flags, Address: "127.0.0.1", Port: 0, InventoryStaleAfter: time.Minute, MaxAge: time.Second}
	ctx, cancel := context.WithCancel(t.Context())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx, w); w.Close() }()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	m := regexp.MustCompile(`Serving the fleet of https://127.0.0.1:1 at (http://127\.0\.0\.1:[0-9]+/)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("the command says %q", line)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("the page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, err = http.Get(m[1] + "api/fleet")
	if err != nil {
		t.Fatal(err)
	}
	var body ui.ErrorBody
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusBadGateway || !strings.Contains(body.Message, "127.0.0.1:1") {
		t.Errorf("the fleet of an unreachable hub: %d %+v (%v)", resp.StatusCode, body, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
}
