package scheduler

import (
	"k8s.io/utils/clock"
	clusterlisterv1alpha1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

type handle struct {
	clock  clock.PassiveClock
	scores clusterlisterv1alpha1.AddOnPlacementScoreLister
}

// NewHandle returns the handle plugins are created with.
func NewHandle(c clock.PassiveClock, scores clusterlisterv1alpha1.AddOnPlacementScoreLister) framework.Handle {
	return &handle{clock: c, scores: scores}
}

func (h *handle) Clock() clock.PassiveClock { return h.clock }

func (h *handle) ScoreLister() clusterlisterv1alpha1.AddOnPlacementScoreLister { return h.scores }
