// Package devicecel compiles and evaluates the CEL selectors of Dynamic
// Resource Allocation devices with the environment kube-scheduler uses
// (k8s.io/dynamic-resource-allocation/cel), so an expression fleetfit
// accepts is one a ResourceClaim accepts, and it selects the same devices.
// It is a leaf: the API validation, the inventory and the agent use it alike.
package devicecel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// EvalTimeout bounds one evaluation, beside the cost limit that bounds its
// work: a selector is input, and the hub evaluates it on every cluster.
const EvalTimeout = 100 * time.Millisecond

// cache holds compiled expressions, valid or not: the same selectors come
// back with every cycle of every intent. It is cleared when it holds
// cacheLimit of them.
var cache = struct {
	sync.Mutex
	programs map[string]*compiled
}{programs: map[string]*compiled{}}

const cacheLimit = 1024

type compiled struct {
	program *Program
	err     error
}

// Program is a compiled selector, safe for concurrent use.
type Program struct {
	result dracel.CompilationResult
}

// Compile compiles expr, refusing it as the API server refuses a
// ResourceClaim's: a syntax or type error, a result other than bool, or an
// estimated cost beyond the DRA limit.
func Compile(expr string) (*Program, error) {
	cache.Lock()
	c, ok := cache.programs[expr]
	cache.Unlock()
	if ok {
		return c.program, c.err
	}
	c = compile(expr)
	cache.Lock()
	if len(cache.programs) >= cacheLimit {
		clear(cache.programs)
	}
	cache.programs[expr] = c
	cache.Unlock()
	return c.program, c.err
}

func compile(expr string) *compiled {
	if len(expr) > MaxLength {
		return &compiled{err: fmt.Errorf("longer than %d bytes", MaxLength)}
	}
	r := dracel.GetCompiler(dracel.Features{}).CompileCELExpression(expr, dracel.Options{})
	if r.Error != nil {
		return &compiled{err: errors.New(r.Error.Detail)}
	}
	if r.MaxCost > resourcev1.CELSelectorExpressionMaxCost {
		return &compiled{err: fmt.Errorf("too complex: its estimated cost, %d, exceeds the limit of %d; write a simpler expression",
			r.MaxCost, resourcev1.CELSelectorExpressionMaxCost)}
	}
	return &compiled{program: &Program{result: r}}
}

// MaxLength bounds an expression, as the DRA API does.
const MaxLength = resourcev1.CELSelectorExpressionMaxLength

// Check is Compile without the program.
func Check(expr string) error {
	_, err := Compile(expr)
	return err
}

// Expression returns the selector as written.
func (p *Program) Expression() string { return p.result.Expression }

// Device is what a selector sees of one device.
type Device struct {
	Driver     string
	Attributes map[resourcev1.QualifiedName]resourcev1.DeviceAttribute
	Capacity   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity
}

// Matches evaluates the selector on d within EvalTimeout and the DRA cost
// limit. An error (an attribute the device lacks, a limit reached) means the
// device does not match, as for kube-scheduler, which fails the allocation.
func (p *Program) Matches(d Device) (bool, error) {
	// No caller's context: an answer is remembered per kind and shared by every cycle that
	// asks (inventory.DeviceRequest), so no one caller's cancellation may cut it short; one
	// cut short by EvalTimeout is a context.DeadlineExceeded, which is not remembered.
	ctx, cancel := context.WithTimeout(context.Background(), EvalTimeout)
	defer cancel()
	ok, _, err := p.result.DeviceMatches(ctx, dracel.Device{Driver: d.Driver, Attributes: d.Attributes, Capacity: d.Capacity})
	if err != nil {
		return false, err
	}
	return ok, nil
}
