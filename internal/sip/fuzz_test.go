package sip

// Fuzz tests for everything here that reads what a peer sends: numbers in
// URIs, SDP, DTMF in INFO bodies and RTP, REFER sipfrags, and the order of
// RTP packets. `go test -fuzz FuzzX ./internal/sip` runs one; the seeds run
// with the ordinary tests.

import (
	"bytes"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"

	"switchboard/internal/audio"
)

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)

func FuzzNormalizeNumber(f *testing.F) {
	for _, s := range []string{"+16175550100", "16175550100", "0016175550100", "+1 (617) 555-0100", "6175550100", "anonymous", "+", "00", "%2B1617"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeNumber(s)
		if n == "" {
			return
		}
		if !e164.MatchString(n) {
			t.Fatalf("NormalizeNumber(%q) = %q, not E.164", s, n)
		}
		if again := NormalizeNumber(n); again != n {
			t.Fatalf("NormalizeNumber(%q) = %q, but NormalizeNumber(%q) = %q", s, n, n, again)
		}
	})
}

// FuzzDialedNumber parses INVITEs with arbitrary request-URIs and To/From
// headers: the numbers extracted are E.164 or the peer's user part, bounded.
func FuzzDialedNumber(f *testing.F) {
	f.Add("sip:+16175550100@sw.example", "<sip:+16175550100@sw.example>", "<sip:+16175550199@c>;tag=1")
	f.Add("sip:%2B16175550100;npdi@sw.example;user=phone", "<sip:x@y>", "\"A\" <sip:anonymous@anonymous.invalid>;tag=1")
	f.Add("tel:+16175550100;phone-context=x", "<tel:16175550100>", "<tel:%41>;tag=1")
	f.Fuzz(func(t *testing.T, ruri, to, from string) {
		if strings.ContainsAny(ruri+to+from, "\r\n") {
			return
		}
		raw := "INVITE " + ruri + " SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\r\nTo: " + to + "\r\nFrom: " + from +
			"\r\nCall-ID: a\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
		msg, err := sip.NewParser().ParseSIP([]byte(raw))
		if err != nil {
			return
		}
		req, ok := msg.(*sip.Request)
		if !ok {
			return
		}
		for _, got := range []string{dialedNumber(req), callerNumber(req)} {
			if len(got) > maxUserLen && !e164.MatchString(got) {
				t.Fatalf("number %q from %q / %q / %q: longer than %d", got, ruri, to, from, maxUserLen)
			}
		}
	})
}

func FuzzParseSDP(f *testing.F) {
	f.Add([]byte(sippOffer))
	f.Add(buildSDP(netip.MustParseAddrPort("198.51.100.7:10002"), 1, 1, offerFormats))
	f.Add([]byte("v=0\nc=IN IP6 2001:db8::1\nm=video 1 RTP/AVP 96\nm=audio 4000 RTP/AVPF 96 8\na=rtpmap:96 telephone-event/8000\na=inactive\n"))
	f.Add([]byte("m=audio 70000/2 RTP/AVP 0\nc=IN IP4 1.2.3.4/127\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rm, err := parseSDP(b)
		if err != nil {
			return
		}
		if !rm.Addr.IsValid() || rm.Addr.Port() == 0 || len(rm.Formats) > 32 || len(rm.RTPMap) > 32 {
			t.Fatalf("parseSDP(%q) = %+v: invalid address, port 0 or too many formats", b, rm)
		}
		c, err := chooseCodecs(rm)
		if err != nil {
			return
		}
		if c.Format.Encoding != audio.Mulaw && c.Format.Encoding != audio.Alaw || c.Format.SampleRate != 8000 {
			t.Fatalf("chooseCodecs(%q) = %+v, want a G.711 law at 8 kHz", b, c)
		}
		// Our answer to it reads back as the same choice.
		back, err := parseSDP(buildSDP(netip.MustParseAddrPort("192.0.2.1:20000"), 5, 5, answerFormats(c)))
		if err != nil {
			t.Fatalf("our answer to %q does not parse: %v", b, err)
		}
		c2, err := chooseCodecs(back)
		if err != nil || c2 != c {
			t.Fatalf("our answer to %q reads back as %+v (%v), want %+v", b, c2, err, c)
		}
	})
}

func FuzzParseInfoDTMF(f *testing.F) {
	f.Add("application/dtmf-relay", []byte("Signal=5\r\nDuration=160\r\n"))
	f.Add("application/dtmf", []byte("#"))
	f.Add("application/dtmf-relay;x=y", []byte("signal = 11"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		d, ok := parseInfoDTMF(ct, body)
		if ok && strings.IndexByte(dtmfDigits, d) < 0 {
			t.Fatalf("parseInfoDTMF(%q, %q) = %q, not a key", ct, body, d)
		}
	})
}

// FuzzTelephoneEvent decodes arbitrary RTP payloads as RFC 4733 events:
// decode and encode agree, and the detector only reports keys, once per
// event timestamp.
func FuzzTelephoneEvent(f *testing.F) {
	f.Add([]byte{1, 0x0a, 0x00, 0xa0}, uint32(160))
	f.Add([]byte{11, 0x8a, 0x03, 0x20, 0xff}, uint32(0))
	f.Add([]byte{16, 0, 0}, uint32(7))
	f.Fuzz(func(t *testing.T, p []byte, ts uint32) {
		ev, ok := decodeTelephoneEvent(p)
		if !ok {
			if len(p) >= 4 {
				t.Fatalf("decodeTelephoneEvent(%x) failed on 4+ bytes", p)
			}
			return
		}
		enc := ev.append(nil)
		want := []byte{p[0], p[1] &^ 0x40, p[2], p[3]} // the reserved bit is not kept
		if !bytes.Equal(enc, want) {
			t.Fatalf("append(decode(%x)) = %x, want %x", p[:4], enc, want)
		}
		var d dtmfDetector
		k1, ok1 := d.packet(1, ts, p)
		_, ok2 := d.packet(1, ts, p)
		if ok1 && (strings.IndexByte(dtmfDigits, k1) < 0 || ev.Event > 15) || ok2 {
			t.Fatalf("detector on %x: %q %v then %v", p, k1, ok1, ok2)
		}
	})
}

func FuzzParseSipfrag(f *testing.F) {
	f.Add([]byte("SIP/2.0 200 OK\r\n"))
	f.Add([]byte("SIP/2.0 100"))
	f.Fuzz(func(t *testing.T, b []byte) {
		code, ok := parseSipfrag(b)
		if ok && (code < 100 || code > 699) {
			t.Fatalf("parseSipfrag(%q) = %d", b, code)
		}
	})
}

// FuzzReorderBuffer pushes arbitrary arrivals: every 3 bytes are a
// sequence-number step (signed), a source switch bit and a delay. Whatever
// arrives, within one source the buffer releases strictly increasing
// sequence numbers, each once; it never holds reorderHold packets; and
// every packet is released, held, or counted late or duplicate.
func FuzzReorderBuffer(f *testing.F) {
	f.Add([]byte{1, 0, 20, 1, 0, 20, 2, 0, 20, 0xff, 0, 5, 1, 0, 20})
	f.Add([]byte{1, 0, 20, 40, 0, 1, 0xd0, 0, 1, 3, 1, 0, 1, 0, 100})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var b reorderBuffer
		now := time.Unix(0, 0)
		seq, ssrc := uint16(1000), uint32(1)
		var out []rtpIn
		released := 0
		lastSeq := map[uint32]int{} // last released seq per source, unwrapped
		seen := map[uint32]map[int]bool{}
		resets := uint64(0)
		check := func() {
			if b.stats.Resets != resets { // a new run: earlier numbers may come again
				resets = b.stats.Resets
				lastSeq, seen = map[uint32]int{}, map[uint32]map[int]bool{}
			}
			for _, p := range out {
				released++
				prev, ok := lastSeq[p.ssrc]
				cur := int(p.seq)
				if ok {
					cur = prev + int(int16(p.seq-uint16(prev)))
					if cur <= prev {
						t.Fatalf("released seq %d after %d (source %d)", p.seq, uint16(prev), p.ssrc)
					}
				}
				if seen[p.ssrc] == nil {
					seen[p.ssrc] = map[int]bool{}
				}
				if seen[p.ssrc][cur] {
					t.Fatalf("released seq %d twice", p.seq)
				}
				seen[p.ssrc][cur] = true
				lastSeq[p.ssrc] = cur
			}
			if b.held >= reorderHold {
				t.Fatalf("holding %d packets, want < %d", b.held, reorderHold)
			}
			if got := uint64(released+b.held) + b.stats.Late + b.stats.Duplicate; got != b.stats.Received {
				t.Fatalf("received %d, accounted %d (released %d held %d late %d dup %d)", b.stats.Received, got, released, b.held, b.stats.Late, b.stats.Duplicate)
			}
		}
		for i := 0; i+2 < len(ops); i += 3 {
			seq += uint16(int8(ops[i]))
			if ops[i+1]&1 == 1 {
				ssrc++
				lastSeq = map[uint32]int{}
				seen = map[uint32]map[int]bool{}
			}
			now = now.Add(time.Duration(ops[i+2]) * time.Millisecond)
			out = b.push(rtpIn{seq: seq, ssrc: ssrc}, now, out[:0])
			check()
			out = b.expire(now.Add(b.wait(now)), out[:0])
			check()
		}
	})
}
