package ui

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/logs"
)

//go:embed assets
var assets embed.FS

// Defaults of Options.
const (
	// DefaultMaxAge is how long one read of the hub serves every request: the page polls every
	// few seconds, so a read per page per poll would put the fleet's size on the hub each time.
	DefaultMaxAge = 3 * time.Second
	// DefaultLimit is how many clusters or placements one answer holds when the page asks for
	// no number; MaxLimit the most it may ask for.
	DefaultLimit = 100
	MaxLimit     = 500
	// MaxTiles is the most node tiles a cluster's summary holds; nodes beyond them are counted.
	MaxTiles = 48
)

// Options configure a Server.
type Options struct {
	// Load reads the hub with the user's identity.
	Load Loader
	// Hub names the hub the page shows (its API server's address).
	Hub string
	// InventoryStaleAfter is the hub's --inventory-stale-after, as `get clusters` takes it.
	InventoryStaleAfter time.Duration
	// MaxAge is how long one read of the hub is reused (DefaultMaxAge when zero).
	MaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server serves the page and its JSON endpoints.
type Server struct {
	opts      Options
	snapshots *snapshots
}

// New returns a server reading the hub through opts.Load.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.InventoryStaleAfter <= 0 {
		opts.InventoryStaleAfter = fleetfitv1alpha1.DefaultInventoryStaleAfter
	}
	return &Server{opts: opts, snapshots: newSnapshots(opts.Load, opts.Now, opts.MaxAge)}
}

// Handler is the page, its assets and the JSON endpoints, for loopback callers only (see the
// package's documentation).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	mux.Handle("GET /", http.FileServer(http.FS(static)))
	mux.HandleFunc("GET /api/fleet", s.serveFleet)
	mux.HandleFunc("GET /api/placements", s.servePlacements)
	mux.HandleFunc("GET /api/explain/{namespace}/{name}", s.serveExplain)
	mux.HandleFunc("POST /api/whatif", s.serveWhatIf)
	return loopbackOnly(mux)
}

// loopbackOnly refuses a request whose Host is not a loopback name or address, as kubectl
// proxy does by default: a browser sends the Host of the site it loaded, so a page of another
// site that resolves its own name to 127.0.0.1 (DNS rebinding) is refused here. A POST must
// also come from the page itself: browsers name the page's origin on every POST.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, "Forbidden", "this page answers only at a loopback address such as 127.0.0.1 or localhost, not at "+strconv.Quote(r.Host))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if o := r.Header.Get("Origin"); o != "" {
				u, err := url.Parse(o)
				if err != nil || u.Host != r.Host {
					writeError(w, http.StatusForbidden, "Forbidden", "requests from another origin ("+strconv.Quote(o)+") are refused")
					return
				}
			}
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		next.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrorBody is what every endpoint answers when it cannot answer with data: the status code,
// the reason (Forbidden, Unauthorized, BadRequest, ...) and a message to show. A refusal of the
// hub keeps the hub's code, reason and message.
type ErrorBody struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, code int, reason, message string) {
	writeJSON(w, code, ErrorBody{Code: code, Reason: reason, Message: message})
}

// writeHubError answers with what reading the hub failed with: the hub's own status (401, 403,
// 404, 429, ...) when it answered with one, else 502, since the hub could not be read.
func writeHubError(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).V(logs.Debug).Info("Reading the hub failed", "path", r.URL.Path, "err", err)
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		if st.Code >= 400 {
			writeError(w, int(st.Code), string(st.Reason), err.Error())
			return
		}
	}
	writeError(w, http.StatusBadGateway, "HubUnavailable", err.Error())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// page reads offset and limit from the query: limit defaults to DefaultLimit and is capped at
// MaxLimit.
func page(q url.Values) (offset, limit int, err error) {
	limit = DefaultLimit
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return 0, 0, errors.New("limit must be a positive number")
		}
		limit = min(limit, MaxLimit)
	}
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, errors.New("offset must be a number, 0 or more")
		}
	}
	return offset, limit, nil
}

// window is the part [offset, offset+limit) of n items.
func window(n, offset, limit int) (from, to int) {
	from = min(offset, n)
	return from, min(from+limit, n)
}
