package sip

import "time"

// Received RTP goes to the call runtime's recognizer, not to a sound card,
// so it needs order, not pacing: reorderBuffer releases each packet as soon
// as every packet before it has been released, holds packets behind a gap
// for at most reorderWait (or reorderHold packets), then gives the missing
// ones up, and drops duplicates and packets older than what was released.
// In the common case (packets in order) it adds no delay at all.
//
// diago's RTPJitterBuffer was tried first: it plays packets out on a fixed
// 20 ms clock, so a peer packetizing at 30 ms (SIPp's g711a.pcap, some
// PBXs) lost two thirds of its audio as "late", and it adds 60 ms or more
// to every turn.
const (
	reorderWindow = 32                    // sequence numbers ahead that are still this stream
	reorderHold   = 5                     // packets held behind a gap at most
	reorderWait   = 60 * time.Millisecond // how long a gap is waited for at most
)

// rtpIn is one received packet.
type rtpIn struct {
	seq     uint16
	pt      uint8
	ssrc    uint32
	ts      uint32
	payload []byte
}

// reorderStats counts what the buffer did.
type reorderStats struct {
	Received, Lost, Late, Duplicate, Resets uint64
}

type reorderBuffer struct {
	started  bool
	ssrc     uint32
	next     uint16 // the sequence number to release next
	slots    [reorderWindow]*rtpIn
	held     int
	gapSince time.Time // when the oldest held packet arrived
	stats    reorderStats
}

// push takes one packet and appends to out the packets it releases, in
// order.
func (b *reorderBuffer) push(p rtpIn, now time.Time, out []rtpIn) []rtpIn {
	b.stats.Received++
	if !b.started || p.ssrc != b.ssrc {
		if b.started {
			b.stats.Resets++
			out = b.drain(out)
		}
		b.started, b.ssrc, b.next = true, p.ssrc, p.seq
	}
	d := int(int16(p.seq - b.next))
	switch {
	case d < 0 && d > -reorderWindow*8:
		b.stats.Late++ // already released past it (or a retransmitted copy)
		return out
	case d < 0 || d >= reorderWindow:
		// A jump: the sender restarted its sequence or lost a lot.
		b.stats.Resets++
		out = b.drain(out)
		b.next = p.seq
	}
	i := int(p.seq) % reorderWindow
	if s := b.slots[i]; s != nil {
		b.stats.Duplicate++
		return out
	}
	pc := p
	b.slots[i] = &pc
	if b.held == 0 {
		b.gapSince = now
	}
	b.held++
	out = b.release(out)
	if b.held > 0 && (b.held >= reorderHold || now.Sub(b.gapSince) >= reorderWait) {
		out = b.skipGap(out, now)
	}
	return out
}

// release appends the run of held packets starting at next.
func (b *reorderBuffer) release(out []rtpIn) []rtpIn {
	for b.held > 0 {
		i := int(b.next) % reorderWindow
		s := b.slots[i]
		if s == nil || s.seq != b.next {
			break
		}
		out = append(out, *s)
		b.slots[i] = nil
		b.held--
		b.next++
	}
	return out
}

// skipGap gives up the missing packets before the oldest held one and
// releases from there.
func (b *reorderBuffer) skipGap(out []rtpIn, now time.Time) []rtpIn {
	for range reorderWindow {
		if s := b.slots[int(b.next)%reorderWindow]; b.held == 0 || s != nil && s.seq == b.next {
			break
		}
		b.stats.Lost++
		b.next++
	}
	out = b.release(out)
	b.gapSince = now
	return out
}

// drain releases every held packet, giving up the gaps between them.
func (b *reorderBuffer) drain(out []rtpIn) []rtpIn {
	for range reorderWindow {
		if b.held == 0 {
			return out
		}
		out = b.skipGap(out, time.Time{})
	}
	// Unreachable while held packets lie within the window ahead of next;
	// never loop on a broken invariant.
	clear(b.slots[:])
	b.held = 0
	return out
}

// wait is how much longer a held packet may wait, or 0 when none is held.
func (b *reorderBuffer) wait(now time.Time) time.Duration {
	if b.held == 0 {
		return 0
	}
	return max(reorderWait-now.Sub(b.gapSince), time.Millisecond)
}

// expire releases what has waited reorderWait behind a gap.
func (b *reorderBuffer) expire(now time.Time, out []rtpIn) []rtpIn {
	if b.held > 0 && now.Sub(b.gapSince) >= reorderWait {
		return b.skipGap(out, now)
	}
	return out
}
