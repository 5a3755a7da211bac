package ui

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/getcmd"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/simulate"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const exampleFleet = "../../deploy/examples/fleet.yaml"

// readAt is the time the test fleets are read at.
var readAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// exampleFleetLoader reads deploy/examples/fleet.yaml once, as the hub would be read, and
// counts the reads.
func exampleFleetLoader(t testing.TB, reads *atomic.Int32) Loader {
	t.Helper()
	f, err := simulate.ReadFiles(t.Context(), []string{exampleFleet}, simulate.ReadOptions{Now: readAt})
	if err != nil {
		t.Fatal(err)
	}
	return func(context.Context, ...string) (*simulate.Fleet, error) {
		if reads != nil {
			reads.Add(1)
		}
		return f, nil
	}
}

func newTestServer(load Loader) *Server {
	return New(Options{Load: load, Hub: "https://hub.example:6443", Now: func() time.Time { return readAt }})
}

// do sends a request as the browser on this machine would.
func do(t testing.TB, h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	req.Host = "127.0.0.1:8001"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func decode[T any](t testing.TB, w *httptest.ResponseRecorder, code int) T {
	t.Helper()
	if w.Code != code {
		t.Fatalf("status %d, want %d: %s", w.Code, code, w.Body.String())
	}
	var v T
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("decoding %s: %v", w.Body.String(), err)
	}
	return v
}

// TestFleetShowsWhatGetClustersShows: every row of the fleet endpoint is the row `fleetfit get
// clusters` prints for the same fleet, with the amounts behind it, the largest free block on
// one node and the node tiles the agent's report gives.
func TestFleetShowsWhatGetClustersShows(t *testing.T) {
	h := newTestServer(exampleFleetLoader(t, nil)).Handler()
	got := decode[Fleet](t, do(t, h, "GET", "/api/fleet", ""), http.StatusOK)

	wantRows := []getcmd.ClusterRow{
		{Name: "cluster1", Available: "Unknown", Nodes: "4/4", CPU: "14/120", Memory: "96Gi/416Gi", GPUs: "A100 4/4, NVIDIA-GeForce-RTX-3090 0/4", Machines: "compute-xlarge 2/2", CanAdd: "-", Features: "AVX512F", Inventory: "0s ago", Agent: "installed"},
		{Name: "cluster2", Available: "Unknown", Nodes: "4/4", CPU: "32/112", Memory: "128Gi/384Gi", GPUs: "NVIDIA-GeForce-RTX-3090 0/4, Tesla-T4 2/2", Machines: "compute-xlarge 1/2", CanAdd: "-", Features: "AVX512F", Inventory: "0s ago", Agent: "installed"},
		{Name: "cluster3", Available: "Unknown", Nodes: "2/2", CPU: "32/32", Memory: "128Gi/128Gi", GPUs: "-", Machines: "<none>", CanAdd: "-", Features: "pci-0b40_8086.present,qat.intel.com/generic", Inventory: "0s ago", Agent: "installed"},
	}
	var rows []getcmd.ClusterRow
	for _, c := range got.Items {
		rows = append(rows, c.Row)
	}
	if diff := cmp.Diff(wantRows, rows); diff != "" {
		t.Errorf("rows (-want,+got):\n%s", diff)
	}
	if got.Clusters != 3 || got.Matching != 3 || !got.ReadAt.Equal(readAt) || got.Hub != "https://hub.example:6443" {
		t.Errorf("clusters %d, matching %d, read at %s, hub %q", got.Clusters, got.Matching, got.ReadAt, got.Hub)
	}

	c1 := got.Items[0]
	if c1.CPU == nil || c1.CPU.Free != "14" || c1.CPU.Allocatable != "120" || c1.CPU.FreeMilli != 14000 {
		t.Errorf("cluster1 cpu amounts: %+v", c1.CPU)
	}
	// The A100 node: 4 GPUs free next to 6 of its 32 cores.
	if c1.Largest == nil || c1.Largest.Text != "4× A100 + 6 cpu + 64Gi on one node" {
		t.Errorf("cluster1's largest free block: %+v", c1.Largest)
	}
	var a100 *Tile
	for i := range c1.Tiles {
		if c1.Tiles[i].GPUModel == "A100" {
			a100 = &c1.Tiles[i]
		}
	}
	if a100 == nil || a100.Count != 1 || a100.GPUs != 4 || a100.GPUsAllocatable != 4 || a100.CPU != (MilliAmounts{Free: 6000, Allocatable: 32000}) {
		t.Errorf("cluster1's A100 tile: %+v in %+v", a100, c1.Tiles)
	}
	if c3 := got.Items[2]; c3.Largest == nil || c3.Largest.GPUs != 0 || !strings.HasSuffix(c3.Largest.Text, "cpu + 64Gi on one node") {
		t.Errorf("cluster3's largest free block: %+v", c3.Largest)
	}

	wantGPUs := []GPUCount{
		{GPUModel: GPUModel{Resource: "nvidia.com/gpu", Model: "A100"}, Free: 4, Allocatable: 4, Nodes: 1},
		{GPUModel: GPUModel{Resource: "nvidia.com/gpu", Model: "NVIDIA-GeForce-RTX-3090"}, Free: 0, Allocatable: 8, Nodes: 4},
		{GPUModel: GPUModel{Resource: "nvidia.com/gpu", Model: "Tesla-T4"}, Free: 2, Allocatable: 2, Nodes: 1},
	}
	if diff := cmp.Diff(wantGPUs, got.Totals.GPUs); diff != "" {
		t.Errorf("fleet GPUs (-want,+got):\n%s", diff)
	}
	if got.Totals.CPU.Text != "78/264" || got.Totals.WithInventory != 3 {
		t.Errorf("fleet totals: %+v", got.Totals)
	}
}

// TestFitFilter: "where does it fit on one node now" is the inventory's answer, the reason
// HardwareFit gives included, and only=fits leaves out the clusters where it does not.
func TestFitFilter(t *testing.T) {
	load := exampleFleetLoader(t, nil)
	fleet, _ := load(t.Context())
	h := newTestServer(load).Handler()
	cases := map[string]struct {
		query     string
		wantText  string
		wantFits  map[string]bool
		onlyNames []string
	}{
		"four A100 on one node": {
			query:    "gpus=4&model=A100&memory=64Gi",
			wantText: "4× A100 + 64Gi on one node",
			wantFits: map[string]bool{"cluster1": true, "cluster2": false, "cluster3": false},
		},
		"an A100 with 8 cores: room on cluster1, not on one node": {
			query:    "gpus=1&model=A100&cpu=8",
			wantText: "1× A100 + 8 cpu on one node",
			wantFits: map[string]bool{"cluster1": false, "cluster2": false, "cluster3": false},
		},
		"cpu only, where it fits": {
			query:     "cpu=12&only=fits",
			wantText:  "12 cpu on one node",
			wantFits:  map[string]bool{"cluster2": true, "cluster3": true},
			onlyNames: []string{"cluster2", "cluster3"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decode[Fleet](t, do(t, h, "GET", "/api/fleet?"+tc.query, ""), http.StatusOK)
			if got.Fit == nil || got.Fit.Request != tc.wantText {
				t.Fatalf("fit %+v, want request %q", got.Fit, tc.wantText)
			}
			fits := map[string]bool{}
			count := 0
			for _, c := range got.Items {
				fits[c.Name] = c.Fit.Fits
				if c.Fit.Fits {
					count++
				}
				// The reason is the inventory's own, for the request the page describes.
				fr, err := parseFit(mustQuery(t, tc.query))
				if err != nil {
					t.Fatal(err)
				}
				inv := getcmd.Inventories(fleet)[c.Name]
				wantFits, wantReason := inventory.NewView(&inv.Status).FitsOnOneNode(fr.request)
				if c.Fit.Fits != wantFits || (!wantFits && c.Fit.Reason != wantReason) {
					t.Errorf("%s: fit %+v, the inventory says %v %q", c.Name, c.Fit, wantFits, wantReason)
				}
			}
			if diff := cmp.Diff(tc.wantFits, fits); diff != "" {
				t.Errorf("fits (-want,+got):\n%s", diff)
			}
			if got.Fit.Fits != count {
				t.Errorf("fits on %d clusters, %d items fit", got.Fit.Fits, count)
			}
		})
	}
	// The reason a cluster fails names what is missing on its best node.
	got := decode[Fleet](t, do(t, h, "GET", "/api/fleet?gpus=1&model=A100&cpu=8&name=cluster1", ""), http.StatusOK)
	if len(got.Items) != 1 || !strings.Contains(got.Items[0].Fit.Reason, "has 8 cpu free; the best has 6") {
		t.Errorf("cluster1's reason: %+v", got.Items)
	}
}

func TestFitFilterRefusesNonsense(t *testing.T) {
	h := newTestServer(exampleFleetLoader(t, nil)).Handler()
	for _, q := range []string{"gpus=-1", "gpus=two", "cpu=lots", "memory=-1Gi", "gpu=example.com/tpu&gpus=1", "limit=0", "offset=-3"} {
		if w := do(t, h, "GET", "/api/fleet?"+q, ""); w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", q, w.Code, w.Body.String())
		}
	}
}

// TestFleetPages: a page is offset and limit over the clusters that match the name filter, in
// name order, and limit is capped.
func TestFleetPages(t *testing.T) {
	h := newTestServer(exampleFleetLoader(t, nil)).Handler()
	cases := map[string]struct {
		query     string
		want      []string
		matching  int
		wantLimit int
	}{
		"second":       {query: "offset=1&limit=1", want: []string{"cluster2"}, matching: 3, wantLimit: 1},
		"past the end": {query: "offset=5", want: []string{}, matching: 3, wantLimit: DefaultLimit},
		"by name":      {query: "name=ter3", want: []string{"cluster3"}, matching: 1, wantLimit: DefaultLimit},
		"capped":       {query: "limit=100000", want: []string{"cluster1", "cluster2", "cluster3"}, matching: 3, wantLimit: MaxLimit},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decode[Fleet](t, do(t, h, "GET", "/api/fleet?"+tc.query, ""), http.StatusOK)
			names := []string{}
			for _, c := range got.Items {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff(tc.want, names); diff != "" || got.Matching != tc.matching || got.Limit != tc.wantLimit {
				t.Errorf("names (-want,+got):\n%s\nmatching %d, limit %d", diff, got.Matching, got.Limit)
			}
		})
	}
}

// TestRefusalsArePassedOn: what the hub refuses, every endpoint refuses with the hub's code,
// reason and message, and no data; a hub that cannot be reached is 502.
func TestRefusalsArePassedOn(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "cluster.open-cluster-management.io", Resource: "managedclusters"}, "", errors.New(`User "alice" cannot list resource "managedclusters"`))
	cases := map[string]struct {
		err        error
		wantCode   int
		wantReason string
	}{
		"forbidden":    {err: forbidden, wantCode: http.StatusForbidden, wantReason: "Forbidden"},
		"unauthorized": {err: apierrors.NewUnauthorized("Unauthorized"), wantCode: http.StatusUnauthorized, wantReason: "Unauthorized"},
		"unreachable":  {err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), wantCode: http.StatusBadGateway, wantReason: "HubUnavailable"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newTestServer(func(context.Context, ...string) (*simulate.Fleet, error) {
				return nil, fmtWrap(tc.err)
			}).Handler()
			for _, req := range []struct{ method, path, body string }{
				{"GET", "/api/fleet", ""},
				{"GET", "/api/placements", ""},
				{"GET", "/api/explain/demo/fwall", ""},
				{"POST", "/api/whatif", whatIfPlacement},
			} {
				got := decode[ErrorBody](t, do(t, h, req.method, req.path, req.body), tc.wantCode)
				if got.Code != tc.wantCode || got.Reason != tc.wantReason || !strings.Contains(got.Message, tc.err.Error()) {
					t.Errorf("%s %s: %+v, want %d %s with %q", req.method, req.path, got, tc.wantCode, tc.wantReason, tc.err.Error())
				}
			}
		})
	}
}

// fmtWrap wraps err as simulate.FromHub does.
func fmtWrap(err error) error {
	return errors.Join(errors.New("listing ManagedClusters on the hub"), err)
}

// TestOnlyForThisMachine: a request addressed to another host (DNS rebinding) or a POST from
// another origin is refused; the page itself is served with its assets.
func TestOnlyForThisMachine(t *testing.T) {
	h := newTestServer(exampleFleetLoader(t, nil)).Handler()
	req := httptest.NewRequest("GET", "/api/fleet", nil)
	req.Host = "attacker.example:8001"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Errorf("foreign Host: status %d, want 403", w.Code)
	}
	req = httptest.NewRequest("POST", "/api/whatif", strings.NewReader(whatIfPlacement))
	req.Host = "127.0.0.1:8001"
	req.Header.Set("Origin", "http://attacker.example")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Errorf("foreign Origin: status %d, want 403", w.Code)
	}
	for _, host := range []string{"localhost:8001", "[::1]:8001", "127.0.0.1:8001"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `<script src="app.js">`) {
			t.Errorf("%s: the page: %d %.200s", host, w.Code, w.Body.String())
		}
	}
	for _, asset := range []string{"/app.js", "/style.css"} {
		if w := do(t, h, "GET", asset, ""); w.Code != http.StatusOK || w.Body.Len() == 0 {
			t.Errorf("%s: %d", asset, w.Code)
		}
	}
}

// TestStaleInventory: an inventory older than the hub's --inventory-stale-after is marked, and
// a request that fits there says the hub gives it no new decisions.
func TestStaleInventory(t *testing.T) {
	node := ut.MakeNode("n").Resource("cpu", "8").Resource("memory", "32Gi").Obj()
	fleet := &simulate.Fleet{}
	fleet.Clusters = []*clusterv1.ManagedCluster{ut.MakeCluster("old").Obj()}
	fleet.Inventories = []*fleetfitv1alpha1.ClusterInventory{ut.MakeInventory("old", readAt.Add(-time.Hour), []*corev1.Node{node})}
	h := newTestServer(func(context.Context, ...string) (*simulate.Fleet, error) { return fleet, nil }).Handler()
	got := decode[Fleet](t, do(t, h, "GET", "/api/fleet?cpu=1", ""), http.StatusOK)
	c := got.Items[0]
	if !c.Stale || c.Row.Inventory != "60m ago (stale)" || c.Tiles[0].Memory.Free != 32<<30*1000 || got.Totals.Stale != 1 || !c.Fit.Fits || !strings.Contains(c.Fit.Reason, "stale") {
		t.Errorf("stale cluster: %+v, totals %+v", c, got.Totals)
	}
}
