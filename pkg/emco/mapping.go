package emco

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	apivalidation "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1/validation"
)

// Labels of an HPAIntent written through the API: where in EMCO's tree it lives.
const (
	LabelCompositeApp          = "emco.fleetfit.io/composite-app"
	LabelCompositeAppVersion   = "emco.fleetfit.io/composite-app-version"
	LabelDeploymentIntentGroup = "emco.fleetfit.io/deployment-intent-group"
)

// Annotations of an HPAIntent written through the API: what EMCO's bodies
// hold that the HPAIntent has no field for.
const (
	AnnotationDescription = "emco.fleetfit.io/description"
	AnnotationUserData1   = "emco.fleetfit.io/user-data1"
	AnnotationUserData2   = "emco.fleetfit.io/user-data2"
	// AnnotationParts holds, as JSON (parts), the metadata of the consumers
	// and requirements and how their amounts were spelt.
	AnnotationParts = "emco.fleetfit.io/parts"
)

// parts is what AnnotationParts holds, by consumer name.
type parts map[string]*consumerPart

type consumerPart struct {
	partMetadata
	Requirements map[string]*requirementPart `json:"requirements,omitempty"`
}

// partMetadata is a part's Metadata as kept: without the name, which the
// HPAIntent holds, and without what is empty.
type partMetadata struct {
	Description string `json:"description,omitempty"`
	UserData1   string `json:"userData1,omitempty"`
	UserData2   string `json:"userData2,omitempty"`
}

func storedMetadata(m Metadata) partMetadata {
	return partMetadata{Description: m.Description, UserData1: m.UserData1, UserData2: m.UserData2}
}

func (m partMetadata) named(name string) Metadata {
	return Metadata{Name: name, Description: m.Description, UserData1: m.UserData1, UserData2: m.UserData2}
}

// requirementPart is a requirement's metadata and spelling: its amounts as
// posted (JSON numbers or strings), and the name given to a node label.
type requirementPart struct {
	partMetadata
	Requests json.RawMessage `json:"requests,omitempty"`
	Limits   json.RawMessage `json:"limits,omitempty"`
	// LabelAs is "name" when a node label was posted as name (EMCO's
	// form) rather than key.
	LabelAs string `json:"labelAs,omitempty"`
}

// partsOf reads the annotation; a missing or unreadable one (edited by
// hand) gives empty parts, which only lose descriptions and spellings.
func partsOf(in *v1alpha1.HPAIntent) parts {
	p := parts{}
	if raw, ok := in.Annotations[AnnotationParts]; ok {
		_ = json.Unmarshal([]byte(raw), &p)
	}
	return p
}

func (p parts) consumer(name string) *consumerPart {
	if p[name] == nil {
		p[name] = &consumerPart{}
	}
	return p[name]
}

func (p parts) requirement(consumer, name string) *requirementPart {
	c := p.consumer(consumer)
	if c.Requirements == nil {
		c.Requirements = map[string]*requirementPart{}
	}
	if c.Requirements[name] == nil {
		c.Requirements[name] = &requirementPart{}
	}
	return c.Requirements[name]
}

// store writes p into in's annotations, keeping only the parts of the
// consumers and requirements in has.
func (p parts) store(in *v1alpha1.HPAIntent) {
	kept := parts{}
	for i := range in.Spec.Consumers {
		c := &in.Spec.Consumers[i]
		old := p[c.Name]
		if old == nil {
			continue
		}
		part := &consumerPart{partMetadata: old.partMetadata}
		for j := range c.Requirements {
			if r := old.Requirements[c.Requirements[j].Name]; r != nil {
				if part.Requirements == nil {
					part.Requirements = map[string]*requirementPart{}
				}
				part.Requirements[c.Requirements[j].Name] = r
			}
		}
		kept[c.Name] = part
	}
	if len(kept) == 0 {
		delete(in.Annotations, AnnotationParts)
		return
	}
	raw, _ := json.Marshal(kept)
	if in.Annotations == nil {
		in.Annotations = map[string]string{}
	}
	in.Annotations[AnnotationParts] = string(raw)
}

// setIntentMetadata writes an intent's description and userData.
func setIntentMetadata(in *v1alpha1.HPAIntent, m Metadata) {
	if in.Annotations == nil {
		in.Annotations = map[string]string{}
	}
	for key, v := range map[string]string{AnnotationDescription: m.Description, AnnotationUserData1: m.UserData1, AnnotationUserData2: m.UserData2} {
		if v == "" {
			delete(in.Annotations, key)
		} else {
			in.Annotations[key] = v
		}
	}
}

// intentOf returns the EMCO intent of an HPAIntent, with its consumers and
// their requirements.
func intentOf(in *v1alpha1.HPAIntent) Intent {
	out := Intent{
		Metadata: Metadata{
			Name:        in.Name,
			Description: in.Annotations[AnnotationDescription],
			UserData1:   in.Annotations[AnnotationUserData1],
			UserData2:   in.Annotations[AnnotationUserData2],
		},
		Spec: IntentSpec{App: in.Spec.PlacementRef.Name, ResourceConsumers: []Consumer{}},
	}
	p := partsOf(in)
	for i := range in.Spec.Consumers {
		out.Spec.ResourceConsumers = append(out.Spec.ResourceConsumers, consumerOf(&in.Spec.Consumers[i], p))
	}
	return out
}

func consumerOf(c *v1alpha1.ResourceConsumer, p parts) Consumer {
	out := Consumer{
		Spec: ConsumerSpec{
			Consumer: ConsumerRef{
				APIVersion: c.Target.APIVersion, Kind: c.Target.Kind, Name: c.Target.Name, ContainerName: c.Target.Container,
			},
			ResourceRequirements: []Requirement{},
		},
	}
	out.Metadata.Name = c.Name
	if part := p[c.Name]; part != nil {
		out.Metadata = part.named(c.Name)
	}
	for j := range c.Requirements {
		out.Spec.ResourceRequirements = append(out.Spec.ResourceRequirements, requirementOf(c.Name, &c.Requirements[j], p))
	}
	return out
}

func requirementOf(consumer string, r *v1alpha1.ResourceRequirement, p parts) Requirement {
	var part requirementPart
	if c := p[consumer]; c != nil && c.Requirements[r.Name] != nil {
		part = *c.Requirements[r.Name]
	}
	out := Requirement{Metadata: part.named(r.Name)}
	mandatory := r.IsMandatory()
	out.Spec.Mandatory = &mandatory
	if r.Weight != nil {
		w := *r.Weight
		out.Spec.Weight = &w
	}
	allocatable := r.Resource != nil
	out.Spec.Allocatable = &allocatable
	switch {
	case r.Resource != nil:
		out.Spec.Name = r.Resource.Name
		out.Spec.Units = r.Resource.Units
		out.Spec.Requests = amountOut(r.Resource.Requests, part.Requests)
		out.Spec.Limits = amountOut(r.Resource.Limits, part.Limits)
	case r.Feature != nil:
		if part.LabelAs == "name" {
			out.Spec.Name = r.Feature.Key
		} else {
			out.Spec.Key = r.Feature.Key
		}
		out.Spec.Value = r.Feature.Value
		switch {
		case r.Feature.Value == "" && (r.Feature.Operator == corev1.NodeSelectorOpIn || r.Feature.Operator == "") && len(r.Feature.Values) == 1:
			out.Spec.Value = r.Feature.Values[0]
		case r.Feature.Value == "":
			out.Spec.Operator = string(r.Feature.Operator)
			out.Spec.Values = r.Feature.Values
		}
	}
	return out
}

// amountOut returns q as posted when the posted spelling still means q (the
// object may have been changed since by other means), else as a JSON number
// when it is a plain whole number and as a quantity string otherwise.
func amountOut(q *resource.Quantity, posted json.RawMessage) json.RawMessage {
	if q == nil {
		return nil
	}
	if was, err := parseAmount(posted); err == nil && was.Cmp(*q) == 0 {
		return posted
	}
	s := q.String()
	if _, err := strconv.ParseUint(s, 10, 64); err == nil {
		return json.RawMessage(s)
	}
	raw, _ := json.Marshal(s)
	return raw
}

// parseAmount reads an amount of a request: a JSON number, or a string
// holding a Kubernetes quantity.
func parseAmount(raw json.RawMessage) (resource.Quantity, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return resource.Quantity{}, errNoAmount
	}
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return resource.Quantity{}, err
		}
	} else if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return resource.Quantity{}, errNotAmount
	}
	return resource.ParseQuantity(text)
}

// amountText is an amount as written: a JSON string's text, or the number.
func amountText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var text string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &text) == nil {
		return text
	}
	return string(raw)
}

var (
	errNoAmount  = errors.New("no amount")
	errNotAmount = errors.New("not a number or a string")
)

// consumerFrom returns the consumer a request describes, with no requirements.
func consumerFrom(c *Consumer) (v1alpha1.ResourceConsumer, *Error) {
	if c.Spec.ResourceRequirements != nil {
		return v1alpha1.ResourceConsumer{}, badRequest("spec.resourceRequirements: Forbidden: post each requirement to .../hpa-resource-consumers/%s/resource-requirements", c.Metadata.Name)
	}
	ref := c.Spec.Consumer
	for _, e := range []*Error{
		bodyName("metadata.name", c.Metadata.Name, isEMCOName),
		bodyName("spec.consumer.name", ref.Name, validation.IsDNS1123Subdomain),
		bodyName("spec.consumer.container-name", ref.ContainerName, validation.IsDNS1123Label),
	} {
		if e != nil {
			return v1alpha1.ResourceConsumer{}, e
		}
	}
	return v1alpha1.ResourceConsumer{
		Name:   c.Metadata.Name,
		Target: v1alpha1.ConsumerTarget{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, Container: ref.ContainerName},
	}, nil
}

// requirementFrom returns the requirement a request describes, and its part
// (metadata and spelling). It checks the EMCO shape — allocatable or not, and
// the fields each allows — and leaves every other check to validation, so
// that messages are admission's.
func requirementFrom(r *Requirement) (v1alpha1.ResourceRequirement, *requirementPart, *Error) {
	s := &r.Spec
	out := v1alpha1.ResourceRequirement{Name: r.Metadata.Name, Mandatory: s.Mandatory, Weight: s.Weight}
	part := &requirementPart{partMetadata: storedMetadata(r.Metadata)}
	specPath := field.NewPath("spec")
	if err := bodyName("metadata.name", r.Metadata.Name, isEMCOName); err != nil {
		return out, nil, err
	}
	if s.Allocatable == nil {
		return out, nil, badRequest("%s", field.Required(specPath.Child("allocatable"),
			"true for an amount of a resource (name, requests, limits, units), false for a node label (key or name, value)").Error())
	}
	forbid := func(set bool, name, why string) *Error {
		if set {
			return badRequest("%s", field.Forbidden(specPath.Child(name), why).Error())
		}
		return nil
	}
	if *s.Allocatable {
		for _, e := range []*Error{
			forbid(s.Key != "", "key", "a node label is non-allocatable: set allocatable: false"),
			forbid(s.Value != "", "value", "a node label value is non-allocatable: set allocatable: false"),
			forbid(s.Operator != "", "operator", "a node label operator is non-allocatable: set allocatable: false"),
			forbid(s.Values != nil, "values", "node label values are non-allocatable: set allocatable: false"),
		} {
			if e != nil {
				return out, nil, e
			}
		}
		amount := &v1alpha1.ResourceAmount{Name: s.Name, Units: s.Units}
		for _, a := range []struct {
			name string
			raw  json.RawMessage
			to   **resource.Quantity
			keep *json.RawMessage
		}{{"requests", s.Requests, &amount.Requests, &part.Requests}, {"limits", s.Limits, &amount.Limits, &part.Limits}} {
			if len(a.raw) == 0 || string(a.raw) == "null" {
				continue
			}
			if text := amountText(a.raw); apivalidation.HasLongExponent(text) {
				// ParseQuantity would round it to 0 or 1n, or take long to
				// read it: refuse it, as admission refuses it.
				return out, nil, badRequest("%s", field.Invalid(specPath.Child(a.name), text,
					"an exponent has at most three digits, such as 4e9 or 4G: longer ones give amounts far beyond what fleetfit can count, or below the smallest, 1n").Error())
			}
			q, err := parseAmount(a.raw)
			if err != nil {
				return out, nil, badRequest("%s", field.Invalid(specPath.Child(a.name), string(a.raw),
					"must be a whole number (with units, EMCO's form) or a Kubernetes quantity such as 500m or \"2Gi\"").Error())
			}
			*a.to = &q
			*a.keep = append(json.RawMessage(nil), bytes.TrimSpace(a.raw)...)
		}
		out.Resource = amount
		return out, part, nil
	}
	for _, e := range []*Error{
		forbid(len(s.Requests) > 0, "requests", "only an allocatable resource has requests: set allocatable: true"),
		forbid(len(s.Limits) > 0, "limits", "only an allocatable resource has limits: set allocatable: true"),
		forbid(s.Units != "", "units", "only an allocatable resource has units: set allocatable: true"),
		forbid(s.Key != "" && s.Name != "", "name", "the node label is key (or name, as EMCO writes it), not both"),
	} {
		if e != nil {
			return out, nil, e
		}
	}
	feature := &v1alpha1.FeatureRequirement{Key: s.Key, Value: s.Value, Operator: corev1.NodeSelectorOperator(s.Operator), Values: s.Values}
	if s.Key == "" {
		feature.Key = s.Name
		if s.Name != "" {
			part.LabelAs = "name"
		}
	}
	out.Feature = feature
	return out, part, nil
}
