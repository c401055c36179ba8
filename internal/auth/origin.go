package auth

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// maxOriginLen bounds an origin: a host name is at most 253 characters.
const maxOriginLen = 300

// NormalizeOrigin checks that s is a web origin, scheme://host[:port] with
// scheme http or https, and returns it as browsers send it in the Origin
// header: lower case, without the scheme's default port, an IPv6 address
// in its canonical form. Anything else is an error saying what is
// expected: a path (even "/"), a query, a fragment, user info, a wildcard
// (publishable keys name each origin exactly), a host name that is not
// ASCII (write its xn-- form), an invalid port or IP address.
func NormalizeOrigin(s string) (string, error) {
	if len(s) > maxOriginLen {
		return "", fmt.Errorf("must be at most %d characters", maxOriginLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			if c >= 0x80 {
				return "", errors.New("must be ASCII: write an international host name in its xn-- (punycode) form")
			}
			return "", errors.New("must not contain spaces or control characters")
		}
	}
	scheme, rest, ok := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	if !ok || scheme != "http" && scheme != "https" {
		return "", errors.New("must be an origin such as https://shop.example.com: scheme http or https, then ://")
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return "", errors.New("must be an origin only, scheme://host[:port], without a path (not even /), query or fragment")
	}
	if strings.Contains(rest, "@") {
		return "", errors.New("must not contain user info (@)")
	}
	if strings.Contains(rest, "*") {
		return "", errors.New("must name one origin exactly: wildcards are not supported; list each origin")
	}
	host, port := rest, ""
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if end < 0 {
			return "", errors.New("has an IPv6 address without its closing ]")
		}
		host, port = rest[:end+1], rest[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return "", errors.New("must have only :port after the host")
		}
		port = strings.TrimPrefix(port, ":")
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Zone() != "" || a.Is4In6() {
			return "", errors.New("has an invalid IPv6 address")
		}
		host = "[" + a.String() + "]"
	} else {
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			host, port = rest[:i], rest[i+1:]
		}
		h, err := normalizeHost(host)
		if err != nil {
			return "", err
		}
		host = h
	}
	if port != "" || strings.HasSuffix(rest, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '+' || port[0] == '-' {
			return "", errors.New("has an invalid port: want 1 to 65535")
		}
		if scheme == "http" && n == 80 || scheme == "https" && n == 443 {
			port = ""
		} else {
			port = strconv.Itoa(n)
		}
	}
	out := scheme + "://" + host
	if port != "" {
		out += ":" + port
	}
	return out, nil
}

// normalizeHost lower-cases a host name and checks its labels; a host that
// looks like an IPv4 address must be one, in dotted-decimal form.
func normalizeHost(host string) (string, error) {
	if host == "" {
		return "", errors.New("has no host")
	}
	host = strings.ToLower(host)
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" {
			return "", errors.New("has an empty label in its host (two dots, or a leading or trailing dot)")
		}
		if len(l) > 63 {
			return "", errors.New("has a host label longer than 63 characters")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("has %q in its host: a host name has letters, digits, - and _", c)
			}
		}
	}
	last := labels[len(labels)-1]
	if last[0] >= '0' && last[0] <= '9' {
		// Browsers read a host ending in a number as an IPv4 address.
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is4() {
			return "", errors.New("has an invalid IPv4 address")
		}
		return a.String(), nil
	}
	return host, nil
}
