package agent

import (
	"strings"
	"testing"
	"time"
)

func TestValidateMinInterval(t *testing.T) {
	cases := map[string]struct {
		interval time.Duration
		wantErr  string
	}{
		"default":       {interval: 5 * time.Second},
		"five minutes":  {interval: 5 * time.Minute},
		"zero":          {interval: 0, wantErr: "--min-interval must be positive"},
		"past the half": {interval: 6 * time.Minute, wantErr: "--min-interval 6m0s is too long: at most 5m0s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &Options{ClusterName: "c1", HubKubeconfig: "hub.kubeconfig", MinInterval: tc.interval, HubCertificateCheckInterval: time.Minute}
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
