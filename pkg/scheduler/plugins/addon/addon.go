// Package addon holds the AddOn prioritizer, which ranks clusters by a score that an add-on
// publishes in an AddOnPlacementScore in each cluster's namespace, as OCM's does.
//
// A cluster scores the value of the named score in the AddOnPlacementScore named by the
// coordinate's resourceName, and 0 when the object or the score is missing. When the object's
// validUntil is before the cycle's time, the cluster scores 0 and the prioritizer returns a
// Warning naming every expired object ("AddOnPlacementScores <ns>/<name> ... expired"), in
// cluster-name order. Values are not clamped here: the scheduler clamps every score to
// [-100, 100].
package addon

import (
	"context"
	"errors"
	"strings"
	"time"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Name is the registry name of the AddOn prioritizer; each instance names itself
// "AddOn/<resourceName>/<scoreName>" as OCM does.
const Name = "AddOn"

// AddOn scores clusters from one score of an AddOnPlacementScore.
type AddOn struct {
	name         string
	resourceName string
	scoreName    string
}

var (
	_ framework.ScorePlugin       = &AddOn{}
	_ framework.EnqueueExtensions = &AddOn{}
	_ framework.MovePolicy        = &AddOn{}
)

// New is the plugin's factory; it needs the coordinate's AddOn.
func New(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	a := args.AddOn
	if a == nil {
		return nil, errors.New("addOn should not be empty")
	}
	if a.ResourceName == "" || a.ScoreName == "" {
		return nil, errors.New("addOn needs a resourceName and a scoreName")
	}
	return newAddOn(a), nil
}

func newAddOn(a *clusterv1beta1.AddOnScore) *AddOn {
	return &AddOn{name: Name + "/" + a.ResourceName + "/" + a.ScoreName, resourceName: a.ResourceName, scoreName: a.ScoreName}
}

// Name returns "AddOn/<resourceName>/<scoreName>".
func (a *AddOn) Name() string { return a.name }

// Watches implements framework.EnqueueExtensions: the prioritizer reads every score.
func (a *AddOn) Watches(req *framework.Request) bool { return true }

// ClusterChanged implements framework.EnqueueExtensions: the cluster's value of the score
// changed (appeared, expired, or took another value), and the placement decides the cluster
// or follows its scores. Other scores of the same object, and a rewrite with the same values,
// requeue nothing.
func (a *AddOn) ClusterChanged(ev framework.ClusterEvent, t *framework.Target) framework.QueueingHint {
	if !t.Decides && !t.Follows {
		return framework.QueueSkip
	}
	if ev.Old == nil {
		return framework.Queue
	}
	v0, ok0 := a.value(ev.Old, ev.Now)
	v1, ok1 := a.value(ev.New, ev.Now)
	if ok0 != ok1 || v0 != v1 {
		return framework.Queue
	}
	return framework.QueueSkip
}

// value returns the cluster's score at now; ok is false when the object or the score is
// missing, or the object has expired.
func (a *AddOn) value(info *framework.ClusterInfo, now time.Time) (v int64, ok bool) {
	obj := info.Scores[a.resourceName]
	if obj == nil {
		return 0, false
	}
	if u := obj.Status.ValidUntil; u != nil && now.After(u.Time) {
		return 0, false
	}
	for _, item := range obj.Status.Scores {
		if item.Name == a.scoreName {
			v, ok = int64(item.Value), true
		}
	}
	return v, ok
}

// MoveRole implements framework.MovePolicy: the prioritizer reads what an add-on reports of
// each cluster.
func (a *AddOn) MoveRole() framework.MoveRole { return framework.MoveFollows }

// Score reads the cluster's AddOnPlacementScore from the snapshot. Expired objects are
// collected into one Warning.
func (a *AddOn) Score(_ context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request, feasible *framework.Bitset, scores []int64) *framework.Status {
	var expired strings.Builder
	feasible.ForEach(func(i int) {
		obj := snap.Cluster(i).Scores[a.resourceName]
		if obj == nil {
			return
		}
		if v := obj.Status.ValidUntil; v != nil && req.Now.After(v.Time) {
			expired.WriteString(" ")
			expired.WriteString(snap.Cluster(i).Name())
			expired.WriteString("/")
			expired.WriteString(a.resourceName)
			return
		}
		// Like OCM, the last item with the name wins if an add-on lists it twice.
		for _, item := range obj.Status.Scores {
			if item.Name == a.scoreName {
				scores[i] = int64(item.Value)
			}
		}
	})
	if expired.Len() > 0 {
		return framework.NewStatus(framework.Warning, "AddOnPlacementScores"+expired.String()+" expired")
	}
	return nil
}
