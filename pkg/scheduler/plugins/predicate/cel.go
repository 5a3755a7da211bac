package predicate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/google/cel-go/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/klog/v2"
	clusterlisterv1alpha1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ocmcelcommon "open-cluster-management.io/sdk-go/pkg/cel/common"
	ocmcellibrary "open-cluster-management.io/sdk-go/pkg/cel/library"

	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// CEL runs once per candidate cluster and cycle, so an expression's cost is multiplied by the
// fleet: what OCM allows one call (a million, as a CRD validation rule) would let one
// Placement hold a worker for minutes over 10,000 clusters. fleetfit bounds it twice, with
// cel-go's cost tracking, and an expression over a bound is a misconfiguration of the
// Placement (its decisions are kept), not a rejection of one cluster repeated on every other:
//   - one evaluation stops at expressionCostLimit, so an expression too costly for any
//     cluster is found on the first;
//   - the evaluations of one cycle together stop at cycleCostBudget.
//
// Realistic selectors (label and claim lookups, scores(), a comprehension over a cluster's
// labels or claims) cost tens to a few thousand.
// cycleCostBudget is about two seconds of evaluation on one core: a selector of 100 over
// 10,000 clusters costs a tenth of it.
var cycleCostBudget uint64 = 10_000_000

const (
	expressionCostLimit = 100_000

	// clusterCostBudget is the runtime cost that the CEL expressions of one predicate may
	// spend on one cluster, as in OCM; an expression that would exceed it rejects the cluster.
	clusterCostBudget = int64(celconfig.RuntimeCELCostBudget)
	// maxCachedPlacements bounds the compiled-program cache; it is cleared when it grows past
	// this, which only costs recompiling the placements scheduled next.
	maxCachedPlacements = 1024
	// minCachedObjects is the slack the object cache keeps over the snapshot's size before it
	// drops clusters that left the fleet.
	minCachedObjects = 256
)

// celEvaluator compiles and evaluates CEL predicates with OCM's library, so expressions mean
// exactly what they mean in OCM: the managedCluster variable, scores(), JSON and the
// Kubernetes extension libraries, with the same cost limits.
type celEvaluator struct {
	env       *cel.Env
	estimator *ocmcelcommon.BaseEnvCostEstimator

	mu       sync.Mutex
	compiled map[string]*compiledPlacement

	objects objectCache
}

// celPrograms are the compiled CEL expressions of one predicate. err is OCM's message when one
// of them does not compile.
type celPrograms struct {
	expressions []string
	programs    []cel.Program
	err         string
}

// compiledPlacement is the cache entry of one placement generation. expressions is kept to
// recognise a spec that changed without a new generation (possible with fake clients).
type compiledPlacement struct {
	expressions [][]string
	predicates  []celPrograms
}

func newCELEvaluator(scores clusterlisterv1alpha1.AddOnPlacementScoreLister) (*celEvaluator, error) {
	opts := append([]cel.EnvOption{
		ocmcellibrary.ManagedClusterLib(scores),
		ocmcellibrary.JsonLib(),
	}, ocmcelcommon.BaseEnvOpts...)
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	return &celEvaluator{
		env:       env,
		estimator: &ocmcelcommon.BaseEnvCostEstimator{CostEstimator: &ocmcellibrary.CostEstimator{}},
		compiled:  map[string]*compiledPlacement{},
		objects:   objectCache{entries: map[string]objectEntry{}},
	}, nil
}

// programsFor returns the compiled CEL expressions of every predicate of the placement, in
// predicate order, compiling them once per placement generation.
func (e *celEvaluator) programsFor(pl *clusterv1beta1.Placement) ([]celPrograms, *framework.Status) {
	exprs := make([][]string, len(pl.Spec.Predicates))
	hasCEL := false
	for i := range pl.Spec.Predicates {
		exprs[i] = pl.Spec.Predicates[i].RequiredClusterSelector.CelSelector.CelExpressions
		hasCEL = hasCEL || len(exprs[i]) > 0
	}
	if !hasCEL {
		return make([]celPrograms, len(exprs)), nil
	}
	key := pl.Namespace + "/" + pl.Name + "/" + string(pl.UID) + "/" + strconv.FormatInt(pl.Generation, 10)
	e.mu.Lock()
	c, ok := e.compiled[key]
	e.mu.Unlock()
	if ok && slices.EqualFunc(c.expressions, exprs, slices.Equal[[]string]) {
		return c.predicates, nil
	}

	// Compile outside the lock: concurrent cycles of the same generation may both compile,
	// which is harmless, and other placements are not held up.
	c = &compiledPlacement{expressions: exprs, predicates: make([]celPrograms, len(exprs))}
	for i, list := range exprs {
		c.predicates[i] = e.compile(list)
	}
	e.mu.Lock()
	if len(e.compiled) >= maxCachedPlacements {
		clear(e.compiled)
	}
	e.compiled[key] = c
	e.mu.Unlock()
	return c.predicates, nil
}

// compile compiles the expressions of one predicate as OCM does; the first failure is kept
// with OCM's message.
func (e *celEvaluator) compile(expressions []string) celPrograms {
	out := celPrograms{expressions: expressions}
	for _, expr := range expressions {
		ast, issues := e.env.Compile(expr)
		if issues != nil {
			out.err = "compilation failed: " + issues.String()
			return out
		}
		prg, err := e.env.Program(ast,
			cel.CostLimit(expressionCostLimit),
			cel.CostTracking(e.estimator),
			cel.InterruptCheckFrequency(celconfig.CheckFrequency),
		)
		if err != nil {
			out.err = "instantiation failed: " + err.Error()
			return out
		}
		out.programs = append(out.programs, prg)
	}
	return out
}

// evaluation is the outcome of a predicate's expressions on one cluster.
type evaluation struct {
	// failed is -1 when every expression is true, else the index of the first one that is
	// not, and cause says why ("is false", "is not a bool", "failed: ...").
	failed int
	cause  string
	// cost is what the evaluation cost; tooCostly is set when an expression went over
	// expressionCostLimit, which makes the placement misconfigured.
	cost      uint64
	tooCostly string
}

// evaluate runs the expressions of one predicate against a cluster, within one cost budget.
func (e *celEvaluator) evaluate(ctx context.Context, logger klog.Logger, p *celPrograms, cluster *clusterv1.ManagedCluster) evaluation {
	obj, err := e.objects.get(cluster)
	if err != nil {
		logger.Error(err, "Failed to convert cluster for CEL", "cluster", cluster.Name)
		return evaluation{failed: 0, cause: "could not be evaluated: " + err.Error()}
	}
	input := map[string]any{"managedCluster": obj}
	budget := clusterCostBudget
	var out evaluation
	for k, prg := range p.programs {
		val, details, err := prg.ContextEval(ctx, input)
		if details == nil || details.ActualCost() == nil {
			return evaluation{failed: k, cause: "has no cost information", cost: out.cost}
		}
		cost := *details.ActualCost()
		out.cost += cost
		if cost >= expressionCostLimit {
			out.failed = k
			out.tooCostly = fmt.Sprintf("CEL expression %q cost more than %d on cluster %s, the limit per cluster: simplify it (fewer nested comprehensions, smaller lists)",
				p.expressions[k], expressionCostLimit, cluster.Name)
			return out
		}
		if cost > uint64(budget) {
			out.failed, out.cause = k, fmt.Sprintf("exceeds the cost budget (%d > %d)", cost, budget)
			return out
		}
		budget -= int64(cost)
		if err != nil {
			logger.V(logs.Debug).Info("CEL expression failed", "cluster", cluster.Name, "expression", p.expressions[k], "err", err)
			out.failed, out.cause = k, "failed: "+err.Error()
			return out
		}
		b, ok := val.Value().(bool)
		if !ok {
			out.failed, out.cause = k, fmt.Sprintf("is not a bool but %s", val.Type().TypeName())
			return out
		}
		if !b {
			out.failed, out.cause = k, "is false"
			return out
		}
	}
	out.failed = -1
	return out
}

// objectCache keeps each cluster converted to unstructured, the form CEL reads, because the
// conversion costs more than evaluating a typical expression. An entry is reused for the same
// object or the same resourceVersion; the converted maps are never modified.
type objectCache struct {
	mu      sync.RWMutex
	entries map[string]objectEntry
}

type objectEntry struct {
	src             *clusterv1.ManagedCluster
	resourceVersion string
	obj             map[string]any
}

func (c *objectCache) get(cluster *clusterv1.ManagedCluster) (map[string]any, error) {
	c.mu.RLock()
	e, ok := c.entries[cluster.Name]
	c.mu.RUnlock()
	if ok && (e.src == cluster || cluster.ResourceVersion != "" && e.resourceVersion == cluster.ResourceVersion) {
		return e.obj, nil
	}
	u, err := ocmcelcommon.ConvertObjectToUnstructured(cluster)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.entries[cluster.Name] = objectEntry{src: cluster, resourceVersion: cluster.ResourceVersion, obj: u.Object}
	c.mu.Unlock()
	return u.Object, nil
}

// prune drops the clusters that are not in the snapshot once the cache holds clearly more
// entries than the fleet has clusters, so deleted clusters do not accumulate.
func (c *objectCache) prune(snap *framework.Snapshot) {
	limit := 2*snap.NumClusters() + minCachedObjects
	c.mu.RLock()
	n := len(c.entries)
	c.mu.RUnlock()
	if n <= limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.entries {
		if _, ok := snap.Index(name); !ok {
			delete(c.entries, name)
		}
	}
}
