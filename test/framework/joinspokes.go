package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
)

// JoinOptions tune JoinSpokes.
type JoinOptions struct {
	// Hub tunes the hub side (InitHub).
	Hub HubOptions
	// Agent tunes every spoke's registration agent.
	Agent RegistrationAgentOptions
	// LeaseDurationSeconds is set on each ManagedCluster once accepted: its
	// agent renews its lease that often, and the hub turns the cluster's
	// Available condition to Unknown after five of them without a renewal.
	// Zero means 5 (OCM's default is 60).
	LeaseDurationSeconds int32
	// WorkAgents also runs OCM's work agent on each spoke, with the hub
	// identity its registration agent obtained (StartOCMWorkAgentAs).
	WorkAgents bool
	// CertificateCheckPeriod, when set, makes the registration agents check
	// that often whether their client certificates — the cluster's own and
	// its add-ons' — are due for renewal. The agent checks every 5 minutes
	// (a fixed interval) and whenever such a Secret changes, so certificates
	// the hub signs for less than that (HubOptions.SigningDuration) would
	// expire before it renews them: the framework touches the Secrets (an
	// annotation, CertificateCheckAnnotation) every CertificateCheckPeriod.
	CertificateCheckPeriod time.Duration
}

// CertificateCheckAnnotation is the annotation JoinOptions.CertificateCheckPeriod
// sets on the registration agents' Secrets, to the time it was set.
const CertificateCheckAnnotation = "fleetfit.io/e2e-certificate-check"

// Join is what JoinSpokes started. Everything stops with the fleet's
// control planes, or with Stop.
type Join struct {
	Hub *HubRegistration
	// Agents are the spokes' registration agents, Agents[i] for Spokes[i].
	Agents []*RegistrationAgent
	// WorkAgents are the spokes' work agents when JoinOptions.WorkAgents is
	// set, WorkAgents[i] for Spokes[i].
	WorkAgents []*Component
	// Took is how long the join took, from the first process started to the
	// last cluster Available (work agents not included).
	Took time.Duration
	// checks are the loops JoinOptions.CertificateCheckPeriod started, one per spoke.
	checks []*certificateChecks
}

// JoinSpokes makes every spoke a managed cluster of the hub the way OCM's
// users do it, with OCM's own processes: InitHub (`clusteradm init`), then
// for each spoke concurrently a registration agent with a bootstrap
// kubeconfig (`clusteradm join`), Accept (`clusteradm accept`), the cluster
// put in cluster set "default" (as OCM's admission webhook, which does not
// run here, would) with a short lease, and — with opts.WorkAgents — a work
// agent. It returns when every ManagedCluster (cluster1..N, see SpokeName) is
// Joined and Available, its capacity and allocatable summed by its agent
// from the spoke's Nodes; on error, whatever was started is stopped again.
// Tests that need ManagedClusters without OCM's agents keep using
// RegisterSpokes.
func (f *Fleet) JoinSpokes(ctx context.Context, opts JoinOptions) (*Join, error) {
	start := time.Now()
	hub, err := InitHub(ctx, f.Hub, opts.Hub)
	if err != nil {
		return nil, err
	}
	j := &Join{
		Hub:        hub,
		Agents:     make([]*RegistrationAgent, len(f.Spokes)),
		WorkAgents: make([]*Component, len(f.Spokes)),
	}
	bootstrap, err := BootstrapKubeconfig(ctx, f.Hub)
	if err != nil {
		j.Stop()
		return nil, err
	}
	lease := opts.LeaseDurationSeconds
	if lease <= 0 {
		lease = defaultLeaseDurationSeconds
	}
	errs := make([]error, len(f.Spokes))
	var wg sync.WaitGroup
	for i, spoke := range f.Spokes {
		wg.Go(func() {
			name := SpokeName(i)
			j.Agents[i], errs[i] = f.joinSpoke(ctx, spoke, name, bootstrap, opts.Agent, lease)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("joining %s: %w", name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		err = fmt.Errorf("%w\n%s", err, j.LogTails(20))
		j.Stop()
		return nil, err
	}
	j.Took = time.Since(start)
	if opts.CertificateCheckPeriod > 0 {
		for _, spoke := range f.Spokes {
			j.checks = append(j.checks, startCertificateChecks(ctx, spoke, opts.CertificateCheckPeriod))
		}
	}
	if opts.WorkAgents {
		for i, spoke := range f.Spokes {
			wg.Go(func() {
				j.WorkAgents[i], errs[i] = StartOCMWorkAgentAs(ctx, f.Hub, spoke, SpokeName(i), j.Agents[i].HubKubeconfig())
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			j.Stop()
			return nil, err
		}
	}
	return j, nil
}

// joinSpoke starts the spoke's registration agent, accepts the cluster,
// sets its cluster set and lease, and waits until it is Joined and Available.
func (f *Fleet) joinSpoke(ctx context.Context, spoke *ControlPlane, name string, bootstrap []byte, opts RegistrationAgentOptions, leaseSeconds int32) (*RegistrationAgent, error) {
	agent, err := StartOCMRegistrationAgent(ctx, f.Hub, spoke, name, bootstrap, opts)
	if err != nil {
		return nil, err
	}
	if err := Accept(ctx, f.Hub, name); err != nil {
		return agent, err
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"default"}},"spec":{"leaseDurationSeconds":%d}}`, defaultClusterSetLabel, leaseSeconds)
	clusters := clusterclient.NewForConfigOrDie(f.Hub.AdminConfig()).ClusterV1().ManagedClusters()
	if _, err := clusters.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return agent, fmt.Errorf("setting the cluster set and lease of %s: %w", name, err)
	}
	return agent, WaitClusterJoined(ctx, f.Hub, name)
}

// certificateChecks is a loop of touchCertificateSecrets, stopped with its
// spoke or by Join.Stop.
type certificateChecks struct {
	spoke  *ControlPlane
	cancel context.CancelFunc
	done   chan struct{}
}

// startCertificateChecks runs touchCertificateSecrets on spoke until the
// spoke stops or the returned loop is stopped; it outlives ctx's
// cancellation, as the processes of the join do.
func startCertificateChecks(ctx context.Context, spoke *ControlPlane, period time.Duration) *certificateChecks {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &certificateChecks{spoke: spoke, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		touchCertificateSecrets(ctx, spoke, period)
	}()
	if err := spoke.attach(l); err != nil {
		l.Stop() // the spoke is stopping already
	}
	return l
}

// Stop ends the loop and waits for it.
func (l *certificateChecks) Stop() {
	l.cancel()
	<-l.done
	l.spoke.detach(l)
}

// touchCertificateSecrets annotates, every period until ctx ends, the
// Secrets in which spoke's registration agent keeps client certificates: the
// cluster's (HubKubeconfigSecret) and each add-on's (<add-on>-hub-kubeconfig,
// in the add-on's namespace). A failed round is tried again the next period.
func touchCertificateSecrets(ctx context.Context, spoke *ControlPlane, period time.Duration) {
	client := spoke.AdminClient().CoreV1()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(period):
		}
		secrets, err := client.Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, CertificateCheckAnnotation, time.Now().Format(time.RFC3339Nano))
		for _, s := range secrets.Items {
			ours := s.Namespace == AgentNamespace && s.Name == HubKubeconfigSecret
			addon := strings.HasSuffix(s.Name, "-hub-kubeconfig") && s.Name != BootstrapKubeconfigSecret
			if (ours || addon) && len(s.Data["tls.crt"]) > 0 {
				_, _ = client.Secrets(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
		}
	}
}

// Stop stops every process of the join.
func (j *Join) Stop() {
	for _, l := range j.checks {
		l.Stop()
	}
	for _, c := range j.components() {
		c.Stop()
	}
}

// LogTails returns the end of each process's log, to explain a failure.
func (j *Join) LogTails(lines int) string {
	return logTails(lines, j.components()...)
}

func (j *Join) components() []*Component {
	var cs []*Component
	if j.Hub != nil {
		cs = append(cs, j.Hub.components()...)
	}
	for _, a := range j.Agents {
		if a != nil {
			cs = append(cs, a.Component)
		}
	}
	for _, w := range j.WorkAgents {
		if w != nil {
			cs = append(cs, w)
		}
	}
	return cs
}
