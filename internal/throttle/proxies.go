package throttle

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the reverse proxies in front of the server, whose
// X-Forwarded-For is believed. The zero value trusts nobody: the client is
// the TCP peer, whatever headers it sends.
type Proxies []netip.Prefix

// ParseProxies reads a comma-separated list of addresses and CIDR prefixes
// ("10.0.0.1, 10.1.0.0/16, ::1"). An empty list is valid and trusts nobody.
func ParseProxies(list string) (Proxies, error) {
	var out Proxies
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR prefix", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not an address or CIDR prefix", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// trusts reports whether a is one of the proxies.
func (p Proxies) trusts(a netip.Addr) bool {
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// Client is the address of the client that sent r. It is the TCP peer,
// unless the peer is a trusted proxy: then X-Forwarded-For is read from the
// right (the entry the proxy itself appended) past every trusted proxy, and
// the first address that is not one is the client. An entry that does not
// parse stops the walk at the last address known good, so a garbled header
// can never make the client someone else.
//
// Forwarded (RFC 7239) is not read: a proxy that maintains only
// X-Forwarded-For (nginx, HAProxy, most load balancers) passes a client's
// own Forwarded header through untouched, and believing it would let any
// client pick its address.
//
// The zero Addr is returned only when the peer's address cannot be parsed
// (a Unix socket); all such clients then share one budget.
func (p Proxies) Client(r *http.Request) netip.Addr {
	client := peer(r.RemoteAddr)
	if len(p) == 0 || !client.IsValid() || !p.trusts(client) {
		return client
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		entries := strings.Split(hops[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			a, ok := parseHop(entries[j])
			if !ok {
				return client
			}
			client = a
			if !p.trusts(a) {
				return client
			}
		}
	}
	return client
}

// peer parses a RemoteAddr ("ip:port").
func peer(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

// parseHop parses one X-Forwarded-For entry: an address, with or without a
// port, IPv6 possibly in brackets.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap().WithZone(""), true
		}
	}
	return netip.Addr{}, false
}
