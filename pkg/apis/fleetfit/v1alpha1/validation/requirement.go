package validation

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory/devicecel"
)

// Limits from the API types' markers.
const (
	minWeight          = 1
	maxWeight          = 10
	maxResourceNameLen = 253
	maxFeatureKeyLen   = 317
	maxFeatureValues   = 64
	maxFeatureValueLen = 63
)

// defaultOperator is what the CRD defaults an empty operator to.
const defaultOperator = corev1.NodeSelectorOpIn

// Enums of the CRD, in its order.
var (
	legacyUnits = []string{"K", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"}

	featureOperators = []corev1.NodeSelectorOperator{
		corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn,
		corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist,
		corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
	}
)

// integerValue is the CEL rule's test for the one value of Gt and Lt.
var integerValue = regexp.MustCompile(`^-?[0-9]+$`)

// longExponent is the CEL rules' test for an amount written with an exponent
// of four digits or more. The rules refuse such amounts without parsing
// them: the API server would take minutes to compare 1e709551616 with
// anything, and as long to parse 1e-709551616.
var longExponent = regexp.MustCompile(`[eE][-+]?[0-9]{4}`)

// HasLongExponent reports whether an amount is written with an exponent of
// four digits or more (1e1000, 1e-709551616): such amounts are refused
// before they are parsed, wherever fleetfit reads them.
func HasLongExponent(amount string) bool { return longExponent.MatchString(amount) }

// hasLongExponent is HasLongExponent on q as a Go client sends it.
func hasLongExponent(q *resource.Quantity) bool {
	return q != nil && HasLongExponent(q.String())
}

// Messages of the CRD's CEL rules, word for word.
const (
	msgResourceXorFeature      = "set exactly one of resource (an amount to have free on a node), feature (a node label requirement), machineType (a machine of a MachineGroup's type for each replica) or devices (DRA devices on the node)"
	msgMachineTypeAndAmounts   = "a consumer that takes a machine type gets its cpu, memory and GPUs from the type, which the managed cluster's agent sets on its container: remove its resource requirements, or its machineType requirements"
	msgOneMandatoryMachineType = "each replica takes one machine: keep one mandatory machineType requirement and make the others optional (mandatory: false)"
	msgWeightOnMandatory       = "weight ranks optional requirements only: set mandatory: false, or remove weight"
	msgRequestsOrLimits        = "set requests, limits or both"
	msgNegativeAmount          = "requests and limits must not be negative"
	msgUnitsNeedIntegers       = "with units, requests and limits are whole numbers of that unit (EMCO's legacy form, e.g. requests: 1000 with units: MB); without units use Kubernetes quantities such as 1000M or 2Gi"
	msgValueAndValues          = "set value (EMCO's shorthand for operator In with one value) or values, not both"
	msgValueNeedsIn            = "value is shorthand for operator In; with other operators use values"
	msgLongExponent            = "write requests and limits with an exponent of at most three digits, such as 4e9 or 4G: longer exponents give amounts far beyond what fleetfit can count, or below the smallest, 1n"
)

// The CEL rules with a messageExpression, as that expression evaluates.
func msgRequestsExceedLimits(requests, limits string) string {
	return fmt.Sprintf("requests (%s) must not exceed limits (%s)", requests, limits)
}

func msgTakesNoValues(op corev1.NodeSelectorOperator) string {
	return fmt.Sprintf("operator %s takes no values", op)
}

func msgNeedsValue(op corev1.NodeSelectorOperator) string {
	return fmt.Sprintf("operator %s needs at least one value", op)
}

func msgNeedsOneInteger(op corev1.NodeSelectorOperator) string {
	return fmt.Sprintf(`operator %s takes exactly one integer value, e.g. values: ["8"]`, op)
}

func msgIntegerOutOfRange(op corev1.NodeSelectorOperator, value string) string {
	return fmt.Sprintf("operator %s compares 64-bit integers, from -9223372036854775808 to 9223372036854775807, as node affinity does; %s is out of range", op, value)
}

// msgAmountTooLarge is the message of the rules that bound requests and
// limits; units is "" when the amount has none.
func msgAmountTooLarge(units string) string {
	most := strconv.FormatInt(v1alpha1.MaxAmount, 10)
	if m, ok := v1alpha1.MaxAmountIn(units); ok {
		most = strconv.FormatInt(m, 10) + " with units " + units
	}
	return "must be at most " + most + ", the largest amount fleetfit can count (about 8 PiB of memory, 9.2e15 of other resources)"
}

// Messages of the checks the CRD cannot make. Each says what is expected and
// gives an example; describe appends what Kubernetes found wrong.
const (
	msgResourceName = "must be a Kubernetes resource name, such as cpu, memory, hugepages-2Mi or nvidia.com/gpu"
	msgFeatureKey   = "must be a node label key, such as feature.node.kubernetes.io/cpu-cpuid.AVX512F or nvidia.com/gpu.product"
	msgFeatureValue = "must be a valid node label value, since it is compared with node labels, e.g. NVIDIA-A100-SXM4-80GB"
	msgConversion   = "cannot be converted to a Kubernetes quantity; write requests and limits as Kubernetes quantities such as 1000M and leave units empty"
)

func validateRequirement(r *v1alpha1.ResourceRequirement, path *field.Path) field.ErrorList {
	errs := validateRequiredString(path.Child("name"), r.Name, maxNameLength)
	if r.Weight != nil {
		errs = append(errs, validateMinimum(path.Child("weight"), int64(*r.Weight), minWeight)...)
		errs = append(errs, validateMaximum(path.Child("weight"), int64(*r.Weight), maxWeight)...)
	}
	if set := btoi(r.Resource != nil) + btoi(r.Feature != nil) + btoi(r.MachineType != nil) + btoi(r.Devices != nil); set != 1 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgResourceXorFeature))
	}
	if r.Devices != nil && !r.IsMandatory() {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgOptionalDevices))
	}
	if r.Weight != nil && r.IsMandatory() {
		errs = append(errs, field.Invalid(path.Child("weight"), int64(*r.Weight), msgWeightOnMandatory))
	}
	if r.Resource != nil {
		errs = append(errs, validateAmount(r.Resource, path.Child("resource"))...)
	}
	if r.Feature != nil {
		errs = append(errs, validateFeature(r.Feature, path.Child("feature"))...)
	}
	if r.MachineType != nil {
		errs = append(errs, validateMachineType(r.MachineType, path.Child("machineType"))...)
	}
	if r.Devices != nil {
		errs = append(errs, validateDevices(r.Devices, path.Child("devices"))...)
	}
	return errs
}

func validateMachineType(m *v1alpha1.MachineTypeRequirement, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name, value string
	}{{"group", m.Group}, {"name", m.Name}} {
		p := path.Child(f.name)
		if f.value == "" {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		errs = append(errs, validateMaxLength(p, f.value, maxMachineNameLength)...)
		if !dnsLabel.MatchString(f.value) {
			errs = append(errs, field.Invalid(p, f.value, fmt.Sprintf("should match '%s'", dnsLabel.String())))
		}
	}
	return errs
}

// maxMachineNameLength bounds the names of machine groups and types (see
// v1alpha1.MachineGroup).
const maxMachineNameLength = 50

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func validateAmount(a *v1alpha1.ResourceAmount, path *field.Path) field.ErrorList {
	errs := validateRequiredString(path.Child("name"), a.Name, maxResourceNameLen)
	if len(errs) == 0 {
		if problems := validation.IsQualifiedName(a.Name); len(problems) > 0 {
			errs = append(errs, field.Invalid(path.Child("name"), a.Name, describe(msgResourceName, problems)))
		}
	}
	if a.Units != "" {
		errs = append(errs, validateEnum(path.Child("units"), a.Units, legacyUnits)...)
	}

	// The CEL rules compare requests and limits as written, not converted:
	// units multiply both alike, so the outcome is the same.
	var amountErrs field.ErrorList
	req, lim := a.Requests, a.Limits
	if req == nil && lim == nil {
		amountErrs = append(amountErrs, field.Invalid(path, field.OmitValueType{}, msgRequestsOrLimits))
	}
	if req != nil && lim != nil && !hasLongExponent(req) && !hasLongExponent(lim) && v1alpha1.CompareQuantities(*req, *lim) > 0 {
		amountErrs = append(amountErrs, field.Invalid(path.Child("requests"), req.String(), msgRequestsExceedLimits(req.String(), lim.String())))
	}
	if (req != nil && req.Sign() < 0) || (lim != nil && lim.Sign() < 0) {
		amountErrs = append(amountErrs, field.Invalid(path, field.OmitValueType{}, msgNegativeAmount))
	}
	if hasLongExponent(req) || hasLongExponent(lim) {
		amountErrs = append(amountErrs, field.Invalid(path, field.OmitValueType{}, msgLongExponent))
	}
	// An amount too large to count is reported as such, and only as such,
	// even when it is also no whole number an int64 holds (1e300 with units
	// TiB): saying it must be whole would send the user the wrong way.
	most, hasMost := maxAmount(a.Units)
	tooLarge := func(q *resource.Quantity) bool {
		return hasMost && q != nil && v1alpha1.CompareQuantities(*q, most) > 0
	}
	notWhole := func(q *resource.Quantity) bool { return q != nil && !isCELInteger(q) && !tooLarge(q) }
	if a.Units != "" && (notWhole(req) || notWhole(lim)) {
		amountErrs = append(amountErrs, field.Invalid(path, field.OmitValueType{}, msgUnitsNeedIntegers))
	}
	if tooLarge(req) {
		amountErrs = append(amountErrs, field.Invalid(path.Child("requests"), req.String(), msgAmountTooLarge(a.Units)))
	}
	if tooLarge(lim) {
		amountErrs = append(amountErrs, field.Invalid(path.Child("limits"), lim.String(), msgAmountTooLarge(a.Units)))
	}
	errs = append(errs, amountErrs...)

	// The hub converts amounts with EffectiveRequests and EffectiveLimits;
	// check here that it will be able to. The rules above and the units enum
	// already cover every failure the conversion has today, so this reports
	// nothing new unless the conversion grows a failure of its own.
	if len(amountErrs) == 0 && (a.Units == "" || slices.Contains(legacyUnits, a.Units)) {
		_, reqErr := a.EffectiveRequests()
		_, limErr := a.EffectiveLimits()
		if err := errors.Join(reqErr, limErr); err != nil {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%s: %v", msgConversion, err)))
		}
	}
	return errs
}

func validateFeature(f *v1alpha1.FeatureRequirement, path *field.Path) field.ErrorList {
	keyPath, valuesPath, valuePath := path.Child("key"), path.Child("values"), path.Child("value")
	errs := validateRequiredString(keyPath, f.Key, maxFeatureKeyLen)
	if len(errs) == 0 {
		if problems := validation.IsQualifiedName(f.Key); len(problems) > 0 {
			errs = append(errs, field.Invalid(keyPath, f.Key, describe(msgFeatureKey, problems)))
		}
	}

	op := f.Operator
	if op == "" {
		op = defaultOperator
	}
	errs = append(errs, validateEnum(path.Child("operator"), op, featureOperators)...)

	if len(f.Values) > maxFeatureValues {
		errs = append(errs, field.TooMany(valuesPath, len(f.Values), maxFeatureValues))
	}
	for i, v := range f.Values {
		errs = append(errs, validateMaxLength(valuesPath.Index(i), v, maxFeatureValueLen)...)
	}
	errs = append(errs, validateMaxLength(valuePath, f.Value, maxFeatureValueLen)...)

	// The CRD's five rules on operator and values, each on its own, as CEL
	// evaluates them: one mistake can break two of them.
	hasValue, hasValues := f.Value != "", len(f.Values) > 0
	if hasValue && hasValues {
		errs = append(errs, field.Forbidden(valuesPath, msgValueAndValues))
	}
	if hasValue && op != corev1.NodeSelectorOpIn {
		errs = append(errs, field.Forbidden(valuePath, msgValueNeedsIn))
	}
	switch op {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if hasValues {
			errs = append(errs, field.Forbidden(valuesPath, msgTakesNoValues(op)))
		} else if hasValue {
			errs = append(errs, field.Forbidden(valuePath, msgTakesNoValues(op)))
		}
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if !hasValue && !hasValues {
			errs = append(errs, field.Required(valuesPath, msgNeedsValue(op)))
		}
		errs = append(errs, validateLabelValues(f, valuesPath, valuePath)...)
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		// The value is compared with node labels as an int64, as node
		// affinity does; one beyond that range could never be compiled.
		if len(f.Values) != 1 || !integerValue.MatchString(f.Values[0]) {
			errs = append(errs, field.Invalid(valuesPath, f.Values, msgNeedsOneInteger(op)))
		} else if _, err := strconv.ParseInt(f.Values[0], 10, 64); err != nil {
			errs = append(errs, field.Invalid(valuesPath.Index(0), f.Values[0], msgIntegerOutOfRange(op, f.Values[0])))
		}
	}
	return errs
}

// validateLabelValues checks the values In and NotIn compare with node
// labels; a value no label can hold would never match. Values already too
// long are not reported twice.
func validateLabelValues(f *v1alpha1.FeatureRequirement, valuesPath, valuePath *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(path *field.Path, v string) {
		if utf8.RuneCountInString(v) > maxFeatureValueLen {
			return
		}
		if problems := validation.IsValidLabelValue(v); len(problems) > 0 {
			errs = append(errs, field.Invalid(path, v, describe(msgFeatureValue, problems)))
		}
	}
	for i, v := range f.Values {
		check(valuesPath.Index(i), v)
	}
	if f.Value != "" {
		check(valuePath, f.Value)
	}
	return errs
}

// maxAmount is the largest amount the CRD admits with units ("" for none),
// as a quantity in those units, and false for units the CRD does not know,
// which it refuses before it evaluates any rule on amounts.
func maxAmount(units string) (resource.Quantity, bool) {
	if units == "" {
		return *resource.NewQuantity(v1alpha1.MaxAmount, resource.DecimalSI), true
	}
	m, ok := v1alpha1.MaxAmountIn(units)
	if !ok {
		return resource.Quantity{}, false
	}
	return *resource.NewQuantity(m, resource.DecimalSI), true
}

// Bounds of a DeviceRequirement, from its markers.
const (
	maxDeviceCount     = 32
	maxDeviceSelectors = 32
)

// Messages of the CRD's rules on devices.
const (
	msgDeviceCount     = "count must be at least 1"
	msgOptionalDevices = "devices are mandatory: a pod gets its devices or does not start; remove mandatory: false"
)

// validateDevices checks a devices requirement: its class name as
// Kubernetes checks a DeviceClass's name, and each selector compiled in the
// environment kube-scheduler evaluates it in, within its cost budget.
func validateDevices(d *v1alpha1.DeviceRequirement, path *field.Path) field.ErrorList {
	errs := validateRequiredString(path.Child("deviceClassName"), d.DeviceClassName, maxResourceNameLen)
	if len(errs) == 0 {
		if problems := validation.IsDNS1123Subdomain(d.DeviceClassName); len(problems) > 0 {
			errs = append(errs, field.Invalid(path.Child("deviceClassName"), d.DeviceClassName,
				describe("must be the name of a DeviceClass, such as gpu.example.com", problems)))
		}
	}
	if d.Count != nil {
		if *d.Count < 1 {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgDeviceCount))
		}
		errs = append(errs, validateMaximum(path.Child("count"), int64(*d.Count), maxDeviceCount)...)
	}
	errs = append(errs, validateMaxItems(path.Child("selectors"), len(d.Selectors), maxDeviceSelectors)...)
	for i, s := range d.Selectors {
		p := path.Child("selectors").Index(i).Child("cel")
		if s.CEL == nil {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		p = p.Child("expression")
		if e := validateRequiredString(p, s.CEL.Expression, v1alpha1.MaxDeviceSelectorLength); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		if err := devicecel.Check(s.CEL.Expression); err != nil {
			errs = append(errs, field.Invalid(p, s.CEL.Expression, err.Error()))
		}
	}
	return errs
}
