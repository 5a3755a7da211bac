package clientopts

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// DefaultExecPluginTimeout is how long a kubeconfig's exec credential plugin may take to give
// credentials when --request-timeout does not say: long enough for a plugin that asks the user
// something, short enough that a plugin that never answers does not hang the command.
const DefaultExecPluginTimeout = time.Minute

// execAnswers runs the exec credential plugin of cfg once, as client-go runs it before a
// request, and returns an error naming the plugin when it gives no credentials within timeout,
// or fails. client-go runs the plugin without a deadline and keeps the credentials it gives in
// a cache shared by every client of the same configuration, so the commands' clients then use
// them without running it again. Nothing is sent to the cluster: the request stops inside the
// plugin's round tripper, once the plugin has answered. A plugin that never answers is left
// running (client-go gives no way to stop it); the command ends with the error.
func execAnswers(cfg *rest.Config, timeout time.Duration) error {
	if cfg.ExecProvider == nil {
		return nil
	}
	probe := rest.CopyConfig(cfg)
	probe.Wrap(func(http.RoundTripper) http.RoundTripper { return answered{} })
	rt, err := rest.TransportFor(probe)
	if err != nil {
		return fmt.Errorf("the kubeconfig's exec credential plugin %s: %w", pluginName(cfg), err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/version", nil)
	if err != nil {
		return fmt.Errorf("the kubeconfig's server %q: %w", cfg.Host, err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("the kubeconfig's exec credential plugin %s gave no credentials: %w", pluginName(cfg), err)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("the kubeconfig's exec credential plugin %s did not answer within %s: it gave no credentials (run it by hand to see why; --request-timeout sets how long to wait)",
			pluginName(cfg), timeout)
	}
}

// pluginName is the plugin's command with its arguments, quoted, for messages.
func pluginName(cfg *rest.Config) string {
	return fmt.Sprintf("%q", strings.Join(append([]string{cfg.ExecProvider.Command}, cfg.ExecProvider.Args...), " "))
}

// answered stands for the cluster in execAnswers' request: reaching it means the plugin has
// given credentials.
type answered struct{}

func (answered) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}")), Request: req, Header: http.Header{}}, nil
}
