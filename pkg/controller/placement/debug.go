package placement

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hubauth"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
)

// debugTimeout bounds one explain or dry-run cycle served over HTTP.
const debugTimeout = 30 * time.Second

// DebugPath is OCM's debugger path: GET DebugPath+"<namespace>/<name>" explains a placement,
// POST DebugPath schedules a posted one without writing anything.
const DebugPath = "/debug/placements/"

// DebugResult is what the debug endpoints return: the explanation, and for a dry run the
// PlacementDecisions that would be written.
type DebugResult struct {
	scheduler.Explanation `json:",inline"`
	PlacementDecisions    []clusterv1beta1.PlacementDecision `json:"placementDecisions,omitempty"`
}

// DebugHandler serves explain and dry-run. door authorises every request for the caller its
// authentication found: explaining needs "get" on the placement, a dry run "create" on
// placements in its namespace, which only its body says.
func (c *Controller) DebugHandler(door *hubauth.Door) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		var p *clusterv1beta1.Placement
		var intents []*fleetfitv1alpha1.HPAIntent
		verb := "get"
		switch r.Method {
		case http.MethodGet:
			ns, name, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, DebugPath), "/")
			if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				writeJSON(w, http.StatusBadRequest, DebugResult{Explanation: scheduler.Explanation{Error: "expected " + DebugPath + "<namespace>/<name>"}})
				return
			}
			if !door.Allow(w, r, placementAccess(verb, ns, name)) {
				return
			}
			var err error
			p, err = c.placements.Placements(ns).Get(name)
			if apierrors.IsNotFound(err) {
				writeJSON(w, http.StatusNotFound, DebugResult{Explanation: scheduler.Explanation{Placement: ns + "/" + name, Error: err.Error()}})
				return
			}
			if err != nil {
				writeJSON(w, http.StatusInternalServerError, DebugResult{Explanation: scheduler.Explanation{Error: err.Error()}})
				return
			}
			intents = c.intentsFor(p)
		case http.MethodPost:
			verb = "create"
			var err error
			p, intents, err = decodeDryRun(r.Body)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, DebugResult{Explanation: scheduler.Explanation{Error: err.Error()}})
				return
			}
			if !door.Allow(w, r, placementAccess(verb, p.Namespace, "")) {
				return
			}
		default:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		res := c.dryRun(r, p, intents, r.Method == http.MethodGet)
		logger.V(logs.Debug).Info("Served placement debug request", "placement", klog.KObj(p), "verb", verb)
		writeJSON(w, http.StatusOK, res)
	})
}

// placementAccess is verb on the placement name in namespace ns, or on its placements for no name.
func placementAccess(verb, ns, name string) hubauth.Access {
	return hubauth.Access{
		Verb: verb, Group: clusterv1beta1.GroupName, Version: clusterv1beta1.GroupVersion.Version,
		Resource: "placements", Namespace: ns, Name: name,
	}
}

// dryRun schedules p against the current snapshot with explain on, and lays out the decisions
// as they would be written (keeping the existing objects' slots when the placement exists).
func (c *Controller) dryRun(r *http.Request, p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent, stored bool) DebugResult {
	existing := map[string][]string{}
	if old, err := c.existingDecisions(p); err == nil {
		for n, d := range old {
			existing[n] = decisionClusterNames(d.Status.Decisions)
		}
	}
	// Bounded by the request (a client that goes away stops the cycle) and by debugTimeout.
	ctx, cancel := context.WithTimeout(r.Context(), debugTimeout)
	defer cancel()
	// For a stored placement, the decided clusters the controller's next cycle would keep are
	// kept here too, so that explain shows what the hub would do; a posted one is a change of
	// the placement, which the hub schedules as OCM does.
	now := c.opts.Clock.Now()
	var pinned []string
	var why string
	if stored {
		pinned, why, _ = c.holdStill(p, intents, flatten(existing), now)
	}
	plan := PlanCycle(ctx, PlanInput{
		Scheduler: c.scheduler, Snapshot: c.cache.Snapshot(), Placement: p, Intents: intents,
		Existing: existing, Now: now, Explain: true, Pinned: pinned, Why: why,
	})
	out := DebugResult{Explanation: *scheduler.Explain(p.Namespace+"/"+p.Name, plan.Result)}
	if plan.Kept {
		out.Error = plan.Failure.String()
		return out
	}
	out.PlacementDecisions = plan.Decisions
	return out
}

// decodeDryRun reads a Placement, or a List (JSON or YAML) holding one Placement and any
// number of HPAIntents.
func decodeDryRun(body io.Reader) (*clusterv1beta1.Placement, []*fleetfitv1alpha1.HPAIntent, error) {
	data, err := io.ReadAll(io.LimitReader(body, 4<<20))
	if err != nil {
		return nil, nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return nil, nil, fmt.Errorf("decoding the request body: %w", err)
	}
	items := []unstructured.Unstructured{*obj}
	if obj.IsList() {
		list, err := obj.ToList()
		if err != nil {
			return nil, nil, fmt.Errorf("decoding the list: %w", err)
		}
		items = list.Items
	}
	var p *clusterv1beta1.Placement
	var intents []*fleetfitv1alpha1.HPAIntent
	for _, it := range items {
		switch it.GetKind() {
		case "Placement":
			if p != nil {
				return nil, nil, fmt.Errorf("the request holds more than one Placement")
			}
			p = &clusterv1beta1.Placement{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(it.Object, p); err != nil {
				return nil, nil, fmt.Errorf("decoding Placement: %w", err)
			}
		case "HPAIntent":
			in := &fleetfitv1alpha1.HPAIntent{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(it.Object, in); err != nil {
				return nil, nil, fmt.Errorf("decoding HPAIntent: %w", err)
			}
			intents = append(intents, in)
		default:
			return nil, nil, fmt.Errorf("unexpected kind %q: post a Placement, or a List of one Placement and its HPAIntents", it.GetKind())
		}
	}
	if p == nil {
		return nil, nil, fmt.Errorf("the request holds no Placement")
	}
	if p.Namespace == "" {
		return nil, nil, fmt.Errorf("the Placement needs metadata.namespace: the namespace decides which cluster sets are bound")
	}
	if p.Name == "" {
		p.Name = "dry-run"
	}
	// Posted objects are what the caller says, not what the hub stores: they must never be
	// taken for stored ones by the caches keyed on identity (compiled intents by UID and
	// generation, compiled CEL programs by UID and generation), or a caller could plant
	// requirements for an object of another namespace.
	forgetIdentity(&p.ObjectMeta)
	for _, in := range intents {
		if in.Namespace == "" {
			in.Namespace = p.Namespace
		}
		if in.Namespace != p.Namespace {
			return nil, nil, fmt.Errorf("HPAIntent %s is in namespace %q: post intents in the Placement's namespace %q", in.Name, in.Namespace, p.Namespace)
		}
		forgetIdentity(&in.ObjectMeta)
	}
	return p, intents, nil
}

// forgetIdentity clears what makes an object look like a stored one.
func forgetIdentity(m *metav1.ObjectMeta) {
	m.UID, m.ResourceVersion, m.Generation = "", "", 0
	m.ManagedFields, m.CreationTimestamp, m.DeletionTimestamp = nil, metav1.Time{}, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
