package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUnsafeURL is matched (with errors.Is) by every refusal from a Guard,
// at registration (CheckURL) and at connect time (Transport), so callers can
// tell "this destination is not allowed" (a 400 for the API, a failure not
// worth retrying soon for delivery) from a network or DNS error.
var ErrUnsafeURL = errors.New("webhook: unsafe URL")

type unsafeError struct {
	msg string
	// private marks a refusal of the destination's address (loopback,
	// private, …), which Guard.AllowPrivate would lift, as opposed to one
	// of the URL's form (scheme, credentials, port).
	private bool
}

func (e *unsafeError) Error() string        { return e.msg }
func (e *unsafeError) Is(target error) bool { return target == ErrUnsafeURL }

func unsafef(format string, args ...any) error {
	return &unsafeError{msg: fmt.Sprintf(format, args...)}
}

// privatef is unsafef for a refused address.
func privatef(format string, args ...any) error {
	return &unsafeError{msg: fmt.Sprintf(format, args...), private: true}
}

// IsPrivateRefusal reports whether err refuses a destination for its
// address (loopback, private network, metadata …) rather than for the
// URL's form: the refusals a server started with --webhook-allow-private
// would not make.
func IsPrivateRefusal(err error) bool {
	var u *unsafeError
	return errors.As(err, &u) && u.private
}

// Resolver looks up a host's addresses. *net.Resolver satisfies it; the
// Guard declares only this method so tests can resolve names without DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Guard keeps webhook deliveries from reaching the server's own network
// (server-side request forgery): an endpoint URL is user input, and without
// this check "https://169.254.169.254/…" or "http://10.0.0.5:5432" would make
// Switchboard probe cloud metadata or internal services on the user's behalf.
// It refuses URLs that are not http(s), that carry credentials, or whose host
// is or resolves to a loopback, private (RFC 1918, fc00::/7), link-local,
// unspecified, multicast, carrier-grade NAT (100.64.0.0/10), reserved or
// cloud-metadata address, or to an IPv6 address that carries such an IPv4
// address (NAT64, 6to4, Teredo, SIIT; see embeddings). The zero Guard is the
// safe one.
type Guard struct {
	// AllowPrivate turns the address checks off, for self-hosted installs
	// whose receivers live on the same private network (and for tests). The
	// scheme and credential checks still apply.
	AllowPrivate bool
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
}

// CheckURL validates an endpoint URL when it is registered, so the user
// learns at once, with the reason, that it will never be delivered to.
// Every error means "refuse this URL"; those wrapping ErrUnsafeURL are policy
// refusals, the others are DNS failures worth retrying. The messages are
// written for the user and name the URL's host, never internals.
//
// Passing here is not enough on its own: DNS can change between
// registration and delivery (DNS rebinding), which is why Transport checks
// every address again when it connects.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return unsafef("url is not a valid URL")
	}
	switch u.Scheme {
	case "https", "http":
	case "":
		return unsafef("url must be absolute, starting with https://")
	default:
		return unsafef("url must start with https:// (or http://), not %s://", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return unsafef("url must name a host, as in https://hooks.example.com/switchboard")
	}
	if u.User != nil {
		return unsafef("url must not contain credentials (user:password@); receivers authenticate deliveries by their signature")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return unsafef("url port %q must be a number from 1 to 65535", p)
		}
	}
	_, err = g.resolve(ctx, u.Hostname())
	return err
}

// CheckAddr reports why the delivery client may not connect to addr, or nil
// if it may. It is exported for other outbound requests that take URLs from
// users (tool calls, custom model endpoints), which need the same policy.
func (g Guard) CheckAddr(addr netip.Addr) error {
	if g.AllowPrivate {
		return nil
	}
	if reason := blockReason(addr); reason != "" {
		return privatef("%s is %s", addr, reason)
	}
	return nil
}

// resolve returns the addresses to connect to for host, after refusing the
// host if any of them is blocked. All must pass, not just one: the dialer may
// pick any, and a rebinding attacker mixes public and private answers.
func (g Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if err := g.CheckAddr(a); err != nil {
			return nil, privatef("url host %s", err)
		}
		return []netip.Addr{a}, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !g.AllowPrivate {
		if name == "localhost" || strings.HasSuffix(name, ".localhost") {
			return nil, privatef("url host %q is a loopback name", host)
		}
		// "127.1", "2130706433" and "0x7f.1" are not IP addresses to Go but
		// are to the C library's resolver; no real DNS name ends in a
		// label that starts with a digit.
		if i := strings.LastIndexByte(name, '.'); i+1 < len(name) && name[i+1] >= '0' && name[i+1] <= '9' {
			return nil, privatef("url host %q is neither a standard IP address nor a DNS name", host)
		}
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("url host %q could not be resolved: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("url host %q has no addresses", host)
	}
	for _, a := range addrs {
		if reason := blockReason(a); reason != "" && !g.AllowPrivate {
			return nil, privatef("url host %q resolves to %s, %s", host, a, reason)
		}
	}
	return addrs, nil
}

// Transport returns the HTTP transport for the delivery client. It resolves
// each host itself, refuses it unless every address passes the Guard, and
// then dials those vetted addresses only, so a DNS answer that changed since
// CheckURL (DNS rebinding) is caught at connect time. The dialer re-checks
// the socket address once more just before connecting. It uses no proxy: a
// proxy would make the connection, and the Guard would vet only the proxy.
func (g Guard) Transport() *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !g.AllowPrivate {
		d.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return unsafef("refusing to connect to %q: not an IP address", address)
			}
			if err := g.CheckAddr(ap.Addr()); err != nil {
				return unsafef("refusing to connect: %s", err)
			}
			return nil
		}
	}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return g.dial(ctx, d, network, addr)
		},
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// dial connects to the first vetted address of addr's host that answers.
func (g Guard) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// Blocked ranges that netip.Addr has no predicate for.
var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")     // RFC 1122: "this host on this network"
	cgnat       = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598 shared address space
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")   // RFC 1112 reserved, incl. broadcast
	siteLocal6  = netip.MustParsePrefix("fec0::/10")     // deprecated site-local, still routed internally
	metadata    = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack instance metadata
		netip.MustParseAddr("fd00:ec2::254"),   // AWS instance metadata over IPv6
	}
)

// IPv6 addresses that carry an IPv4 address. A packet to one of them is
// turned into an IPv4 packet to the embedded address by a translator or a
// tunnel endpoint — a NAT64 gateway, a 6to4 or Teredo relay, or this host's
// own tunnel interface — and when that translator sits in the server's
// network, "[2002:7f00:1::1]" reaches 127.0.0.1 as surely as "127.0.0.1"
// does. So each form is either judged by the IPv4 rules applied to the
// address it carries, where the RFC fixes where that address is, or refused
// outright, where it does not or where the prefix has no public use:
//
//   - 64:ff9b::/96, the NAT64 well-known prefix (RFC 6052 §2.1): the IPv4
//     address is the last 32 bits. Judged, not refused: on an IPv6-only host
//     behind DNS64, every public name resolves to such an address.
//   - 64:ff9b:1::/48, local-use NAT64 (RFC 8215): refused. Its operator
//     chooses the prefix length and so where the IPv4 address sits (RFC 6052
//     §2.2 allows six), and IANA marks the block not globally reachable.
//   - ::/96, IPv4-compatible (RFC 4291 §2.5.5.1): refused; deprecated since
//     2006, no receiver uses one, and some stacks still tunnel it to the IPv4
//     address. (:: and ::1 are in it; they are refused first as unspecified
//     and loopback.)
//   - ::ffff:0:0/96, IPv4-translated (SIIT, RFC 2765 §2.1): the last 32
//     bits. (IPv4-mapped ::ffff:0:0/96, RFC 4291 §2.5.5.2, is unmapped to
//     plain IPv4 before any rule.)
//   - 2002::/16, 6to4 (RFC 3056 §2): the IPv4 address is bits 16-47.
//   - 2001::/32, Teredo (RFC 4380 §4): the server's IPv4 address is bits
//     32-63 and the client's is the last 32 bits, inverted (XOR 0xffffffff);
//     both must pass, since a relay talks to the server and a Teredo client
//     on this host sends to the client's address directly.
//
// Not here: ISATAP interface identifiers (RFC 5214) carry an IPv4 address
// too, but it is reached only inside the network the prefix routes to, so
// under a public prefix it is someone else's network, not the server's.
var embeddings = []struct {
	prefix netip.Prefix
	name   string
	// v4 extracts the embedded addresses, labeled; nil refuses the prefix.
	v4 func(b [16]byte) []labeledV4
	// refusal is the reason given when v4 is nil.
	refusal string
}{
	{prefix: netip.MustParsePrefix("64:ff9b::/96"), name: "NAT64", v4: last32},
	{prefix: netip.MustParsePrefix("64:ff9b:1::/48"), refusal: "a local-use NAT64 address (64:ff9b:1::/48, RFC 8215)"},
	{prefix: netip.MustParsePrefix("::/96"), refusal: "a deprecated IPv4-compatible address (::/96, RFC 4291)"},
	{prefix: netip.MustParsePrefix("::ffff:0:0:0/96"), name: "SIIT", v4: last32},
	{prefix: netip.MustParsePrefix("2002::/16"), name: "6to4", v4: func(b [16]byte) []labeledV4 {
		return []labeledV4{{"", netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})}}
	}},
	{prefix: netip.MustParsePrefix("2001::/32"), name: "Teredo", v4: func(b [16]byte) []labeledV4 {
		return []labeledV4{
			{"server ", netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})},
			{"client ", netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})},
		}
	}},
}

// labeledV4 is an embedded IPv4 address and which one it is ("client ").
type labeledV4 struct {
	label string
	addr  netip.Addr
}

func last32(b [16]byte) []labeledV4 {
	return []labeledV4{{"", netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})}}
}

// blockReason says which forbidden kind of address a is, or "" if it is an
// ordinary public address. Reasons read after "is": "10.0.0.1 is a private
// address (RFC 1918)".
func blockReason(a netip.Addr) string {
	if !a.IsValid() {
		return "not a valid IP address"
	}
	a = a.WithZone("").Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	for _, m := range metadata {
		if a == m {
			return "a cloud metadata address"
		}
	}
	switch {
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return "an unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate() && a.Is4():
		return "a private address (RFC 1918)"
	case a.IsPrivate():
		return "a private address (unique local, fc00::/7)"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case cgnat.Contains(a):
		return "a carrier-grade NAT address (100.64.0.0/10)"
	case reserved4.Contains(a):
		return "a reserved address (240.0.0.0/4)"
	case siteLocal6.Contains(a):
		return "a site-local address (fec0::/10)"
	}
	if a.Is4() {
		return ""
	}
	for _, e := range embeddings {
		if !e.prefix.Contains(a) {
			continue
		}
		if e.v4 == nil {
			return e.refusal
		}
		for _, v4 := range e.v4(a.As16()) {
			if r := blockReason(v4.addr); r != "" {
				return r + " via " + e.name + " (" + v4.label + v4.addr.String() + ")"
			}
		}
		return ""
	}
	return ""
}
