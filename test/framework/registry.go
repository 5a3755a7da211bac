package framework

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// running tracks the control planes of this process so that an interrupt
// can stop them all.
var running = struct {
	sync.Mutex
	set map[*ControlPlane]struct{}
}{set: map[*ControlPlane]struct{}{}}

func register(cp *ControlPlane) {
	running.Lock()
	defer running.Unlock()
	running.set[cp] = struct{}{}
}

func unregister(cp *ControlPlane) {
	running.Lock()
	defer running.Unlock()
	delete(running.set, cp)
}

// StopAll stops every control plane this process started.
func StopAll() {
	running.Lock()
	all := make([]*ControlPlane, 0, len(running.set))
	for cp := range running.set {
		all = append(all, cp)
	}
	running.Unlock()
	var wg sync.WaitGroup
	for _, cp := range all {
		wg.Go(cp.Stop)
	}
	wg.Wait()
}

// StopOnSignal stops every control plane and exits when the process receives
// SIGINT or SIGTERM, so that an interrupted run leaves nothing behind.
func StopOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		fmt.Fprintf(os.Stderr, "fleetfit test framework: %v received, stopping control planes\n", sig)
		StopAll()
		os.Exit(1)
	}()
}

// Main runs a test package's tests with interrupt handling, and stops any
// control plane a test left running. Call it from TestMain.
func Main(m *testing.M) {
	StopOnSignal()
	code := m.Run()
	StopAll()
	os.Exit(code)
}

// MainWithFleet starts a fleet of a hub and n spokes, points *fleet at it,
// runs the package's tests and stops the fleet. Call it from TestMain when
// the tests of a package share one fleet.
func MainWithFleet(m *testing.M, spokes int, opts Options, fleet **Fleet) {
	StopOnSignal()
	f, err := StartFleet(context.Background(), spokes, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the test fleet: %v\n", err)
		os.Exit(1)
	}
	*fleet = f
	code := m.Run()
	f.Stop()
	StopAll()
	os.Exit(code)
}
