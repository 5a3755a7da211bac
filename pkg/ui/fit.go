package ui

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// FitAnswer is the request the fleet page asked, as text, and on how many clusters it fits.
type FitAnswer struct {
	Request string `json:"request"`
	Fits    int    `json:"fits"`
}

// ClusterFit says whether one replica of the request fits on one node of the cluster now,
// how many fit in all, and, when none does, why (inventory.View.FitsOnOneNode's reason, the
// one HardwareFit gives).
type ClusterFit struct {
	Fits     bool   `json:"fits"`
	Replicas int64  `json:"replicas"`
	Reason   string `json:"reason,omitempty"`
}

// fitRequest is "where does 4× A100 + 64Gi fit on one node now", compiled once per request.
type fitRequest struct {
	text    string
	request *inventory.Request
}

// parseFit reads the request of the fleet page's filter from the query: gpus (a count), model
// (a GPU model, as its nodes are labelled), gpu (the GPU resource; nvidia.com/gpu by default, or
// the one whose model label the model is found under), cpu and memory (Kubernetes quantities).
// It returns nil when none is given. The request is built as the hub builds an HPAIntent
// consumer's: the amounts on one node, the model as a node feature, and the toleration of each
// extended resource's own taint.
func parseFit(q url.Values) (*fitRequest, error) {
	gpusText, model, cpuText, memText := q.Get("gpus"), strings.TrimSpace(q.Get("model")), q.Get("cpu"), q.Get("memory")
	if gpusText == "" && model == "" && cpuText == "" && memText == "" {
		return nil, nil
	}
	device := inventory.GPUs[0]
	if name := q.Get("gpu"); name != "" {
		i := slices.IndexFunc(inventory.GPUs, func(d inventory.Device) bool { return string(d.Resource) == name })
		if i < 0 {
			return nil, fmt.Errorf("gpu %q is not a GPU resource fleetfit knows", name)
		}
		device = inventory.GPUs[i]
	}
	resources := corev1.ResourceList{}
	var parts []string
	gpus := int64(0)
	if gpusText != "" {
		n, err := strconv.ParseInt(gpusText, 10, 64)
		if err != nil || n < 0 || n > 1<<20 {
			return nil, fmt.Errorf("gpus must be a whole number of GPUs, not %q", gpusText)
		}
		gpus = n
	}
	if gpus > 0 || model != "" {
		gpus = max(gpus, 1)
		resources[device.Resource] = *resource.NewQuantity(gpus, resource.DecimalSI)
		name := model
		if name == "" {
			name = string(device.Resource)
		}
		parts = append(parts, fmt.Sprintf("%d× %s", gpus, name))
	}
	for _, a := range []struct {
		name corev1.ResourceName
		text string
	}{{corev1.ResourceCPU, cpuText}, {corev1.ResourceMemory, memText}} {
		if a.text == "" {
			continue
		}
		v, err := resource.ParseQuantity(a.text)
		if err != nil || v.Sign() < 0 {
			return nil, fmt.Errorf("%s must be a Kubernetes quantity such as 8 or 64Gi, not %q", a.name, a.text)
		}
		resources[a.name] = v
		if a.name == corev1.ResourceCPU {
			parts = append(parts, v.String()+" cpu")
		} else {
			parts = append(parts, v.String())
		}
	}
	var features []corev1.NodeSelectorRequirement
	if model != "" {
		features = append(features, corev1.NodeSelectorRequirement{Key: device.ModelLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{model}})
	}
	names := make([]corev1.ResourceName, 0, len(resources))
	for n := range resources {
		names = append(names, n)
	}
	slices.Sort(names)
	r, err := inventory.NewRequest(resources, features, inventory.ExtendedResourceTolerations(names))
	if err != nil {
		return nil, err
	}
	return &fitRequest{text: strings.Join(parts, " + ") + " on one node", request: r}, nil
}

// answer asks the cluster's inventory: nil view means no inventory.
func (f *fitRequest) answer(view *inventory.View, c *ClusterSummary) *ClusterFit {
	if view == nil {
		return &ClusterFit{Reason: "no inventory: " + c.Row.Inventory}
	}
	fits, reason := view.FitsOnOneNode(f.request)
	replicas, _ := view.MaxReplicas(f.request)
	out := &ClusterFit{Fits: fits, Replicas: replicas, Reason: reason}
	if fits && c.Stale {
		out.Reason = "its inventory is stale: the hub gives it no new decisions until its agent reports again"
	}
	return out
}
