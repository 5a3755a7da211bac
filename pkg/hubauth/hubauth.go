// Package hubauth is the one door of the hub's HTTPS endpoints: it finds who calls
// (Authenticate, delegated to the hub API server: client certificates and TokenReview) and
// asks whether they may do what a request needs (Allow, a SubjectAccessReview), with one
// behaviour for every endpoint:
//
//   - a caller without credentials, or with credentials the hub API server refuses, gets 401;
//   - a caller who may not do what the request needs gets 403 naming the verb and the
//     resource (or path) that was missing;
//   - when the hub cannot ask (the SubjectAccessReview failed), the caller gets 500, to retry,
//     never a 403 that would tell them they lack a right they may have;
//
// each with a metav1.Status body, as the Kubernetes API server answers. An endpoint declares
// only what it needs, as an Access; the door does the rest, so that a new endpoint is one
// more Access, not a copy of the checks.
//
// The package sits below every other fleetfit package: it imports none of them but the
// named log levels (package logs).
package hubauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/logs"
)

// Access is what one request needs: a verb on a resource, as a SubjectAccessReview's
// resource attributes, or, when Path is set, a verb on a path (RBAC's nonResourceURLs).
type Access struct {
	Verb string
	// Group, Version and Resource name the resource; Version may be empty (RBAC ignores it).
	Group, Version, Resource string
	// Namespace is empty for a cluster-scoped resource, Name for list and create.
	Namespace, Name string
	// Path is set instead of a resource for a request that is not about one.
	Path string
}

// attributes are the SubjectAccessReview's attributes of a, for u.
func (a Access) attributes(u user.Info) authorizer.AttributesRecord {
	if a.Path != "" {
		return authorizer.AttributesRecord{User: u, Verb: a.Verb, Path: a.Path}
	}
	return authorizer.AttributesRecord{
		User: u, Verb: a.Verb, ResourceRequest: true,
		APIGroup: a.Group, APIVersion: a.Version, Resource: a.Resource, Namespace: a.Namespace, Name: a.Name,
	}
}

// String says what a needs: `list hpaintents.fleetfit.io in the namespace "proj"`,
// `get placements.cluster.open-cluster-management.io "p" in the namespace "ns"`,
// `get path "/metrics"`.
func (a Access) String() string {
	if a.Path != "" {
		return fmt.Sprintf("%s path %q", a.Verb, a.Path)
	}
	s := a.Verb + " " + a.Resource
	if a.Group != "" {
		s += "." + a.Group
	}
	if a.Name != "" {
		s += fmt.Sprintf(" %q", a.Name)
	}
	if a.Namespace != "" {
		s += fmt.Sprintf(" in the namespace %q", a.Namespace)
	}
	return s
}

// Door authenticates and authorises the requests of the hub's endpoints. Make it with New.
type Door struct {
	authn authenticator.Request
	authz authorizer.Authorizer
}

// New returns the door. authn finds the caller of a request (Authenticate); authz decides
// what a caller may do (Allow). Both are usually the hub's delegating ones, which ask the
// hub API server with TokenReviews and SubjectAccessReviews; authn may be nil where
// requests come with their user already in their context.
func New(authn authenticator.Request, authz authorizer.Authorizer) *Door {
	return &Door{authn: authn, authz: authz}
}

// Authenticate wraps the endpoints behind the door: it finds the caller of each request and
// puts them in the request's context, and answers 401 to a request whose credentials are
// refused or that has none (the anonymous user), so that no endpoint sees one. Paths that
// must answer anyone, as a liveness probe's, are served outside it.
func (d *Door) Authenticate(h http.Handler) http.Handler {
	known := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := request.UserFrom(r.Context()); !ok || anonymous(u) {
			unauthorized(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
	return genericapifilters.WithAuthentication(known, d.authn, http.HandlerFunc(unauthorized), nil, nil)
}

// Allow reports whether the caller of r may do what a says. When not, it has answered the
// request (401, 403 or 500, see the package's doc) and the caller of Allow writes nothing
// more. The caller comes from r's context, where Authenticate put them.
func (d *Door) Allow(w http.ResponseWriter, r *http.Request, a Access) bool {
	err := d.Check(r.Context(), a)
	var refused *Refusal
	if errors.As(err, &refused) {
		refused.Write(w, r)
		return false
	}
	return true
}

// Check is Allow for an endpoint that finds what a request needs deep in its work, where it
// returns errors rather than answer: nil when the caller in ctx may do what a says, or else
// a *Refusal, which the endpoint answers with (Refusal.Write), whatever else it answers
// with its own errors.
func (d *Door) Check(ctx context.Context, a Access) error {
	u, ok := request.UserFrom(ctx)
	if !ok || anonymous(u) {
		return &Refusal{Status: *failure(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, unauthenticated, Access{})}
	}
	decision, reason, err := d.authz.Authorize(ctx, a.attributes(u))
	logger := klog.FromContext(ctx).WithValues("user", u.GetName(), "access", a.String())
	switch {
	case decision == authorizer.DecisionAllow:
		return nil
	case err != nil:
		// The decision is unknown: the caller may have the right, so this is no 403.
		logger.Error(err, "Could not authorise a request")
		return &Refusal{Status: *failure(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			fmt.Sprintf("the hub could not check whether user %q may %s: %v", u.GetName(), a, err), a)}
	default:
		msg := fmt.Sprintf("user %q cannot %s", u.GetName(), a)
		if reason != "" {
			msg += ": " + reason
		}
		logger.V(logs.Debug).Info("Refused a request", "reason", reason)
		return &Refusal{Status: *failure(http.StatusForbidden, metav1.StatusReasonForbidden, msg, a)}
	}
}

// Refusal is a request the door refused: the Status its caller gets.
type Refusal struct {
	Status metav1.Status
}

func (e *Refusal) Error() string { return e.Status.Message }

// Write answers r with the refusal.
func (e *Refusal) Write(w http.ResponseWriter, r *http.Request) {
	// As the Kubernetes API server does: an unauthenticated HTTP/2 client may not keep its
	// connection open, which would let it hold the hub's resources cheaply.
	if e.Status.Code == http.StatusUnauthorized && r.ProtoMajor == 2 {
		w.Header().Set("Connection", "close")
	}
	writeStatus(w, &e.Status)
}

// Require wraps h, whose every request needs access(r): for endpoints that know what a
// request needs before they read its body.
func (d *Door) Require(h http.Handler, access func(*http.Request) Access) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.Allow(w, r, access(r)) {
			h.ServeHTTP(w, r)
		}
	})
}

// anonymous reports whether u is who a request without credentials is taken for.
func anonymous(u user.Info) bool {
	return u.GetName() == user.Anonymous || slices.Contains(u.GetGroups(), user.AllUnauthenticated)
}

// unauthenticated is the message of a 401.
const unauthenticated = "unauthenticated: present a bearer token or a client certificate the hub accepts"

func unauthorized(w http.ResponseWriter, r *http.Request) {
	refused := &Refusal{Status: *failure(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, unauthenticated, Access{})}
	refused.Write(w, r)
}
