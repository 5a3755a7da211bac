package placement

import "sync"

// commitOrder lets the cycles of placements with intents commit their reservations in the
// order they started, while they compute concurrently and outside the reservation lock. In a
// burst, the placement taken from the queue first is decided first, as with one worker, and a
// cheap cycle never overtakes an expensive one that started before it.
type commitOrder struct {
	mu       sync.Mutex
	turn     *sync.Cond
	next     uint64
	inFlight map[uint64]struct{}
}

func newCommitOrder() *commitOrder {
	o := &commitOrder{inFlight: map[uint64]struct{}{}}
	o.turn = sync.NewCond(&o.mu)
	return o
}

// begin registers a cycle and returns its ticket; end must follow, whatever happens.
func (o *commitOrder) begin() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next++
	o.inFlight[o.next] = struct{}{}
	return o.next
}

// wait blocks until every cycle that began before ticket has ended.
func (o *commitOrder) wait(ticket uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.older(ticket) {
		o.turn.Wait()
	}
}

func (o *commitOrder) older(ticket uint64) bool {
	for t := range o.inFlight {
		if t < ticket {
			return true
		}
	}
	return false
}

// end unregisters a cycle; it may be called more than once.
func (o *commitOrder) end(ticket uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.inFlight[ticket]; ok {
		delete(o.inFlight, ticket)
		o.turn.Broadcast()
	}
}
