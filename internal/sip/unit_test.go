package sip

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"

	"switchboard/internal/audio"
	"switchboard/internal/telephony"
)

// TestClassify is the status table of docs/ARCHITECTURE.md, row by row.
func TestClassify(t *testing.T) {
	tests := []struct {
		status        int
		authenticated bool
		want          telephony.Error
	}{
		{486, false, telephony.Error{Outcome: "busy", Reason: "customer-busy", Retryable: true}},
		{600, false, telephony.Error{Outcome: "busy", Reason: "customer-busy", Retryable: true}},
		{408, false, telephony.Error{Outcome: "no-answer", Reason: "customer-did-not-answer", Retryable: true}},
		{480, false, telephony.Error{Outcome: "no-answer", Reason: "customer-did-not-answer", Retryable: true}},
		{StatusRingTimeout, false, telephony.Error{Outcome: "no-answer", Reason: "customer-did-not-answer", Retryable: true}},
		{404, false, telephony.Error{Outcome: "failed", Reason: "sip-invalid-number"}},
		{410, false, telephony.Error{Outcome: "failed", Reason: "sip-invalid-number"}},
		{484, false, telephony.Error{Outcome: "failed", Reason: "sip-invalid-number"}},
		{604, false, telephony.Error{Outcome: "failed", Reason: "sip-invalid-number"}},
		{401, true, telephony.Error{Outcome: "failed", Reason: "sip-auth-failed"}},
		{403, true, telephony.Error{Outcome: "failed", Reason: "sip-auth-failed"}},
		{407, true, telephony.Error{Outcome: "failed", Reason: "sip-auth-failed"}},
		{403, false, telephony.Error{Outcome: "failed", Reason: "sip-call-rejected"}},
		{401, false, telephony.Error{Outcome: "failed", Reason: "sip-call-rejected"}},
		{487, false, telephony.Error{Outcome: "canceled", Reason: "api-ended-call"}},
		{488, false, telephony.Error{Outcome: "failed", Reason: "sip-call-rejected"}},
		{603, false, telephony.Error{Outcome: "failed", Reason: "sip-call-rejected"}},
		{302, false, telephony.Error{Outcome: "failed", Reason: "sip-call-rejected"}},
		{500, false, telephony.Error{Outcome: "failed", Reason: "sip-provider-failed", Retryable: true}},
		{503, true, telephony.Error{Outcome: "failed", Reason: "sip-provider-failed", Retryable: true}},
		{0, false, telephony.Error{Outcome: "failed", Reason: "sip-provider-failed", Retryable: true}},
	}
	for _, tt := range tests {
		got := Classify(tt.status, tt.authenticated)
		tt.want.Status = tt.status
		if got == nil || *got != tt.want {
			t.Errorf("Classify(%d, %v) = %+v, want %+v", tt.status, tt.authenticated, got, tt.want)
		}
	}
	for _, s := range []int{100, 180, 183, 200, 202} {
		if got := Classify(s, false); got != nil {
			t.Errorf("Classify(%d) = %+v, want nil (not a failure)", s, got)
		}
	}
}

func TestNormalizeNumber(t *testing.T) {
	tests := []struct{ in, want string }{
		{"+16175550100", "+16175550100"},
		{"16175550100", "+16175550100"},
		{"0016175550100", "+16175550100"},
		{"+1 (617) 555-0100", "+16175550100"},
		{"447700900123", "+447700900123"},
		{"+4930123456", "+4930123456"},
		{"6175550100", ""}, // national: not guessed
		{"5550100", ""},
		{"+0123456789", ""},
		{"+1234567890123456", ""}, // 16 digits
		{"anonymous", ""},
		{"", ""},
		{"+", ""},
		{"1617555010a", ""},
		{"+1617+5550100", ""},
	}
	for _, tt := range tests {
		if got := NormalizeNumber(tt.in); got != tt.want {
			t.Errorf("NormalizeNumber(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func parseReq(t *testing.T, raw string) *sip.Request {
	t.Helper()
	msg, err := sip.NewParser().ParseSIP([]byte(strings.ReplaceAll(raw, "\n", "\r\n")))
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return msg.(*sip.Request)
}

func TestDialedNumber(t *testing.T) {
	head := "Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\nCall-ID: a\nCSeq: 1 INVITE\nContent-Length: 0\n"
	tests := []struct{ ruri, to, from, wantTo, wantFrom string }{
		{"sip:+16175550100@sw.example", "<sip:+16175550100@sw.example>", "<sip:+16175550199@carrier>;tag=1", "+16175550100", "+16175550199"},
		{"sip:16175550100@sw.example;user=phone", "<sip:x@sw.example>", "\"Dana\" <sip:16175550199@carrier>;tag=1", "+16175550100", "+16175550199"},
		{"sip:%2B16175550100@sw.example", "<sip:x@y>", "<sip:anonymous@anonymous.invalid>;tag=1", "+16175550100", "anonymous"},
		{"sip:trunk-account@sw.example", "<sip:+16175550100@sw.example>", "<sip:100@pbx>;tag=1", "+16175550100", "100"},
		{"sip:+16175550100;npdi;rn=+16175550000@sw.example", "<sip:x@y>", "<sip:+16175550199@c>;tag=1", "+16175550100", "+16175550199"},
		{"tel:+16175550100", "<tel:+16175550100>", "<sip:+16175550199@c>;tag=1", "+16175550100", "+16175550199"},
		{"sip:service@sw.example", "<sip:service@sw.example>", "<sip:a@b>;tag=1", "service", "a"},
	}
	for _, tt := range tests {
		req := parseReq(t, "INVITE "+tt.ruri+" SIP/2.0\n"+head+"To: "+tt.to+"\nFrom: "+tt.from+"\n\n")
		if got := dialedNumber(req); got != tt.wantTo {
			t.Errorf("dialedNumber(R-URI %s, To %s) = %q, want %q", tt.ruri, tt.to, got, tt.wantTo)
		}
		if got := callerNumber(req); got != tt.wantFrom {
			t.Errorf("callerNumber(From %s) = %q, want %q", tt.from, got, tt.wantFrom)
		}
	}
}

const sippOffer = "v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" +
	"m=audio 6000 RTP/AVP 8 101\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-11,16\r\n"

func TestParseSDPAndChooseCodecs(t *testing.T) {
	tests := []struct {
		name    string
		sdp     string
		addr    string
		enc     audio.Encoding
		pt      uint8
		dtmf    int
		wantErr bool
	}{
		{"SIPp uac_pcap offer", sippOffer, "127.0.0.1:6000", audio.Alaw, 8, 101, false},
		{"PCMU first, dynamic telephone-event 96, media-level c=",
			"v=0\no=- 1 1 IN IP4 10.0.0.9\ns=-\nc=IN IP4 10.0.0.9\nt=0 0\nm=audio 30000 RTP/AVP 0 8 96\nc=IN IP4 203.0.113.5\na=rtpmap:96 telephone-event/8000\na=sendrecv\n",
			"203.0.113.5:30000", audio.Mulaw, 0, 96, false},
		{"static types without rtpmap", "v=0\nc=IN IP4 10.1.1.1\nm=audio 4000 RTP/AVP 18 0\n", "10.1.1.1:4000", audio.Mulaw, 0, -1, false},
		{"video first then audio",
			"v=0\nc=IN IP4 10.1.1.1\nm=video 5000 RTP/AVP 96\nc=IN IP4 10.9.9.9\nm=audio 4000 RTP/AVP 8\n", "10.1.1.1:4000", audio.Alaw, 8, -1, false},
		{"IPv6", "v=0\nc=IN IP6 2001:db8::1\nm=audio 4000 RTP/AVP 0\n", "[2001:db8::1]:4000", audio.Mulaw, 0, -1, false},
		{"only opus", "v=0\nc=IN IP4 10.1.1.1\nm=audio 4000 RTP/AVP 111\na=rtpmap:111 opus/48000/2\n", "", "", 0, 0, true},
		{"SRTP", "v=0\nc=IN IP4 10.1.1.1\nm=audio 4000 RTP/SAVP 0\n", "", "", 0, 0, true},
		{"port 0", "v=0\nc=IN IP4 10.1.1.1\nm=audio 0 RTP/AVP 0\n", "", "", 0, 0, true},
		{"no c=", "v=0\nm=audio 4000 RTP/AVP 0\n", "", "", 0, 0, true},
		{"empty", "", "", "", 0, 0, true},
	}
	for _, tt := range tests {
		rm, err := parseSDP([]byte(tt.sdp))
		var c codecs
		if err == nil {
			c, err = chooseCodecs(rm)
		}
		if tt.wantErr {
			if err == nil {
				t.Errorf("%s: parse+choose = %+v, want an error", tt.name, c)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if rm.Addr != netip.MustParseAddrPort(tt.addr) || c.Format.Encoding != tt.enc || c.AudioPT != tt.pt || c.DTMFPT != tt.dtmf {
			t.Errorf("%s: addr %v, %s pt %d, dtmf %d; want %s, %s pt %d, dtmf %d", tt.name, rm.Addr, c.Format.Encoding, c.AudioPT, c.DTMFPT, tt.addr, tt.enc, tt.pt, tt.dtmf)
		}
	}
}

// TestBuildSDPRoundTrip checks that our own offer and answers parse back to
// what they say, and that the answer mirrors the offer's telephone-event
// payload type.
func TestBuildSDPRoundTrip(t *testing.T) {
	addr := netip.MustParseAddrPort("198.51.100.7:10002")
	offer := buildSDP(addr, 42, 42, offerFormats)
	rm, err := parseSDP(offer)
	if err != nil {
		t.Fatalf("parseSDP(our offer): %v\n%s", err, offer)
	}
	c, _ := chooseCodecs(rm)
	if rm.Addr != addr || c.Format.Encoding != audio.Mulaw || c.DTMFPT != ptTelephoneOff || len(rm.Formats) != 3 {
		t.Errorf("our offer reads back as %+v %+v\n%s", rm, c, offer)
	}
	answer := buildSDP(addr, 7, 8, answerFormats(codecs{AudioPT: 8, Format: audio.Format{Encoding: audio.Alaw, SampleRate: 8000}, DTMFPT: 96}))
	if !bytes.Contains(answer, []byte("m=audio 10002 RTP/AVP 8 96\r\n")) || !bytes.Contains(answer, []byte("a=rtpmap:96 telephone-event/8000")) ||
		!bytes.Contains(answer, []byte("o=- 7 8 IN IP4 198.51.100.7")) {
		t.Errorf("answer for PCMA + telephone-event/96:\n%s", answer)
	}
}

func TestDTMFDetector(t *testing.T) {
	ev := func(code byte, end bool, dur uint16) []byte {
		return telephoneEvent{Event: code, End: end, Volume: 10, Duration: dur}.append(nil)
	}
	type pkt struct {
		ssrc, ts uint32
		payload  []byte
	}
	// Two presses of "1" then "#", each as our SendDTMF sends them (five
	// growing packets, three end packets), with one packet lost and one
	// duplicated; then a flash-hook event (16), which is not a key.
	var in []pkt
	for _, press := range []struct {
		ts   uint32
		code byte
	}{{1000, 1}, {5000, 1}, {9000, 11}} {
		for k := range 8 {
			if press.ts == 5000 && k == 0 {
				continue // lost first packet
			}
			in = append(in, pkt{7, press.ts, ev(press.code, k >= 5, uint16(min(k+1, 5)*160))})
		}
	}
	in = append(in, in[len(in)-1])
	in = append(in, pkt{7, 13000, ev(16, false, 160)}, pkt{7, 13000, []byte{1, 2}})
	var d dtmfDetector
	var got []byte
	for _, p := range in {
		if k, ok := d.packet(p.ssrc, p.ts, p.payload); ok {
			got = append(got, k)
		}
	}
	if string(got) != "11#" {
		t.Errorf("dtmfDetector keys = %q, want %q", got, "11#")
	}
}

func TestParseInfoDTMF(t *testing.T) {
	tests := []struct {
		ct, body string
		want     byte
		ok       bool
	}{
		{"application/dtmf-relay", "Signal=5\r\nDuration=160\r\n", '5', true},
		{"application/dtmf-relay", "Signal= *\nDuration= 250", '*', true},
		{"Application/DTMF-Relay; charset=x", "signal=11\r\n", '#', true},
		{"application/dtmf-relay", "Signal=d", 'D', true},
		{"application/dtmf", "#", '#', true},
		{"application/dtmf", " 7\r\n", '7', true},
		{"application/dtmf-relay", "Duration=160", 0, false},
		{"application/dtmf-relay", "Signal=16", 0, false},
		{"application/dtmf-relay", "Signal=x", 0, false},
		{"text/plain", "5", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseInfoDTMF(tt.ct, []byte(tt.body))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseInfoDTMF(%q, %q) = %q, %v; want %q, %v", tt.ct, tt.body, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseSipfrag(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"SIP/2.0 200 OK", 200, true},
		{"SIP/2.0 100 Trying\r\n", 100, true},
		{"SIP/2.0 486 Busy Here\r\nContent-Length: 0\r\n", 486, true},
		{"sip/2.0 603 Decline", 603, true},
		{"HTTP/1.1 200 OK", 0, false},
		{"SIP/2.0 2000 OK", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseSipfrag([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseSipfrag(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCheckDigits(t *testing.T) {
	for _, ok := range []string{"0123456789*#ABCD", "abcd", "1"} {
		if err := checkDigits(ok); err != nil {
			t.Errorf("checkDigits(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "12x", "1 2", strings.Repeat("1", 65), "\x00"} {
		if err := checkDigits(bad); err == nil {
			t.Errorf("checkDigits(%q) = nil, want an error", bad)
		}
	}
}

func TestRefusal(t *testing.T) {
	tests := []struct {
		err    error
		status int
	}{
		{telephony.ErrUnknownNumber, 404},
		{telephony.ErrSourceRefused, 403},
		{telephony.ErrNoInboundAgent, 480},
		{telephony.ErrUnavailable, 503},
		{bytes.ErrTooLarge, 503},
	}
	for _, tt := range tests {
		if got, _, _ := refusal(tt.err); got != tt.status {
			t.Errorf("refusal(%v) = %d, want %d", tt.err, got, tt.status)
		}
	}
}

func TestParsePortRange(t *testing.T) {
	if r, err := ParsePortRange("10000-20000"); err != nil || r != (PortRange{10000, 20000}) {
		t.Errorf("ParsePortRange(10000-20000) = %v, %v", r, err)
	}
	for _, bad := range []string{"", "10000", "a-b", "20000-10000", "80-90", "10000-10001", "60000-70000"} {
		if _, err := ParsePortRange(bad); err == nil {
			t.Errorf("ParsePortRange(%q) = nil error, want one", bad)
		}
	}
}

func TestPortAllocator(t *testing.T) {
	a := newPortAllocator(PortRange{10001, 10010})
	all := func() (ports []int) {
		a.candidates(func(p int) bool { ports = append(ports, p); return false })
		return ports
	}
	if got, want := all(), []int{10002, 10004, 10006, 10008}; !slices.Equal(got, want) {
		t.Fatalf("candidates = %v, want %v", got, want)
	}
	a.taken(10004)
	if got, want := all(), []int{10006, 10008, 10002, 10004}; !slices.Equal(got, want) {
		t.Errorf("after taken(10004) candidates = %v, want %v", got, want)
	}
	var tried []int
	a.candidates(func(p int) bool { tried = append(tried, p); return p == 10008 })
	if want := []int{10006, 10008}; !slices.Equal(tried, want) {
		t.Errorf("candidates stopping at 10008 tried %v, want %v", tried, want)
	}
}

func TestReorderBuffer(t *testing.T) {
	t0 := time.Unix(100, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	seqs := func(ps []rtpIn) (s []uint16) {
		for _, p := range ps {
			s = append(s, p.seq)
		}
		return s
	}
	var b reorderBuffer
	var got []uint16
	push := func(seq uint16, at int) {
		got = append(got, seqs(b.push(rtpIn{seq: seq, ssrc: 1}, ms(at), nil))...)
	}
	push(65534, 0) // in order across the wrap: released at once
	push(65535, 20)
	push(1, 40) // 0 is late: 1 waits
	if len(got) != 2 {
		t.Fatalf("released %v, want 65534 65535 with 1 held", got)
	}
	push(0, 45)     // arrives: both go
	push(1, 50)     // a duplicate
	push(65500, 60) // 38 behind: late
	if want := []uint16{65534, 65535, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("released %v, want %v", got, want)
	}
	push(3, 80) // 2 lost: held until reorderWait
	if w := b.wait(ms(80)); w != reorderWait {
		t.Errorf("wait = %v, want %v", w, reorderWait)
	}
	got = append(got, seqs(b.expire(ms(139), nil))...)
	if len(got) != 4 {
		t.Fatalf("released %v before the wait was over", got)
	}
	got = append(got, seqs(b.expire(ms(140), nil))...)
	push(4, 150)
	if want := []uint16{65534, 65535, 0, 1, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("released %v, want %v", got, want)
	}
	// 1 arriving again after its release counts late, as does 65500.
	if s := b.stats; s.Received != 8 || s.Lost != 1 || s.Late != 2 || s.Duplicate != 0 || s.Resets != 0 {
		t.Errorf("stats = %+v, want 8 received, 1 lost, 2 late", s)
	}
	b = reorderBuffer{}
	got = nil
	push(10, 0)
	for s := uint16(12); s < 12+reorderHold; s++ { // 11 lost, then a burst
		push(s, 1)
	}
	if want := []uint16{10, 12, 13, 14, 15, 16}; !slices.Equal(got, want) {
		t.Errorf("after holding %d packets released %v, want %v", reorderHold, got, want)
	}
	got = nil
	got = append(got, seqs(b.push(rtpIn{seq: 500, ssrc: 2}, ms(2), nil))...) // a new source
	if want := []uint16{500}; !slices.Equal(got, want) {
		t.Errorf("new source: released %v, want %v", got, want)
	}
}
