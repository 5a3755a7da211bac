package emco

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/hubauth"
	"github.com/fleetfit/fleetfit/pkg/logs"
)

// BasePath is where the API is served: EMCO's base path.
const BasePath = "/v2/"

// Paths of the API, as ServeMux patterns; each {name} is a path segment.
const (
	intentsPath      = "/v2/projects/{project}/composite-apps/{app}/{version}/deployment-intent-groups/{dig}/hpa-intents"
	intentPath       = intentsPath + "/{intent}"
	consumersPath    = intentPath + "/hpa-resource-consumers"
	consumerPath     = consumersPath + "/{consumer}"
	requirementsPath = consumerPath + "/resource-requirements"
	requirementPath  = requirementsPath + "/{requirement}"
)

// Clients are what the handler reads and writes with: the hub's own
// credentials, used once the caller is authorised.
type Clients struct {
	Kube     kubernetes.Interface
	Fleetfit fleetfitclient.Interface
	Cluster  clusterclient.Interface
}

// Handler serves the API. Make it with New.
type Handler struct {
	clients Clients
	door    *hubauth.Door
	mux     *http.ServeMux
	// locks make this hub's changes of one intent one at a time.
	locks intentLocks
	// backoff paces the retries of a change that lost a race with another
	// writer of the same intent (409 Conflict from the API server), for at
	// most conflictTimeout: every change reads the intent again and is
	// applied anew (see write).
	backoff         wait.Backoff
	conflictTimeout time.Duration
}

// New returns the handler. door authorises each request as its caller, whom
// the door's authentication has put in the request's context.
func New(clients Clients, door *hubauth.Door) *Handler {
	h := &Handler{clients: clients, door: door, mux: http.NewServeMux(), backoff: conflictBackoff, conflictTimeout: conflictTimeout}
	routes := []struct {
		method, path, verb string
		serve              func(context.Context, scope, *http.Request) (int, any, error)
	}{
		{http.MethodPost, intentsPath, "create", h.createIntent},
		{http.MethodGet, intentsPath, "list", h.listIntents},
		{http.MethodGet, intentPath, "get", h.getIntent},
		{http.MethodPut, intentPath, "update", h.putIntent},
		{http.MethodDelete, intentPath, "delete", h.deleteIntent},
		{http.MethodGet, intentPath + "/status", "get", h.intentStatus},
		{http.MethodPost, consumersPath, "update", h.createConsumer},
		{http.MethodGet, consumersPath, "get", h.listConsumers},
		{http.MethodGet, consumerPath, "get", h.getConsumer},
		{http.MethodPut, consumerPath, "update", h.putConsumer},
		{http.MethodDelete, consumerPath, "update", h.deleteConsumer},
		{http.MethodPost, requirementsPath, "update", h.createRequirement},
		{http.MethodGet, requirementsPath, "get", h.listRequirements},
		{http.MethodGet, requirementPath, "get", h.getRequirement},
		{http.MethodPut, requirementPath, "update", h.putRequirement},
		{http.MethodDelete, requirementPath, "update", h.deleteRequirement},
	}
	for _, rt := range routes {
		h.mux.Handle(rt.method+" "+rt.path, h.serve(rt.verb, rt.serve))
	}
	return h
}

// ServeHTTP serves one request of the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// scope is where a request points: its path's names.
type scope struct {
	project, app, version, dig    string
	intent, consumer, requirement string
}

func scopeOf(r *http.Request) scope {
	return scope{
		project: r.PathValue("project"), app: r.PathValue("app"), version: r.PathValue("version"), dig: r.PathValue("dig"),
		intent: r.PathValue("intent"), consumer: r.PathValue("consumer"), requirement: r.PathValue("requirement"),
	}
}

// labels are the labels of the HPAIntents of the scope's deployment intent group.
func (s scope) labels() map[string]string {
	return map[string]string{LabelCompositeApp: s.app, LabelCompositeAppVersion: s.version, LabelDeploymentIntentGroup: s.dig}
}

func (s scope) holds(in *v1alpha1.HPAIntent) bool {
	for k, v := range s.labels() {
		if in.Labels[k] != v {
			return false
		}
	}
	return true
}

// serve authorises a request as the caller the door's authentication
// found, checks its path and project, runs serve and writes what it returns:
// a body with a status code, or an error.
func (h *Handler) serve(verb string, serve func(context.Context, scope, *http.Request) (int, any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		s := scopeOf(r)
		logger := klog.FromContext(ctx).WithValues("method", r.Method, "path", r.URL.Path)
		code, body, err := func() (int, any, error) {
			if err := h.door.Check(ctx, access(verb, s)); err != nil {
				return 0, nil, err
			}
			if err := s.checkNames(); err != nil {
				return 0, nil, err
			}
			if err := checkQuery(r.URL); err != nil {
				return 0, nil, err
			}
			if _, err := h.clients.Kube.CoreV1().Namespaces().Get(ctx, s.project, metav1.GetOptions{}); err != nil {
				// A name that cannot be a namespace's is no project either.
				if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
					return 0, nil, notFound("project %q not found", s.project)
				}
				return 0, nil, fmt.Errorf("reading project %q: %w", s.project, err)
			}
			return serve(ctx, s, r)
		}()
		var own *Error
		var refused *hubauth.Refusal
		switch {
		case errors.As(err, &refused):
			// The door has logged why.
			refused.Write(w, r)
		case errors.As(err, &own):
			logger.V(logs.Debug).Info("Refused EMCO request", "status", own.Code, "message", own.Message)
			http.Error(w, own.Message, own.Code)
		case err != nil:
			logger.Error(err, "Failed EMCO request")
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case body == nil:
			logger.V(logs.Debug).Info("Served EMCO request", "status", code)
			w.WriteHeader(code)
		default:
			logger.V(logs.Debug).Info("Served EMCO request", "status", code)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(body)
		}
	})
}

// access is what a request with verb needs: verb on the project's hpaintents,
// on the scope's intent unless verb is for all of them (create, list).
func access(verb string, s scope) hubauth.Access {
	name := s.intent
	if verb == "create" || verb == "list" {
		name = ""
	}
	return hubauth.Access{
		Verb: verb, Group: v1alpha1.SchemeGroupVersion.Group, Version: v1alpha1.SchemeGroupVersion.Version,
		Resource: "hpaintents", Namespace: s.project, Name: name,
	}
}
