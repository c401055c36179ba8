package sip

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// dialog is what a line needs of its SIP dialog, outbound (UAC) or
// inbound (UAS).
type dialog interface {
	Do(ctx context.Context, req *sip.Request) (*sip.Response, error)
	Bye(ctx context.Context) error
	// remoteTarget is the far party's Contact: where in-dialog requests go.
	remoteTarget() sip.Uri
	// matches reports whether req belongs to this dialog (Call-ID and tags).
	matches(req *sip.Request) bool
	readBye(req *sip.Request, tx sip.ServerTransaction) error
}

type clientDialog struct{ *sipgo.DialogClientSession }

func (d clientDialog) remoteTarget() sip.Uri {
	if c := d.InviteResponse.Contact(); c != nil {
		return c.Address
	}
	return d.InviteRequest.Recipient
}

func (d clientDialog) matches(req *sip.Request) bool {
	id, err := sip.DialogIDFromRequestUAC(req)
	return err == nil && id == d.ID
}

func (d clientDialog) readBye(req *sip.Request, tx sip.ServerTransaction) error {
	return d.ReadBye(req, tx)
}

type serverDialog struct{ *sipgo.DialogServerSession }

func (d serverDialog) remoteTarget() sip.Uri {
	if c := d.InviteRequest.Contact(); c != nil {
		return c.Address
	}
	return sip.Uri{}
}

func (d serverDialog) matches(req *sip.Request) bool {
	id, err := sip.DialogIDFromRequestUAS(req)
	return err == nil && id == d.ID
}

func (d serverDialog) readBye(req *sip.Request, tx sip.ServerTransaction) error {
	return d.ReadBye(req, tx)
}

// portAllocator hands out even RTP ports of a range (RTCP takes the odd
// one above), starting each search after the last port given so that a
// port just released is not reused at once (late packets of the old call).
type portAllocator struct {
	mu   sync.Mutex
	r    PortRange
	next int
}

func newPortAllocator(r PortRange) *portAllocator {
	return &portAllocator{r: r, next: r.Min + r.Min%2}
}

// candidates calls try with each even port of the range once, starting
// after the last port taken, until try returns true.
func (a *portAllocator) candidates(try func(port int) bool) {
	a.mu.Lock()
	first := a.r.Min + a.r.Min%2
	last := a.r.Max - 1 // RTCP needs port+1 ≤ Max
	p := a.next
	a.mu.Unlock()
	for range (last-first)/2 + 1 {
		if p > last || p < first {
			p = first
		}
		if try(p) {
			return
		}
		p += 2
	}
}

// taken records that port was bound, so the next search starts after it.
func (a *portAllocator) taken(port int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next = port + 2
}

// rtpMedia is a call's RTP and RTCP sockets before the answer.
type rtpMedia struct {
	sess      *media.MediaSession
	local     netip.AddrPort // what our SDP announces
	sessionID uint64
}

// openMedia binds an RTP/RTCP port pair from the configured range.
func (p *Provider) openMedia() (*rtpMedia, error) {
	bind := net.IP(p.listenHost.AsSlice())
	var lastErr error
	var m *rtpMedia
	p.ports.candidates(func(port int) bool {
		sess := &media.MediaSession{
			Codecs: []media.Codec{media.CodecAudioUlaw, media.CodecAudioAlaw, media.CodecTelephoneEvent8000},
			Laddr:  net.UDPAddr{IP: bind, Port: port},
			Mode:   "sendrecv",
		}
		if err := sess.Init(); err != nil {
			lastErr = err
			return false
		}
		p.ports.taken(port)
		var b [8]byte
		_, _ = rand.Read(b[:])
		m = &rtpMedia{
			sess:      sess,
			local:     netip.AddrPortFrom(p.publicIP, uint16(port)),
			sessionID: binary.BigEndian.Uint64(b[:]) >> 2, // SDP ids are decimal; keep them short
		}
		return true
	})
	if m == nil {
		return nil, fmt.Errorf("sip: no free RTP port in %d-%d: %w", p.cfg.RTPPorts.Min, p.cfg.RTPPorts.Max, lastErr)
	}
	return m, nil
}

func (m *rtpMedia) close() {
	_ = m.sess.Close()
}

// packetDuration is G.711's packetization here (a=ptime:20).
const packetDuration = 20 * time.Millisecond
