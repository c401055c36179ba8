package callctl

import "time"

// HangupTTL is hangupTTL, for tests.
const HangupTTL = hangupTTL

// PendingHangups is how many hang-ups wait for their provider's Ended event.
func (s *Service) PendingHangups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hangups)
}

// SetClock replaces the service's clock.
func (s *Service) SetClock(now func() time.Time) { s.now = now }

// QueuedEvents is how many provider events wait for the group being saved.
func (s *Service) QueuedEvents() int { return s.early.Queued() }
