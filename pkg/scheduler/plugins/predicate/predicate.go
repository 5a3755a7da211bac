// Package predicate implements the Placement's spec.predicates as a filter, with OCM's
// semantics: predicates are ORed; inside one predicate the label selector, the claim selector
// and the CEL expressions are ANDed; a placement without predicates accepts every candidate.
package predicate

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Name is the plugin's name in the registry.
const Name = "Predicate"

// Predicate filters clusters by the placement's predicates. One instance serves every
// placement; Filter may run concurrently for different placements.
type Predicate struct {
	cel *celEvaluator
}

var _ framework.FilterPlugin = &Predicate{}

// New creates the plugin. It takes no arguments. The CEL environment is built here, once,
// because building it costs far more than a scheduling cycle.
func New(h framework.Handle, args framework.Args) (framework.Plugin, error) {
	if args.Param != "" || args.AddOn != nil {
		return nil, fmt.Errorf("%s takes no arguments", Name)
	}
	ev, err := newCELEvaluator(h.ScoreLister())
	if err != nil {
		return nil, fmt.Errorf("creating the CEL environment: %w", err)
	}
	return &Predicate{cel: ev}, nil
}

// Name returns the plugin's name.
func (p *Predicate) Name() string { return Name }

// selector is one predicate prepared for a cycle. Selectors that select everything are nil so
// the per-cluster loop skips them.
type selector struct {
	labels      labels.Selector
	labelsShown string
	claims      labels.Selector
	claimsShown string
	cel         *celPrograms
}

// Filter returns the candidates that match at least one predicate. An invalid selector or a CEL
// expression that does not compile makes the placement Misconfigured, with OCM's message; a
// CEL expression that fails or is not a bool for one cluster only rejects that cluster.
func (p *Predicate) Filter(ctx context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request,
	candidates *framework.Bitset, rejections framework.Rejections) (*framework.Bitset, *framework.Status) {
	preds := req.Placement.Spec.Predicates
	// Like OCM, an empty candidate list is returned before the predicates are validated.
	if len(preds) == 0 || candidates.Count() == 0 {
		return candidates.Clone(), nil
	}
	selectors, st := p.prepare(req.Placement)
	if st != nil {
		return nil, st
	}
	usesCEL := false
	for i := range selectors {
		usesCEL = usesCEL || selectors[i].cel != nil
	}
	if usesCEL {
		p.cel.objects.prune(snap)
	}

	logger := klog.FromContext(ctx)
	out := framework.NewBitset(snap.NumClusters())
	explain := rejections != nil
	var reasons []string
	if explain {
		reasons = make([]string, len(selectors))
	}
	// Without explain, the label part of each selector is answered from the snapshot's label
	// index: a cluster whose labels a selector rules out is not looked at for that selector,
	// just as matches would stop at its labels (before claims and CEL, so no CEL cost is
	// skipped that would have counted). Results are those of the walk over every candidate.
	var narrowed []*framework.Bitset
	var labelsKnown []bool
	visit := candidates
	if !explain {
		narrowed = make([]*framework.Bitset, len(selectors))
		labelsKnown = make([]bool, len(selectors))
		visit = framework.NewBitset(snap.NumClusters())
		for k := range selectors {
			narrowed[k] = candidates
			if selectors[k].labels != nil {
				if b, ok := snap.MatchingLabels(selectors[k].labels); ok {
					b.And(candidates)
					narrowed[k], labelsKnown[k] = b, true
				}
			}
			visit.Or(narrowed[k])
		}
	}
	var spent uint64
	var stop *framework.Status
	visit.ForEach(func(i int) {
		if stop != nil {
			return
		}
		if err := ctx.Err(); err != nil {
			stop = framework.AsStatus(fmt.Errorf("evaluating predicates: %w", err))
			return
		}
		info := snap.Cluster(i)
		// Each selector is evaluated once per cluster; with explain, its reason comes from
		// that same evaluation.
		for k := range selectors {
			if narrowed != nil && !narrowed[k].Has(i) {
				continue
			}
			m := p.matches(ctx, logger, &selectors[k], info, explain, labelsKnown != nil && labelsKnown[k])
			spent += m.cost
			if m.tooCostly != "" {
				stop = framework.Misconfiguredf("%s", m.tooCostly)
				return
			}
			if spent > cycleCostBudget {
				stop = framework.Misconfiguredf("the CEL expressions of the predicates cost more than %d over %d clusters, the limit of one scheduling cycle: "+
					"simplify them, or select fewer clusters with label or claim selectors first", cycleCostBudget, i+1)
				return
			}
			if m.ok {
				out.Set(i)
				return
			}
			if explain {
				reasons[k] = m.reason
			}
		}
		if explain {
			framework.Rejectf(rejections, i, "no predicate matches: %s", strings.Join(reasons, "; "))
		}
	})
	if stop != nil {
		return nil, stop
	}
	return out, nil
}

// prepare builds the selectors of every predicate, in order, and returns the first
// misconfiguration as OCM reports it.
func (p *Predicate) prepare(pl *clusterv1beta1.Placement) ([]selector, *framework.Status) {
	programs, st := p.cel.programsFor(pl)
	if st != nil {
		return nil, st
	}
	selectors := make([]selector, len(pl.Spec.Predicates))
	for i := range pl.Spec.Predicates {
		rcs := &pl.Spec.Predicates[i].RequiredClusterSelector
		ls, err := metav1.LabelSelectorAsSelector(&rcs.LabelSelector)
		if err != nil {
			return nil, framework.Misconfiguredf("%s", err.Error())
		}
		cs, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: rcs.ClaimSelector.MatchExpressions})
		if err != nil {
			return nil, framework.Misconfiguredf("%s", err.Error())
		}
		if !ls.Empty() {
			selectors[i].labels, selectors[i].labelsShown = ls, ls.String()
		}
		if !cs.Empty() {
			selectors[i].claims, selectors[i].claimsShown = cs, cs.String()
		}
		// OCM compiles the CEL expressions of a predicate only after both of its selectors
		// are valid, so a compile error is reported after the selector errors of the same
		// predicate and before anything in later predicates.
		if programs[i].err != "" {
			return nil, framework.Misconfiguredf("%s", programs[i].err)
		}

		if len(programs[i].programs) > 0 {
			selectors[i].cel = &programs[i]
		}
	}
	return selectors, nil
}

// match is the outcome of one predicate on one cluster.
type match struct {
	ok bool
	// reason says why not, when explaining.
	reason string
	// cost and tooCostly are the CEL evaluation's (see evaluation).
	cost      uint64
	tooCostly string
}

// matches reports whether the cluster matches the predicate and, when explain is set and it
// does not, why. Reasons are built only for explain so the common path does not allocate.
// labelsMatch says the label selector is already known to match.
func (p *Predicate) matches(ctx context.Context, logger klog.Logger, s *selector, info *framework.ClusterInfo, explain, labelsMatch bool) match {
	if s.labels != nil && !labelsMatch && !s.labels.Matches(labels.Set(info.Cluster.Labels)) {
		if !explain {
			return match{}
		}
		return match{reason: fmt.Sprintf("labels do not match %q", s.labelsShown)}
	}
	if s.claims != nil && !s.claims.Matches(info.Claims) {
		if !explain {
			return match{}
		}
		return match{reason: fmt.Sprintf("claims do not match %q", s.claimsShown)}
	}
	if s.cel == nil {
		return match{ok: true}
	}
	ev := p.cel.evaluate(ctx, logger, s.cel, info.Cluster)
	m := match{ok: ev.failed < 0, cost: ev.cost, tooCostly: ev.tooCostly}
	if !m.ok && explain {
		m.reason = fmt.Sprintf("CEL expression %q %s", s.cel.expressions[ev.failed], ev.cause)
	}
	return m
}
