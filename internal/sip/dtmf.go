package sip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrDTMFUnsupported is wrapped by Line.SendDTMF when the far party did not
// offer telephone-event (RFC 4733) in its SDP, so digits cannot be sent on
// the RTP stream.
var ErrDTMFUnsupported = errors.New("sip: the far party does not accept telephone-events")

// dtmfDigits are the keys of RFC 4733 events 0-15, in event-code order.
const dtmfDigits = "0123456789*#ABCD"

// dtmfEventCode returns the RFC 4733 event code of a key (0-9, *, #, A-D,
// a-d), and false for anything else.
func dtmfEventCode(d byte) (byte, bool) {
	if d >= 'a' && d <= 'd' {
		d -= 'a' - 'A'
	}
	i := strings.IndexByte(dtmfDigits, d)
	if i < 0 || d == 0 {
		return 0, false
	}
	return byte(i), true
}

// checkDigits validates a SendDTMF argument, naming the first bad key.
func checkDigits(digits string) error {
	if digits == "" {
		return errors.New("sip: no DTMF digits to send")
	}
	if len(digits) > 64 {
		return fmt.Errorf("sip: %d DTMF digits, at most 64 at once", len(digits))
	}
	for i := 0; i < len(digits); i++ {
		if _, ok := dtmfEventCode(digits[i]); !ok {
			return fmt.Errorf("sip: DTMF digit %q at %d is not one of 0-9 * # A-D", digits[i], i)
		}
	}
	return nil
}

// telephoneEvent is one RFC 4733 event payload: a 4-byte header.
type telephoneEvent struct {
	Event    byte
	End      bool
	Volume   byte // 0-63: -dBm0
	Duration uint16
}

// decodeTelephoneEvent reads the first event of an RTP payload; further
// events (RFC 4733 allows several per packet) are ignored.
func decodeTelephoneEvent(p []byte) (telephoneEvent, bool) {
	if len(p) < 4 {
		return telephoneEvent{}, false
	}
	return telephoneEvent{
		Event:    p[0],
		End:      p[1]&0x80 != 0,
		Volume:   p[1] & 0x3F,
		Duration: binary.BigEndian.Uint16(p[2:4]),
	}, true
}

func (e telephoneEvent) append(b []byte) []byte {
	flags := e.Volume & 0x3F
	if e.End {
		flags |= 0x80
	}
	return binary.BigEndian.AppendUint16(append(b, e.Event, flags), e.Duration)
}

// dtmfDetector turns the telephone-event packets of an RTP stream into key
// presses. A press is sent as many packets (its duration growing, then its
// end packet three times), all with the RTP timestamp of the press's start:
// a press is reported once, on the first packet of a new timestamp, so lost
// or reordered packets neither drop nor repeat it.
type dtmfDetector struct {
	seen     bool
	lastSSRC uint32
	lastTS   uint32
}

// packet reports the key a telephone-event payload starts, if any.
func (d *dtmfDetector) packet(ssrc, ts uint32, payload []byte) (byte, bool) {
	ev, ok := decodeTelephoneEvent(payload)
	if !ok || ev.Event > 15 {
		return 0, false // not a key (flash hook, tones of RFC 4734)
	}
	if d.seen && d.lastSSRC == ssrc && d.lastTS == ts {
		return 0, false
	}
	d.seen, d.lastSSRC, d.lastTS = true, ssrc, ts
	return dtmfDigits[ev.Event], true
}

// parseInfoDTMF reads the key of a SIP INFO body: application/dtmf-relay
// ("Signal=5\r\nDuration=160", the de-facto format of Cisco and most PBXs)
// or application/dtmf (the key alone). Signal may also be an event number
// (10 for *, 11 for #). ok is false for other types and unreadable bodies.
func parseInfoDTMF(contentType string, body []byte) (digit byte, ok bool) {
	ct, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(contentType)), ";")
	ct = strings.TrimSpace(ct)
	if len(body) > 1024 {
		return 0, false
	}
	var v string
	switch ct {
	case "application/dtmf-relay":
		for line := range strings.Lines(string(body)) {
			name, value, found := strings.Cut(line, "=")
			if found && strings.EqualFold(strings.TrimSpace(name), "signal") {
				v = strings.TrimSpace(value)
				break
			}
		}
	case "application/dtmf":
		v = strings.TrimSpace(string(body))
	default:
		return 0, false
	}
	if len(v) == 1 {
		if code, ok := dtmfEventCode(v[0]); ok {
			return dtmfDigits[code], true
		}
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= 15 {
		return dtmfDigits[n], true
	}
	return 0, false
}
