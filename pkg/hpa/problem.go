package hpa

import (
	"errors"
	"fmt"
)

// Reason classifies a problem, so that a controller can pick a condition
// reason without parsing messages.
type Reason string

const (
	// ReasonInvalidRequirements: the consumers and their requirements are
	// wrong in themselves (a rule of the CRD, two mandatory amounts of one
	// resource, amounts that cannot be converted).
	ReasonInvalidRequirements Reason = "InvalidRequirements"
	// ReasonInvalidWorkload: the requirements do not fit the workload
	// manifests (missing target object or container, a pod that cannot get
	// Guaranteed QoS for exclusiveCPU, a manifest that is not an object).
	ReasonInvalidWorkload Reason = "InvalidWorkload"
)

// Problem is one thing wrong with an intent. Its message says what to change.
type Problem struct {
	Reason Reason
	// Consumer is the consumer the problem is about, or empty when it is about
	// the intent as a whole (for example a manifest that cannot be decoded).
	Consumer string
	Message  string
}

func (p *Problem) Error() string {
	if p.Consumer == "" {
		return p.Message
	}
	return fmt.Sprintf("consumer %q: %s", p.Consumer, p.Message)
}

// Problems returns the problems in an error returned by Resolve, in the order
// Resolve found them, or nil when err holds none.
func Problems(err error) []*Problem {
	var out []*Problem
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if p, ok := err.(*Problem); ok {
			out = append(out, p)
			return
		}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				walk(e)
			}
			return
		}
		walk(errors.Unwrap(err))
	}
	walk(err)
	return out
}

// ReasonOf is the reason that best summarises err from Resolve: requirement
// problems first, since they must be fixed before the workload can be judged.
// It returns ReasonInvalidRequirements for an error that holds no Problem.
func ReasonOf(err error) Reason {
	problems := Problems(err)
	for _, p := range problems {
		if p.Reason == ReasonInvalidRequirements {
			return ReasonInvalidRequirements
		}
	}
	if len(problems) > 0 {
		return problems[0].Reason
	}
	return ReasonInvalidRequirements
}

// problems accumulates Problems; its zero value is ready to use.
type problems []error

func (ps *problems) add(reason Reason, consumer, format string, args ...any) {
	*ps = append(*ps, &Problem{Reason: reason, Consumer: consumer, Message: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error { return errors.Join(ps...) }
