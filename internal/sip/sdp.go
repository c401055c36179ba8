package sip

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"switchboard/internal/audio"
)

// RTP payload types this package speaks (RFC 3551): the two G.711 laws are
// static; telephone-event (RFC 4733) is dynamic and we offer it as 101, the
// number most peers use.
const (
	ptPCMU         = 0
	ptPCMA         = 8
	ptTelephoneOff = 101
)

// maxSDP bounds a session description we parse; real ones are under 2 KB.
const maxSDP = 16 << 10

// errNoMedia is wrapped when a peer's SDP has no audio we can speak: the
// INVITE is answered 488 (Not Acceptable Here).
var errNoMedia = errors.New("sip: no usable audio in the session description")

// remoteMedia is what we need from a peer's SDP (offer or answer): where to
// send RTP and which payload types it listed, in its order of preference.
type remoteMedia struct {
	Addr      netip.AddrPort
	Formats   []uint8
	RTPMap    map[uint8]string // payload type → "encoding/clock", lower case
	Direction string           // sendrecv (default), sendonly, recvonly, inactive
}

// parseSDP reads the first audio media section of a session description.
// It is lenient about what it ignores (unknown lines, other media, bandwidth,
// crypto) and strict about what it uses: a connection address (media level
// over session level), a port, an RTP/AVP profile and numeric formats. It
// never panics on peer input and keeps at most 32 formats.
func parseSDP(b []byte) (remoteMedia, error) {
	var m remoteMedia
	if len(b) > maxSDP {
		return m, fmt.Errorf("%w: session description of %d bytes", errNoMedia, len(b))
	}
	var (
		sessionAddr, mediaAddr netip.Addr
		inAudio, sawAudio      bool
		sawMedia               bool // any m= line: c= is no longer session level
		port                   int
		direction              = "sendrecv"
	)
	m.RTPMap = map[uint8]string{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if len(line) < 2 || line[1] != '=' {
			continue
		}
		key, val := line[0], line[2:]
		switch key {
		case 'm':
			sawMedia = true
			if sawAudio {
				inAudio = false // a later section: not ours
				continue
			}
			f := strings.Fields(val)
			if len(f) < 4 || f[0] != "audio" {
				inAudio = false
				continue
			}
			inAudio, sawAudio = true, true
			p, err := strconv.Atoi(strings.SplitN(f[1], "/", 2)[0])
			if err != nil || p < 0 || p > 65535 {
				return m, fmt.Errorf("%w: bad port in m=%s", errNoMedia, val)
			}
			port = p
			if f[2] != "RTP/AVP" && f[2] != "RTP/AVPF" {
				return m, fmt.Errorf("%w: profile %q (only RTP/AVP, no SRTP)", errNoMedia, f[2])
			}
			for _, s := range f[3:] {
				pt, err := strconv.ParseUint(s, 10, 7)
				if err != nil {
					continue
				}
				if len(m.Formats) < 32 {
					m.Formats = append(m.Formats, uint8(pt))
				}
			}
		case 'c':
			addr, ok := parseConnection(val)
			if !ok {
				continue
			}
			switch {
			case inAudio:
				mediaAddr = addr
			case !sawMedia:
				sessionAddr = addr
			}
		case 'a':
			if sawAudio && !inAudio {
				continue
			}
			name, value, _ := strings.Cut(val, ":")
			switch name {
			case "sendrecv", "sendonly", "recvonly", "inactive":
				direction = name
			case "rtpmap":
				ptStr, enc, ok := strings.Cut(value, " ")
				pt, err := strconv.ParseUint(ptStr, 10, 7)
				if !ok || err != nil || !inAudio || len(m.RTPMap) >= 32 {
					continue
				}
				// "telephone-event/8000" or "PCMA/8000/1": keep encoding/clock.
				parts := strings.SplitN(strings.TrimSpace(enc), "/", 3)
				if len(parts) >= 2 {
					m.RTPMap[uint8(pt)] = strings.ToLower(parts[0] + "/" + parts[1])
				}
			}
		}
	}
	if !sawAudio {
		return m, fmt.Errorf("%w: no m=audio line", errNoMedia)
	}
	addr := mediaAddr
	if !addr.IsValid() {
		addr = sessionAddr
	}
	if !addr.IsValid() {
		return m, fmt.Errorf("%w: no connection address (c=)", errNoMedia)
	}
	if port == 0 {
		return m, fmt.Errorf("%w: audio rejected (port 0)", errNoMedia)
	}
	m.Addr = netip.AddrPortFrom(addr, uint16(port))
	m.Direction = direction
	return m, nil
}

// parseConnection reads "IN IP4 203.0.113.7" (a multicast TTL suffix is
// ignored).
func parseConnection(val string) (netip.Addr, bool) {
	f := strings.Fields(val)
	if len(f) < 3 || f[0] != "IN" {
		return netip.Addr{}, false
	}
	host, _, _ := strings.Cut(f[2], "/")
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return addr.Unmap(), true
}

// encoding is the lower-case "name/clock" of payload type pt in m: its
// rtpmap, or the static assignment of RFC 3551 for 0 and 8.
func (m remoteMedia) encoding(pt uint8) string {
	if enc, ok := m.RTPMap[pt]; ok {
		return enc
	}
	switch pt {
	case ptPCMU:
		return "pcmu/8000"
	case ptPCMA:
		return "pcma/8000"
	}
	return ""
}

// codecs is what a call speaks, agreed from the peer's SDP.
type codecs struct {
	AudioPT uint8
	Format  audio.Format // audio.Mulaw or audio.Alaw at 8 kHz
	// DTMFPT is the telephone-event payload type the peer listed (we send
	// with it, RFC 3264 §6.1), or -1 when it listed none.
	DTMFPT int
}

// chooseCodecs picks the peer's first G.711 law (it lists in preference
// order) and its telephone-event/8000 type, if any.
func chooseCodecs(m remoteMedia) (codecs, error) {
	c := codecs{DTMFPT: -1}
	found := false
	for _, pt := range m.Formats {
		switch m.encoding(pt) {
		case "pcmu/8000":
			if !found {
				c.AudioPT, c.Format, found = pt, audio.Format{Encoding: audio.Mulaw, SampleRate: 8000}, true
			}
		case "pcma/8000":
			if !found {
				c.AudioPT, c.Format, found = pt, audio.Format{Encoding: audio.Alaw, SampleRate: 8000}, true
			}
		case "telephone-event/8000":
			if c.DTMFPT < 0 {
				c.DTMFPT = int(pt)
			}
		}
	}
	if !found {
		return c, fmt.Errorf("%w: no PCMU or PCMA among the formats %v", errNoMedia, m.Formats)
	}
	return c, nil
}

// sdpFormat is one payload type we put in our SDP.
type sdpFormat struct {
	PT   uint8
	Map  string // rtpmap value after the payload type: "PCMU/8000"
	Fmtp string // fmtp value, or ""
}

// offerFormats is our offer: PCMU, PCMA and telephone-event.
var offerFormats = []sdpFormat{
	{PT: ptPCMU, Map: "PCMU/8000"},
	{PT: ptPCMA, Map: "PCMA/8000"},
	{PT: ptTelephoneOff, Map: "telephone-event/8000", Fmtp: "0-15"},
}

// answerFormats is our answer to an offer we chose c from: the one law, and
// telephone-event with the peer's payload type when it offered it.
func answerFormats(c codecs) []sdpFormat {
	f := []sdpFormat{{PT: c.AudioPT, Map: "PCMU/8000"}}
	if c.Format.Encoding == audio.Alaw {
		f[0].Map = "PCMA/8000"
	}
	if c.DTMFPT >= 0 {
		f = append(f, sdpFormat{PT: uint8(c.DTMFPT), Map: "telephone-event/8000", Fmtp: "0-15"})
	}
	return f
}

// buildSDP writes our session description: RTP at addr, the formats in
// order, 20 ms packets, both directions. sessionID is the o= line's id,
// version its version (RFC 4566: the id is unique per session; the version
// grows when the description changes).
func buildSDP(addr netip.AddrPort, sessionID, version uint64, formats []sdpFormat) []byte {
	ipVer := "IP4"
	if addr.Addr().Is6() {
		ipVer = "IP6"
	}
	ip := addr.Addr().String()
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=- %d %d IN %s %s\r\ns=switchboard\r\nc=IN %s %s\r\nt=0 0\r\nm=audio %d RTP/AVP",
		sessionID, version, ipVer, ip, ipVer, ip, addr.Port())
	for _, f := range formats {
		fmt.Fprintf(&b, " %d", f.PT)
	}
	b.WriteString("\r\n")
	for _, f := range formats {
		fmt.Fprintf(&b, "a=rtpmap:%d %s\r\n", f.PT, f.Map)
		if f.Fmtp != "" {
			fmt.Fprintf(&b, "a=fmtp:%d %s\r\n", f.PT, f.Fmtp)
		}
	}
	b.WriteString("a=ptime:20\r\na=sendrecv\r\n")
	return []byte(b.String())
}
