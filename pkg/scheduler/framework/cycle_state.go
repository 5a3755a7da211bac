package framework

import "sync"

// StateKey names a piece of per-cycle data.
type StateKey string

// StateData is data a plugin computes once per cycle and reads again later in the cycle.
type StateData any

// CycleState holds per-cycle data. It is safe for concurrent use, because filters run
// concurrently.
type CycleState struct {
	mu   sync.RWMutex
	data map[StateKey]StateData
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: map[StateKey]StateData{}}
}

// Read returns the data stored under key and whether it exists.
func (c *CycleState) Read(key StateKey) (StateData, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.data[key]
	return d, ok
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, d StateData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data[key] = d
}
