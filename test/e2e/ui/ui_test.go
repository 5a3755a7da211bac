package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// pageRow is what the fleet view shows of one cluster.
type pageRow struct {
	Name, Nodes, CPU, CPUFree, CPUAllocatable, Memory, MemoryFree, MemoryAllocatable, GPUs, Largest string
}

// readRows reads the fleet view's table.
const readRows = `[...document.querySelectorAll('#clusters tbody tr[data-cluster]')].map((tr) => {
  const cell = (c) => tr.querySelector('[data-col="' + c + '"]');
  return {Name: tr.dataset.cluster, Nodes: cell('nodes').textContent,
    CPU: cell('cpu').textContent, CPUFree: cell('cpu').dataset.free, CPUAllocatable: cell('cpu').dataset.allocatable,
    Memory: cell('memory').textContent, MemoryFree: cell('memory').dataset.free, MemoryAllocatable: cell('memory').dataset.allocatable,
    GPUs: cell('gpus').textContent, Largest: cell('largest').textContent};
})`

// whatIf asks for a Tesla T4 and 8 cores on one node: cluster2's T4 node has both.
const whatIf = `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: t4-inference, namespace: demo}
spec: {numberOfClusters: 1}
---
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata: {name: t4-inference, namespace: demo}
spec:
  placementRef: {name: t4-inference}
  consumers:
  - name: server
    target: {apiVersion: apps/v1, kind: Deployment, name: server, container: server}
    requirements:
    - {name: gpu, resource: {name: nvidia.com/gpu, limits: "1"}}
    - {name: cpu, resource: {name: cpu, requests: "8", limits: "8"}}
    - {name: t4, feature: {key: nvidia.com/gpu.product, operator: In, values: [Tesla-T4]}}
`

// TestFleetPage drives the page in Chromium: the fleet view shows what `fleetfit get clusters`
// shows, a request is found where it fits on one node, the placements show their decisions and
// delivery, the why-not grid shows HardwareFit's reason for a rejected cluster, the what-if form
// answers as `fleetfit simulate --from-hub` does, and a user the hub's RBAC gives nothing sees
// the hub's refusal and no data.
func TestFleetPage(t *testing.T) {
	chromium(t) // fail at once, before the fleet is set up, when there is no browser
	startDemoFleet(t)
	ctx := t.Context()

	raw, err := framework.Kubeconfig(fleet.Hub.AdminConfig(), "hub")
	if err != nil {
		t.Fatal(err)
	}
	admin := writeKubeconfig(t, "admin.kubeconfig", raw)
	page := startUI(t, admin)
	tab := browser(t)

	t.Run("fleet view shows what get clusters shows", func(t *testing.T) {
		do(t, tab, "opening the fleet view", chromedp.Navigate(page.URL), chromedp.WaitVisible(chromedp.CSS(`#clusters tr[data-cluster="cluster2"]`)))
		framework.Eventually(t, func(ctx context.Context) error {
			want, err := clustersFromCLI(ctx, t, admin)
			if err != nil {
				return err
			}
			// Browser actions run in the tab's context, bounded by this attempt's.
			read, cancel := context.WithCancel(tab)
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
			defer cancel()
			got, err := chromedp.Run(read, chromedp.Evaluate[[]pageRow](readRows))
			if err != nil {
				return err
			}
			for i := range got {
				got[i].Largest = "" // checked below: get clusters has no such column
			}
			if diff := cmp.Diff(want, got); diff != "" {
				return fmt.Errorf("the page's rows (-get clusters,+page):\n%s", diff)
			}
			return nil
		})
		// cluster1's A100 node: 4 GPUs, 1 taken before and 1 by the trainer; 32 cores, 20 and 4
		// of them taken; 128Gi, 64Gi and 16Gi taken.
		largest := value(t, tab, "reading cluster1's largest block", chromedp.Text(chromedp.CSS(`#clusters tr[data-cluster="cluster1"] [data-col="largest"]`)))
		if largest != "2× A100 + 8 cpu + 48Gi on one node" {
			t.Errorf("cluster1's largest free block on the page: %q", largest)
		}

		// Where does 1× A100 + 4 cpu fit on one node now? cluster1 only; cluster2 says why not.
		do(t, tab, "asking where an A100 fits",
			chromedp.SetValue(chromedp.CSS(`#fit-gpus`), "1"),
			chromedp.SetValue(chromedp.CSS(`#fit-model`), "A100"),
			chromedp.SetValue(chromedp.CSS(`#fit-cpu`), "4"),
			chromedp.Click(chromedp.CSS(`#fit-ask`)),
			chromedp.WaitVisible(chromedp.CSS(`#clusters tr.fits[data-cluster="cluster1"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#clusters tr.nofit[data-cluster="cluster2"]`)),
		)
		reason := value(t, tab, "reading cluster2's answer", chromedp.Text(chromedp.CSS(`#clusters tr[data-cluster="cluster2"] [data-col="fit"]`)))
		if !strings.Contains(reason, "no schedulable node with nvidia.com/gpu.product In [A100]") {
			t.Errorf("cluster2's answer: %q", reason)
		}
		shot := value(t, tab, "taking a screenshot", chromedp.CaptureScreenshot())
		if !bytes.HasPrefix(shot, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("the screenshot is no PNG (%d bytes)", len(shot))
		}
		path := os.Getenv(ScreenshotEnv)
		if path == "" {
			path = filepath.Join(t.TempDir(), "fleetfit-ui.png")
		}
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of the fleet view: %s", path)
	})

	t.Run("placements show decisions and delivery", func(t *testing.T) {
		do(t, tab, "opening the placements", chromedp.Navigate(page.URL+"#placements"),
			chromedp.WaitVisible(chromedp.CSS(`#placements tr[data-placement="demo/training"]`)))
		text := value(t, tab, "reading training", chromedp.Text(chromedp.CSS(`#placements tr[data-placement="demo/training"]`)))
		for _, want := range []string{"1/1", "cluster1 (", "Scheduled", "Delivered", "cluster1: Available", "Deployment trainer: 1/1 ready"} {
			if !strings.Contains(text, want) {
				t.Errorf("the training row lacks %q: %q", want, text)
			}
		}
	})

	t.Run("why not shows HardwareFit's reason", func(t *testing.T) {
		out, err := fleetfitCLI(ctx, t, "explain", "placement", "training", "-n", ns, "-o", "json", "--kubeconfig", admin)
		if err != nil {
			t.Fatal(err)
		}
		var e scheduler.Explanation
		if err := json.Unmarshal(out, &e); err != nil {
			t.Fatal(err)
		}
		var want string
		for _, c := range e.Clusters {
			if c.Name == "cluster2" && c.RejectedBy == "HardwareFit" {
				want = c.Reason
			}
		}
		if want == "" {
			t.Fatalf("fleetfit explain does not say HardwareFit rejected cluster2: %s", out)
		}
		cell := `table.explain tr[data-cluster="cluster2"] td.rejected[data-filter="HardwareFit"]`
		do(t, tab, "opening why not", chromedp.Navigate(page.URL+"#whynot/demo/training"), chromedp.WaitVisible(chromedp.CSS(cell)))
		if got := value(t, tab, "reading cluster2's reason", chromedp.Text(chromedp.CSS(cell))); got != want {
			t.Errorf("the grid says %q, explain %q", got, want)
		}
		if got := value(t, tab, "reading cluster1's verdict", chromedp.AttributeValue(chromedp.CSS(`table.explain tr[data-cluster="cluster1"]`), "data-verdict")); got.Value != "selected" {
			t.Errorf("cluster1's verdict: %+v", got)
		}
	})

	t.Run("what if answers as simulate", func(t *testing.T) {
		file := writeKubeconfig(t, "what-if.yaml", []byte(whatIf))
		out, err := fleetfitCLI(ctx, t, "simulate", "--from-hub", "-f", file, "-o", "json", "--kubeconfig", admin)
		if err != nil {
			t.Fatal(err)
		}
		want := decidedIn(t, out, "t4-inference")
		if !cmp.Equal(want, []string{"cluster2"}) {
			t.Fatalf("simulate decides %v for t4-inference, want [cluster2]", want)
		}
		row := `#whatif-placements tr[data-placement="demo/t4-inference"]`
		do(t, tab, "asking what if",
			chromedp.Navigate(page.URL+"#whatif"),
			chromedp.WaitVisible(chromedp.CSS(`#whatif-text`)),
			chromedp.SetValue(chromedp.CSS(`#whatif-text`), whatIf),
			chromedp.Click(chromedp.CSS(`#whatif-ask`)),
			chromedp.WaitVisible(chromedp.CSS(row)),
		)
		got := value(t, tab, "reading the answer", chromedp.AttributeValue(chromedp.CSS(row), "data-clusters"))
		if diff := cmp.Diff(strings.Join(want, ","), got.Value); diff != "" {
			t.Errorf("what-if (-simulate,+page):\n%s", diff)
		}
		intent := value(t, tab, "reading the intent", chromedp.Text(chromedp.CSS(`#whatif-intents tr[data-intent="demo/t4-inference"]`)))
		if !strings.Contains(intent, "True") {
			t.Errorf("the intent's row: %q", intent)
		}
	})

	t.Run("a user without RBAC sees a refusal", func(t *testing.T) {
		cfg, err := fleet.Hub.UserConfig("nobody")
		if err != nil {
			t.Fatal(err)
		}
		raw, err := framework.Kubeconfig(cfg, "hub")
		if err != nil {
			t.Fatal(err)
		}
		nobody := startUI(t, writeKubeconfig(t, "nobody.kubeconfig", raw))
		do(t, tab, "opening the page as nobody", chromedp.Navigate(nobody.URL), chromedp.WaitVisible(chromedp.CSS(`#refusal`)))
		title := value(t, tab, "reading the refusal", chromedp.Text(chromedp.CSS(`#refusal`)))
		for _, want := range []string{"403", `User "nobody" cannot list resource "managedclusters"`} {
			if !strings.Contains(title, want) {
				t.Errorf("the refusal lacks %q: %q", want, title)
			}
		}
		if n := value(t, tab, "counting rows", chromedp.Evaluate[int](`document.querySelectorAll('#clusters tbody tr[data-cluster], #totals .card').length`)); n != 0 {
			t.Errorf("the page shows %d rows or totals to a user the hub refuses", n)
		}
		// Every endpoint passes the refusal on, with no data.
		for _, path := range []string{"api/fleet", "api/placements", "api/explain/demo/training"} {
			resp, err := http.Get(nobody.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body.String(), `"reason":"Forbidden"`) {
				t.Errorf("%s as nobody: %d %s", path, resp.StatusCode, body.String())
			}
		}
	})
}

// clustersFromCLI is what `fleetfit get clusters` says: the table's columns and, from -o json,
// the amounts they are printed from.
func clustersFromCLI(ctx context.Context, t *testing.T, kubeconfig string) ([]pageRow, error) {
	table, err := fleetfitCLI(ctx, t, "get", "clusters", "--kubeconfig", kubeconfig)
	if err != nil {
		return nil, err
	}
	out, err := fleetfitCLI(ctx, t, "get", "clusters", "-o", "json", "--kubeconfig", kubeconfig)
	if err != nil {
		return nil, err
	}
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, err
	}
	inventories := map[string]*v1alpha1.ClusterInventory{}
	for _, item := range list.Items {
		var meta struct{ Kind string }
		if err := json.Unmarshal(item, &meta); err != nil {
			return nil, err
		}
		if meta.Kind != "ClusterInventory" {
			continue
		}
		inv := &v1alpha1.ClusterInventory{}
		if err := json.Unmarshal(item, inv); err != nil {
			return nil, err
		}
		inventories[inv.Namespace] = inv
	}
	var rows []pageRow
	for _, cells := range ut.TableRows(string(table))[1:] {
		r := pageRow{Name: cells[0], Nodes: cells[2], CPU: cells[3], Memory: cells[4], GPUs: cells[5]}
		if inv := inventories[r.Name]; inv != nil {
			for _, res := range inv.Status.Resources {
				switch res.Name {
				case "cpu":
					r.CPUFree, r.CPUAllocatable = res.Free.String(), res.Allocatable.String()
				case "memory":
					r.MemoryFree, r.MemoryAllocatable = res.Free.String(), res.Allocatable.String()
				}
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// decidedIn reads the clusters of placement's PlacementDecisions from simulate -o json.
func decidedIn(t *testing.T, out []byte, placement string) []string {
	t.Helper()
	var list struct{ Items []map[string]any }
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for _, item := range list.Items {
		u := unstructured.Unstructured{Object: item}
		if u.GetKind() != "PlacementDecision" || u.GetLabels()[clusterv1beta1.PlacementLabel] != placement {
			continue
		}
		d := &clusterv1beta1.PlacementDecision{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item, d); err != nil {
			t.Fatal(err)
		}
		for _, cd := range d.Status.Decisions {
			clusters = append(clusters, cd.ClusterName)
		}
	}
	return clusters
}
