// Package tainttoleration keeps placements off clusters whose taints they do not tolerate,
// with OCM's semantics, and adds a prioritizer that OCM lacks: clusters with a PreferNoSelect
// taint the placement does not tolerate get the lowest score.
package tainttoleration

import (
	"context"
	"fmt"
	"time"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Name is the plugin's name in the registry and the builtIn prioritizer name.
const Name = "TaintToleration"

// TaintToleration is a filter, a prioritizer and a requeuer; it holds no state, so one
// instance serves every placement concurrently.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin  = &TaintToleration{}
	_ framework.ScorePlugin   = &TaintToleration{}
	_ framework.RequeuePlugin = &TaintToleration{}
)

// New creates the plugin. It takes no arguments.
func New(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	if args.Param != "" || args.AddOn != nil {
		return nil, fmt.Errorf("%s takes no arguments", Name)
	}
	return &TaintToleration{}, nil
}

// Name returns the plugin's name.
func (*TaintToleration) Name() string { return Name }

// Filter keeps the candidates whose NoSelect and NoSelectIfNew taints the placement tolerates.
// NoSelectIfNew taints do not affect clusters already decided, and PreferNoSelect taints never
// filter. Invalid tolerations make the placement Misconfigured with OCM's messages.
func (*TaintToleration) Filter(_ context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request,
	candidates *framework.Bitset, rejections framework.Rejections) (*framework.Bitset, *framework.Status) {
	// Like OCM, an empty candidate list is returned before the tolerations are validated.
	if candidates.Count() == 0 {
		return candidates.Clone(), nil
	}
	tolerations := req.Placement.Spec.Tolerations
	if st := validate(tolerations); st != nil {
		return nil, st
	}
	// Clusters without taints pass; only the tainted candidates are looked at.
	out := candidates.Clone()
	out.AndNot(snap.Tainted())
	tainted := candidates.Clone()
	tainted.And(snap.Tainted())
	tainted.ForEach(func(i int) {
		c := snap.Cluster(i).Cluster
		v := clusterVerdict(c.Spec.Taints, tolerations, req.Decided.Has(i), req.Now)
		if v.tolerated {
			out.Set(i)
			return
		}
		if rejections != nil {
			t := &c.Spec.Taints[v.taint]
			if v.expired.IsZero() {
				framework.Rejectf(rejections, i, "taint %s is not tolerated", taintString(t))
			} else {
				framework.Rejectf(rejections, i, "toleration for taint %s expired at %s", taintString(t), v.expired.UTC().Format(time.RFC3339))
			}
		}
	})
	return out, nil
}

// Score gives MinClusterScore to the feasible clusters that have a PreferNoSelect taint the
// placement does not tolerate (or tolerated only until a time that has passed), and 0 to the
// others.
func (*TaintToleration) Score(_ context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request,
	feasible *framework.Bitset, scores []int64) *framework.Status {
	tolerations := req.Placement.Spec.Tolerations
	feasible.ForEach(func(i int) {
		for k := range snap.Cluster(i).Cluster.Spec.Taints {
			t := &snap.Cluster(i).Cluster.Spec.Taints[k]
			if t.Effect != clusterv1.TaintEffectPreferNoSelect {
				continue
			}
			if ok, _, _ := taintTolerated(t, tolerations, req.Now); !ok {
				scores[i] = framework.MinClusterScore
				return
			}
		}
	})
	return nil
}

// RequeueAfter returns the time until the earliest toleration expiry among the clusters the
// placement currently decides that are tolerated only for a while, as OCM does, so the cycle
// that drops them runs when they stop being tolerated; 0 when there is none.
func (*TaintToleration) RequeueAfter(_ context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request) time.Duration {
	tolerations := req.Placement.Spec.Tolerations
	var earliest time.Time
	req.Decided.ForEach(func(i int) {
		c := snap.Cluster(i).Cluster
		if len(c.Spec.Taints) == 0 {
			return
		}
		v := clusterVerdict(c.Spec.Taints, tolerations, true, req.Now)
		if v.tolerated && !v.until.IsZero() && (earliest.IsZero() || v.until.Before(earliest)) {
			earliest = v.until
		}
	})
	if earliest.IsZero() {
		return 0
	}
	return earliest.Sub(req.Now)
}

// validate checks the tolerations as OCM does, with its messages.
func validate(tolerations []clusterv1beta1.Toleration) *framework.Status {
	for _, t := range tolerations {
		if t.Key == "" && t.Operator != clusterv1beta1.TolerationOpExists {
			return framework.Misconfiguredf("If the key is empty, operator must be Exists.")
		}
		if t.Operator == clusterv1beta1.TolerationOpExists && t.Value != "" {
			return framework.Misconfiguredf("If the operator is Exists, the value should be empty.")
		}
	}
	return nil
}

// verdict is whether a cluster's taints are tolerated. When tolerated, until is the earliest
// time a toleration in use expires (zero if none expires). When not, taint is the index of the
// first taint not tolerated and expired is when its matching toleration expired (zero when no
// toleration matched it).
type verdict struct {
	tolerated bool
	until     time.Time
	taint     int
	expired   time.Time
}

func clusterVerdict(taints []clusterv1.Taint, tolerations []clusterv1beta1.Toleration, decided bool, now time.Time) verdict {
	var v verdict
	for k := range taints {
		t := &taints[k]
		switch {
		case t.Effect == clusterv1.TaintEffectPreferNoSelect:
			continue
		case t.Effect == clusterv1.TaintEffectNoSelectIfNew && decided:
			continue
		}
		ok, until, expired := taintTolerated(t, tolerations, now)
		if !ok {
			return verdict{taint: k, expired: expired}
		}
		if !until.IsZero() && (v.until.IsZero() || until.Before(v.until)) {
			v.until = until
		}
	}
	v.tolerated = true
	return v
}

// taintTolerated reports whether a toleration tolerates the taint at now. The first matching
// toleration that has not expired wins, as in OCM; until is when it expires (zero if never).
// When none tolerates it, expired is the expiry of the last matching toleration, if any.
func taintTolerated(t *clusterv1.Taint, tolerations []clusterv1beta1.Toleration, now time.Time) (ok bool, until, expired time.Time) {
	for i := range tolerations {
		tol := &tolerations[i]
		if !matches(t, tol) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return true, time.Time{}, time.Time{}
		}
		end := t.TimeAdded.Add(time.Duration(*tol.TolerationSeconds) * time.Second)
		if now.Before(end) {
			return true, end, time.Time{}
		}
		expired = end
	}
	return false, time.Time{}, expired
}

// matches reports whether the toleration matches the taint, ignoring tolerationSeconds: an
// empty effect matches every effect, an empty key (with Exists) every key, and the operator
// Equal (or empty) compares values.
func matches(t *clusterv1.Taint, tol *clusterv1beta1.Toleration) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case "", clusterv1beta1.TolerationOpEqual:
		return tol.Value == t.Value
	case clusterv1beta1.TolerationOpExists:
		return true
	}
	return false
}

// taintString formats a taint as key=value:effect, or key:effect without a value.
func taintString(t *clusterv1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}
