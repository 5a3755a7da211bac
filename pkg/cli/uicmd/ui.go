// Package uicmd holds `fleetfit ui`: the fleet's web page (package ui), served on this machine
// with the user's own hub identity, as kubectl proxy serves the API.
package uicmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/simulate"
	"github.com/fleetfit/fleetfit/pkg/ui"
)

// DefaultPort is the port the page is served on by default, kubectl proxy's (run one of them
// with --port when both are wanted).
const DefaultPort = 8001

// Options are the options of `fleetfit ui`.
type Options struct {
	Flags               *clientopts.Flags
	Address             string
	Port                int
	InventoryStaleAfter time.Duration
	MaxAge              time.Duration
}

// NewCommand returns `fleetfit ui`.
func NewCommand(flags *clientopts.Flags) *cobra.Command {
	o := &Options{Flags: flags, Address: "127.0.0.1", Port: DefaultPort, MaxAge: ui.DefaultMaxAge}
	c := &cobra.Command{
		Use:   "ui",
		Short: "Serve a web page of the live fleet on this machine, read with your hub identity",
		Long: `Serve, on this machine only, a web page of the live fleet: per cluster what is free and
allocatable (cpu, memory, GPUs by model), the largest free block on one node and a picture of
every node's room, machine types, agent health and inventory age; a filter "where does 4× A100
+ 64Gi fit on one node now"; the Placements with their decisions, scores, HPAIntents and
delivery; why a placement did not choose a cluster (explain); and what the hub would decide
for a Placement and HPAIntents you paste (simulate --from-hub). The page follows the fleet
every few seconds and shows the time of its data.

Like kubectl proxy, the command reads the hub with your kubeconfig's identity (--kubeconfig,
--context, ...), so the hub's RBAC decides what the page shows; a refusal of the hub is shown as
one. It listens on a loopback address only and answers only requests addressed to one, since
whoever reaches the page acts with your identity. The page has every asset built in: nothing is
loaded from the network.

The hub is read at most once every --max-age for each view, whatever the number of pages open.`,
		Example: `  fleetfit ui --kubeconfig hub.kubeconfig            # then open http://127.0.0.1:8001/
  fleetfit ui --kubeconfig hub.kubeconfig --port 9000`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context(), c.OutOrStdout())
		},
	}
	c.Flags().StringVar(&o.Address, "address", o.Address, "the loopback address to listen on (127.0.0.1, ::1 or localhost)")
	c.Flags().IntVar(&o.Port, "port", o.Port, "the port to listen on; 0 picks a free one")
	c.Flags().DurationVar(&o.InventoryStaleAfter, "inventory-stale-after", fleetfitv1alpha1.DefaultInventoryStaleAfter,
		"the --inventory-stale-after fleetfit-hub runs with: an inventory older than this is marked stale")
	c.Flags().DurationVar(&o.MaxAge, "max-age", o.MaxAge, "how long one read of the hub serves the page")
	return c
}

// Validate checks the flags: the page acts with the user's identity, so it is never offered
// beyond this machine.
func (o *Options) Validate() error {
	if o.Address != "localhost" {
		ip := net.ParseIP(o.Address)
		if ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("--address %q is not a loopback address: the page reads the hub with your identity, so it is served to this machine only (127.0.0.1, ::1 or localhost)", o.Address)
		}
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--port %d is not a port number", o.Port)
	}
	if o.InventoryStaleAfter <= 0 {
		return fmt.Errorf("--inventory-stale-after must be positive, not %s", o.InventoryStaleAfter)
	}
	if o.MaxAge <= 0 {
		return fmt.Errorf("--max-age must be positive, not %s", o.MaxAge)
	}
	return nil
}

// Run serves the page until ctx ends.
func (o *Options) Run(ctx context.Context, out io.Writer) error {
	logger := klog.FromContext(ctx)
	cfg, err := o.Flags.RESTConfig()
	if err != nil {
		return err
	}
	srv := ui.New(ui.Options{
		Load: func(ctx context.Context, kinds ...string) (*simulate.Fleet, error) {
			return simulate.FromHub(ctx, cfg, kinds...)
		},
		Hub:                 cfg.Host,
		InventoryStaleAfter: o.InventoryStaleAfter,
		MaxAge:              o.MaxAge,
	})
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("listening for the page: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "Serving the fleet of %s at http://%s/ (Ctrl-C to stop)\n", cfg.Host, l.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	logger.V(logs.Changes).Info("Stopping the page's server")
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
