package framework

import (
	"errors"
	"fmt"
	"strings"
)

// Code says what kind of outcome a plugin reports.
type Code int

const (
	// Success means the plugin ran and has nothing to report. A nil *Status is a success.
	Success Code = iota
	// Warning means the plugin ran and produced a result, but something deserves attention
	// (for example an expired AddOnPlacementScore). The cycle goes on; the message becomes an event.
	Warning
	// Misconfigured means the Placement asks for something that cannot work (an unknown
	// prioritizer, a CEL expression that does not compile). Retrying does not help: the
	// cycle stops, the Placement gets PlacementMisconfigured=True and keeps its decisions.
	Misconfigured
	// Error is an internal, transient failure. The cycle stops, existing decisions are kept
	// and the Placement is retried with backoff.
	Error
)

func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Warning:
		return "Warning"
	case Misconfigured:
		return "Misconfigured"
	case Error:
		return "Error"
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Status is what a plugin returns instead of a bare error. Expected, per-cluster rejections
// are not statuses: filters report them through Rejections.
type Status struct {
	code    Code
	plugin  string
	reasons []string
	err     error
}

// NewStatus returns a status with the given code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an internal error.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, err: err, reasons: []string{err.Error()}}
}

// Misconfiguredf is a shortcut for a misconfiguration with a formatted message.
func Misconfiguredf(format string, args ...any) *Status {
	return NewStatus(Misconfigured, fmt.Sprintf(format, args...))
}

// Code returns the status code; a nil status is Success.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin returns the name of the plugin that produced the status, if recorded.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin name and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil && s.plugin == "" {
		s.plugin = name
	}
	return s
}

// IsSuccess reports whether the status is a success (or nil).
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsFailure reports whether the cycle must stop: an error or a misconfiguration.
func (s *Status) IsFailure() bool { return s.Code() == Error || s.Code() == Misconfigured }

// AsError returns nil for Success and Warning, and an error otherwise.
func (s *Status) AsError() error {
	if !s.IsFailure() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	msg := s.Message()
	if s.plugin != "" {
		msg = s.plugin + ": " + msg
	}
	return errors.New(msg)
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	if s.plugin != "" {
		return fmt.Sprintf("%s (%s): %s", s.code, s.plugin, s.Message())
	}
	return fmt.Sprintf("%s: %s", s.code, s.Message())
}
