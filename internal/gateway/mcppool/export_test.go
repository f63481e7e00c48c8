package mcppool

import "time"

// SetSDKCalls makes p send every tools/call through the SDK, as it did
// before the lean path, so tests and benchmarks can compare the two. Call
// it before p's first call.
func SetSDKCalls(p *Pool) { p.sdkCalls = true }

// LeanSessions counts p's open sessions whose calls take the lean path.
func LeanSessions(p *Pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.sessions {
		if s.isReady() && s.err == nil && s.lean != nil {
			n++
		}
	}
	return n
}

// SetDrainGrace sets how long p's lean calls leave an answer stream open
// after its response; call it before p's first call.
func SetDrainGrace(p *Pool, d time.Duration) { p.drainGrace = d }

// InFlight counts the calls p's sessions have in flight.
func InFlight(p *Pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.sessions {
		n += s.inflight
	}
	return n
}
