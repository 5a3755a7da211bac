package emco

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	hpaintentctrl "github.com/fleetfit/fleetfit/pkg/controller/hpaintent"
	"github.com/fleetfit/fleetfit/pkg/emco"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// step is one call of EMCO's usage example: a POST of a YAML body to a path below
// .../hpa-intents.
type step struct {
	path, body string
}

// fwallSteps and analyticsSteps are EMCO's usage example ("HPA intent for fwall app",
// "HPA intent for analytics app"), body for body as EMCO's design writes them.
var fwallSteps = []step{
	{"", `
metadata:
   name: fwall-hpa-intent
   description: Assign resurces to core-fwall and api-server
   userData1: foo
   userData2: bar
spec:
   app: fwall
`},
	{"/fwall-hpa-intent/hpa-resource-consumers", `
metadata:
   name: core-fwall
   description: core-fwall microservice
spec:
   consumer:
      apiVersion: apps/v1
      kind: StatefulSet
      name: core-fwall
      container-name: palo-alto-e3000
`},
	{"/fwall-hpa-intent/hpa-resource-consumers", `
metadata:
   name: api-server
   description: api-server microservice
spec:
   consumer:
      apiVersion: apps/v1
      kind: Deployment
      name: api-server
      container-name: nginx
`},
	{"/fwall-hpa-intent/hpa-resource-consumers/core-fwall/resource-requirements", `
metadata:
   name: core-fwall-cpu-requirement
spec:
   mandatory: true
   allocatable: true
   name: cpu
   requests: 4
   limits: 4
`},
	{"/fwall-hpa-intent/hpa-resource-consumers/core-fwall/resource-requirements", `
metadata:
   name: core-fwall-RAM-needs
spec:
   mandatory: true
   allocatable: true
   name: memory
   requests: 1000
   limits: 1000
   units: MB
`},
	{"/fwall-hpa-intent/hpa-resource-consumers/core-fwall/resource-requirements", `
metadata:
   name: core-fwall-gpu-needs
spec:
   mandatory: false
   weight: 9
   allocatable: true
   name: nvidia.com/gpu
   limits: 1
`},
	{"/fwall-hpa-intent/hpa-resource-consumers/api-server/resource-requirements", `
metadata:
   name: api-server-cpu-needs
spec:
   mandatory: true
   allocatable: true
   name: cpu
   requests: 1
   limits: 2
`},
	{"/fwall-hpa-intent/hpa-resource-consumers/api-server/resource-requirements", `
metadata:
   name: api-server-ram-needs
spec:
   mandatory: true
   allocatable: true
   name: memory
   requests: 200
   units: MB
`},
}

var analyticsSteps = []step{
	{"", `
metadata:
   name: analytics-hpa-intent
   description: Assign resurces to ai-model and logger
   userData1: foo
   userData2: bar
spec:
   app: analytics
`},
	{"/analytics-hpa-intent/hpa-resource-consumers", `
metadata:
   name: ai-model
   description: ai-model microservice
spec:
   consumer:
      apiVersion: apps/v1
      kind: StatefulSet
      name: ai-model
      container-name: openvino
`},
	{"/analytics-hpa-intent/hpa-resource-consumers", `
metadata:
   name: logger
   description: logger microservice
spec:
   consumer:
      apiVersion: apps/v1
      kind: Deployment
      name: logger
      container-name: logger
`},
	{"/analytics-hpa-intent/hpa-resource-consumers/ai-model/resource-requirements", `
metadata:
   name: ai-model-cpu-requirement
spec:
   mandatory: true
   allocatable: true
   name: cpu
   requests: 2
`},
	{"/analytics-hpa-intent/hpa-resource-consumers/logger/resource-requirements", `
metadata:
   name: logger-cpu-needs
spec:
   mandatory: true
   allocatable: true
   name: intel.com/qat
   requests: 1
   limits: 1
`},
}

// TestReplayUsageExample replays EMCO's usage example over HTTPS, then checks that the
// HPAIntents it made are deploy/examples/fwall.yaml's intent in substance (and EMCO's
// analytics intent), that the API returns what was posted, that fleetfit-hub schedules both
// apps onto the one cluster that can host them, and that deleting in the reverse order
// removes everything.
func TestReplayUsageExample(t *testing.T) {
	e := newEnv(t, "my-proj1")
	// One cluster has room for every consumer (and the optional GPU); the other has 2 cores
	// and no QAT: too little for core-fwall, and no room for logger.
	big := e.createCluster("big", utiltesting.MakeNode("big").Resource(corev1.ResourceCPU, "32").Resource(corev1.ResourceMemory, "128Gi").
		Resource("nvidia.com/gpu", "2").Resource("intel.com/qat", "4").Obj())
	e.createCluster("small", utiltesting.MakeNode("small").Resource(corev1.ResourceCPU, "2").Resource(corev1.ResourceMemory, "8Gi").Obj())
	e.createPlacement("fwall")
	e.createPlacement("analytics")
	c := e.client(editor)
	// Without intents, the hub decides one cluster for each app, either one.
	before := map[string][]string{}
	for _, app := range []string{"fwall", "analytics"} {
		framework.Eventually(t, func(ctx context.Context) error {
			decided, err := e.decided(ctx, app)
			if err == nil && len(decided) != 1 {
				err = fmt.Errorf("placement %s decides %v, want one cluster", app, decided)
			}
			before[app] = decided
			return err
		})
	}

	// The empty intent is stored, and incomplete until it has consumers with requirements;
	// meanwhile, and while its consumers have no requirements, its Placement keeps its
	// decisions.
	c.must(http.StatusCreated, http.MethodPost, fwallSteps[0].path, "application/yaml", fwallSteps[0].body, nil)
	e.waitStatus(c, "fwall-hpa-intent", func(s emco.Status) error {
		if s.Valid == nil || !s.Valid.Current || s.Valid.Reason != hpaintentctrl.ReasonIncomplete || !strings.Contains(s.Valid.Message, "no consumers") {
			return fmt.Errorf("valid %+v, want Incomplete naming the missing consumers", s.Valid)
		}
		return nil
	})
	for _, s := range fwallSteps[1:3] {
		c.must(http.StatusCreated, http.MethodPost, s.path, "application/yaml", s.body, nil)
	}
	e.waitStatus(c, "fwall-hpa-intent", func(s emco.Status) error {
		if s.Valid == nil || !s.Valid.Current || s.Valid.Reason != hpaintentctrl.ReasonIncomplete ||
			!strings.Contains(s.Valid.Message, `consumers "core-fwall", "api-server" have no requirements yet`) {
			return fmt.Errorf("valid %+v, want Incomplete naming both consumers", s.Valid)
		}
		return nil
	})
	framework.Consistently(t, 2*time.Second, func(ctx context.Context) error {
		decided, err := e.decided(ctx, "fwall")
		if err == nil && !slices.Equal(decided, before["fwall"]) {
			err = fmt.Errorf("the incomplete intent moved fwall from %v to %v", before["fwall"], decided)
		}
		return err
	})
	for _, s := range append(fwallSteps[3:], analyticsSteps...) {
		c.must(http.StatusCreated, http.MethodPost, s.path, "application/yaml", s.body, nil)
	}

	t.Run("fwall is deploy/examples/fwall.yaml in substance", func(t *testing.T) {
		raw, err := os.ReadFile("../../../deploy/examples/fwall.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var example v1alpha1.HPAIntent
		if err := yaml.UnmarshalStrict(raw, &example); err != nil {
			t.Fatal(err)
		}
		want, extras := substance(&example.Spec)
		// The example says two things EMCO's usage example does not: that core-fwall's cores
		// are exclusive (EMCO gets them from requests = limits alone) and that api-server
		// needs AVX-512.
		if diff := cmp.Diff([]string{"api-server: feature feature.node.kubernetes.io/cpu-cpuid.AVX512F Exists", "core-fwall: exclusiveCPU"}, extras); diff != "" {
			t.Errorf("what fwall.yaml says beyond EMCO's example (-want,+got):\n%s", diff)
		}
		stored := e.intent("fwall-hpa-intent")
		if raw, err := yaml.Marshal(stored); err == nil {
			t.Logf("fwall-hpa-intent as stored:\n%s", raw)
		}
		got, gotExtras := substance(&stored.Spec)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("fwall-hpa-intent (-fwall.yaml,+replayed):\n%s", diff)
		}
		if len(gotExtras) > 0 {
			t.Errorf("the replayed intent has %v", gotExtras)
		}
	})

	t.Run("analytics is EMCO's intent", func(t *testing.T) {
		want := utiltesting.MakeHPAIntent("analytics-hpa-intent", e.project).Placement("analytics").Consumer(
			utiltesting.MakeConsumer("ai-model").Target("StatefulSet", "ai-model", "openvino").
				Requirement(utiltesting.MakeResource("ai-model-cpu-requirement", "cpu").Requests("2").Obj()).Obj(),
			utiltesting.MakeConsumer("logger").Target("Deployment", "logger", "logger").
				Requirement(utiltesting.MakeResource("logger-cpu-needs", "intel.com/qat").Requests("1").Limits("1").Obj()).Obj(),
		).Obj()
		wantSubstance, _ := substance(&want.Spec)
		got, _ := substance(&e.intent("analytics-hpa-intent").Spec)
		if diff := cmp.Diff(wantSubstance, got); diff != "" {
			t.Errorf("analytics-hpa-intent (-want,+got):\n%s", diff)
		}
	})

	t.Run("GET returns what was posted", func(t *testing.T) {
		var got emco.Intent
		c.must(http.StatusOK, http.MethodGet, "/fwall-hpa-intent", "", "", &got)
		if got.Metadata != (emco.Metadata{Name: "fwall-hpa-intent", Description: "Assign resurces to core-fwall and api-server", UserData1: "foo", UserData2: "bar"}) {
			t.Errorf("metadata %+v", got.Metadata)
		}
		if got.Spec.App != "fwall" || len(got.Spec.ResourceConsumers) != 2 {
			t.Fatalf("spec %+v, want app fwall with two consumers", got.Spec)
		}
		core := got.Spec.ResourceConsumers[0]
		if core.Metadata.Description != "core-fwall microservice" || core.Spec.Consumer.ContainerName != "palo-alto-e3000" {
			t.Errorf("core-fwall %+v", core)
		}
		var ram emco.Requirement
		c.must(http.StatusOK, http.MethodGet, "/fwall-hpa-intent/hpa-resource-consumers/core-fwall/resource-requirements/core-fwall-RAM-needs", "", "", &ram)
		if string(ram.Spec.Requests) != "1000" || string(ram.Spec.Limits) != "1000" || ram.Spec.Units != "MB" || ram.Spec.Name != "memory" ||
			ram.Spec.Mandatory == nil || !*ram.Spec.Mandatory || ram.Spec.Allocatable == nil || !*ram.Spec.Allocatable {
			t.Errorf("core-fwall-RAM-needs %+v, want requests and limits 1000 in units MB, as posted", ram.Spec)
		}
		var intents []emco.Intent
		c.must(http.StatusOK, http.MethodGet, "", "", "", &intents)
		if len(intents) != 2 || intents[0].Metadata.Name != "analytics-hpa-intent" || intents[1].Metadata.Name != "fwall-hpa-intent" {
			t.Errorf("GET hpa-intents: %+v", intents)
		}
	})

	t.Run("fleetfit-hub schedules both", func(t *testing.T) {
		for _, name := range []string{"fwall-hpa-intent", "analytics-hpa-intent"} {
			e.waitStatus(c, name, func(s emco.Status) error {
				if s.Valid == nil || s.Valid.Status != "True" || s.Scheduled == nil || s.Scheduled.Status != "True" || !s.Scheduled.Current {
					return fmt.Errorf("valid %+v, scheduled %+v, want both True", s.Valid, s.Scheduled)
				}
				if !slices.Equal(s.Clusters, []string{big}) {
					return fmt.Errorf("clusters %v, want [%s]", s.Clusters, big)
				}
				if len(s.Candidates) != 2 {
					return fmt.Errorf("candidates %+v, want one per consumer", s.Candidates)
				}
				return nil
			})
		}
	})

	t.Run("deleting in the reverse order removes everything", func(t *testing.T) {
		for _, steps := range [][]step{analyticsSteps, fwallSteps} {
			for i := len(steps) - 1; i >= 0; i-- {
				var body struct{ Metadata emco.Metadata }
				if err := yaml.Unmarshal([]byte(steps[i].body), &body); err != nil {
					t.Fatal(err)
				}
				c.must(http.StatusNoContent, http.MethodDelete, steps[i].path+"/"+body.Metadata.Name, "", "", nil)
			}
		}
		var intents []emco.Intent
		if c.must(http.StatusOK, http.MethodGet, "", "", "", &intents); len(intents) != 0 {
			t.Errorf("intents left: %+v", intents)
		}
		list, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.project).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range list.Items {
			if in.DeletionTimestamp.IsZero() {
				t.Errorf("HPAIntent %s is left", in.Name)
			}
		}
	})
}

// decided returns the clusters the decisions of a Placement of the project name, sorted.
func (e *env) decided(ctx context.Context, placement string) ([]string, error) {
	list, err := e.clusters.ClusterV1beta1().PlacementDecisions(e.project).List(ctx, metav1.ListOptions{
		LabelSelector: clusterv1beta1.PlacementLabel + "=" + placement,
	})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range list.Items {
		for _, c := range d.Status.Decisions {
			names = append(names, c.ClusterName)
		}
	}
	slices.Sort(names)
	return names, nil
}

// intent reads an HPAIntent of the project.
func (e *env) intent(name string) *v1alpha1.HPAIntent {
	e.t.Helper()
	in, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.project).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return in
}

// waitStatus waits until GET .../status of the intent passes ok.
func (e *env) waitStatus(c *client, name string, ok func(emco.Status) error) {
	e.t.Helper()
	framework.Eventually(e.t, func(ctx context.Context) error {
		var s emco.Status
		code, body := c.do(ctx, http.MethodGet, "/"+name+"/status", "", nil)
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		if err := yaml.Unmarshal([]byte(body), &s); err != nil {
			return err
		}
		return ok(s)
	})
}

// substance is what an intent asks for, by consumer, in a form that compares intents that
// say the same thing in other words: the target, and each requirement's resource with its
// amounts in Kubernetes units (1000 with units MB is 1G), mandatory or its weight, sorted.
// Requirement names are left out (EMCO's are longer), and so is what EMCO's example does
// not say, which is returned as extras: exclusiveCPU and node features.
func substance(spec *v1alpha1.HPAIntentSpec) (consumers map[string][]string, extras []string) {
	consumers = map[string][]string{}
	for _, c := range spec.Consumers {
		lines := []string{fmt.Sprintf("target %s %s %s container %s", c.Target.APIVersion, c.Target.Kind, c.Target.Name, c.Target.Container)}
		if c.ExclusiveCPU {
			extras = append(extras, c.Name+": exclusiveCPU")
		}
		for i := range c.Requirements {
			r := &c.Requirements[i]
			if r.Feature != nil {
				extras = append(extras, fmt.Sprintf("%s: feature %s %s", c.Name, r.Feature.Key, r.Feature.Operator))
				continue
			}
			requests, err := r.Resource.EffectiveRequests()
			if err != nil {
				panic(err)
			}
			line := fmt.Sprintf("%s requests %s", r.Resource.Name, requests.String())
			if limits, err := r.Resource.EffectiveLimits(); err != nil {
				panic(err)
			} else if limits != nil {
				line += " limits " + limits.String()
			}
			if r.IsMandatory() {
				line += " mandatory"
			} else {
				line += fmt.Sprintf(" weight %d", r.EffectiveWeight())
			}
			lines = append(lines, line)
		}
		slices.Sort(lines)
		consumers[c.Name] = lines
	}
	slices.Sort(extras)
	return consumers, extras
}
