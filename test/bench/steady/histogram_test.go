package steady

import (
	"context"
	"fmt"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fleetfit/fleetfit/test/framework"
)

// histogram is one of fleetfit-hub's Prometheus histograms, its cumulative bucket counts by
// upper bound, read to tell where a room's latency went (the hub's view lagging behind the
// reports, or a placement waiting in the queue).
type histogram struct {
	bounds []float64
	counts []uint64
	count  uint64
	sum    float64
}

// hubHistogram reads the histogram name of fleetfit-hub whose labels include match.
func hubHistogram(ctx context.Context, b *testing.B, hub *framework.ControlPlane, proc *framework.Component, name string, match map[string]string) histogram {
	body, err := framework.HubGet(ctx, hub, proc, "/metrics")
	if err != nil {
		b.Fatalf("metrics of fleetfit-hub: %v", err)
	}
	defer body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(body)
	if err != nil {
		b.Fatalf("metrics of fleetfit-hub: %v", err)
	}
	var h histogram
	fam, ok := families[name]
	if !ok {
		return h
	}
	for _, m := range fam.GetMetric() {
		if !labelsMatch(m.GetLabel(), match) || m.GetHistogram() == nil {
			continue
		}
		for _, bk := range m.GetHistogram().GetBucket() {
			h.bounds = append(h.bounds, bk.GetUpperBound())
			h.counts = append(h.counts, bk.GetCumulativeCount())
		}
		h.count, h.sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		return h
	}
	return h
}

func labelsMatch(labels []*dto.LabelPair, match map[string]string) bool {
	n := 0
	for _, l := range labels {
		if v, ok := match[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(match)
}

// since is what h observed after before was read.
func (h histogram) since(before histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]uint64, len(h.counts)), count: h.count - before.count, sum: h.sum - before.sum}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(before.counts) {
			out.counts[i] -= before.counts[i]
		}
	}
	return out
}

// upTo returns the upper bound of the bucket that holds the q-quantile (+Inf beyond the last).
func (h histogram) upTo(q float64) float64 {
	if h.count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	for i, c := range h.counts {
		if c >= rank {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}

func (h histogram) String() string {
	if h.count == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, mean %.3fs, p50 ≤ %gs, p99 ≤ %gs, max ≤ %gs", h.count, h.sum/float64(h.count), h.upTo(0.5), h.upTo(0.99), h.upTo(1))
}
