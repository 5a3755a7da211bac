package allocationcandidates

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
)

// What one query may cost. The answer's size is bounded by MaxCandidates, the search's work by
// WorkBudget, and the query's shape by MaxNumberedGroups, so that no query string, however
// large its fleet's answer, takes more than a bounded time and memory.
const (
	// DefaultMaxCandidates is how many candidates an answer holds at most, by default.
	DefaultMaxCandidates = 1000
	// DefaultWorkBudget is how many search steps (see Limits.WorkBudget) one query may take,
	// by default: about half a second of one core. A query no node of 10,000 clusters of 20
	// node shapes has room for takes about 30,000,000 (BenchmarkEvaluateWorstQueries).
	DefaultWorkBudget = 100_000_000
	// DefaultParallelism is how many clusters one query searches at once, by default.
	DefaultParallelism = 4
	// MaxNumberedGroups is how many numbered groups a query may have: each multiplies the
	// combinations a cluster's nodes give.
	MaxNumberedGroups = 16
)

// Limits bound what one query may cost.
type Limits struct {
	// MaxCandidates caps the candidates of an answer. Without a limit, or with a larger one,
	// the answer holds the first MaxCandidates and says that there are more
	// (Response.Truncated).
	MaxCandidates int
	// WorkBudget is how many search steps a query may take: a step is about 5ns of one core's
	// work (see runCost and emitCost). A query that takes more is refused with a
	// *BudgetError rather than answered in part.
	WorkBudget int64
	// Parallelism is how many clusters are searched at once.
	Parallelism int
}

// DefaultLimits returns the limits `fleetfit candidates` and, unless told otherwise, the hub
// apply.
func DefaultLimits() Limits {
	return Limits{MaxCandidates: DefaultMaxCandidates, WorkBudget: DefaultWorkBudget, Parallelism: DefaultParallelism}
}

// withDefaults fills the limits left at zero.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxCandidates <= 0 {
		l.MaxCandidates = d.MaxCandidates
	}
	if l.WorkBudget <= 0 {
		l.WorkBudget = d.WorkBudget
	}
	if l.Parallelism <= 0 {
		l.Parallelism = d.Parallelism
	}
	return l
}

// BudgetError says that a query needs more work than Limits.WorkBudget allows. It is the
// query's fault, not the fleet's: the hub answers it with 400.
type BudgetError struct {
	Budget         int64
	NumberedGroups int
	Limit          int
}

func (e *BudgetError) Error() string {
	var advice []string
	if e.Limit == 0 {
		advice = append(advice, "give a small limit")
	}
	if e.NumberedGroups > 1 {
		advice = append(advice, fmt.Sprintf("ask for fewer numbered groups (it has %d)", e.NumberedGroups))
	}
	advice = append(advice, "narrow it with required or member_of")
	text := advice[len(advice)-1]
	if len(advice) > 1 {
		text = strings.Join(advice[:len(advice)-1], ", ") + ", or " + text
	}
	return fmt.Sprintf("query: too costly to answer: the search over the fleet needs more than %d steps; %s", e.Budget, text)
}

// Step weights, so that a step is about 5ns of one core: checking a run of nodes for a group
// costs the group's classes and traits, taking a node of it for the group tryCost times that,
// and the search also counts each run of a cluster's nodes it lays out (runCost) and each
// candidate it makes, with its maps and summaries (emitCost per group).
const (
	tryCost  = 2
	runCost  = 25
	emitCost = 250
)

// flushEvery is how many steps a search counts on its own before it adds them to the
// query's total and looks at the budget and the context: often enough to stop within a
// millisecond, seldom enough that the shared counter costs nothing.
const flushEvery = 4096

// budget is one query's work, shared by its searches.
type budget struct {
	ctx   context.Context
	max   int64
	spent atomic.Int64
	// over is set once the work is beyond max or the context has ended: every search stops.
	over atomic.Bool
}

// add counts steps and reports whether the search may go on.
func (b *budget) add(steps int64) bool {
	if b.spent.Add(steps) > b.max || b.ctx.Err() != nil {
		b.over.Store(true)
	}
	return !b.over.Load()
}
