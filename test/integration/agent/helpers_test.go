package agent

import "time"

// minInterval is the agent's interval in these tests: short, so the tests
// are quick, but long enough to coalesce a test's setup.
const minInterval = 300 * time.Millisecond
