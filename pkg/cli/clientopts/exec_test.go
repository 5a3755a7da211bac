package clientopts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubeconfigWithPlugin writes a kubeconfig whose user gets credentials from /bin/sh running
// script.
func kubeconfigWithPlugin(t *testing.T, script string) string {
	t.Helper()
	text := `apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", ` + "'" + script + "'" + `]
      interactiveMode: Never
contexts:
- name: hub
  context: {cluster: hub, user: plugin}
current-context: hub
`
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExecPluginBounded: a kubeconfig's exec credential plugin that never answers ends the
// command with an error naming it after --request-timeout, one that fails is named with its
// failure, and one that answers gives a configuration.
func TestExecPluginBounded(t *testing.T) {
	cases := map[string]struct {
		script  string
		wantErr string
	}{
		"a plugin that never answers": {
			script:  "exec sleep 4",
			wantErr: `the kubeconfig's exec credential plugin "/bin/sh -c exec sleep 4" did not answer within 1s: it gave no credentials`,
		},
		"a plugin that fails": {
			script:  "exit 3",
			wantErr: `the kubeconfig's exec credential plugin "/bin/sh -c exit 3" gave no credentials: `,
		},
		"a plugin that answers": {
			script: `echo "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := New()
			f.SetKubeconfig(kubeconfigWithPlugin(t, tc.script))
			*f.config.Timeout = "1s"
			_, err := f.RESTConfig()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("RESTConfig: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("RESTConfig error %v, want one starting with %q", err, tc.wantErr)
			}
		})
	}
}
