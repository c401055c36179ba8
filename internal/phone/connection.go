package phone

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/nyaruka/phonenumbers"

	"switchboard/internal/apperr"
)

// ProviderSIP names SIP connections and the numbers bought on them.
const ProviderSIP = "sip"

// ProviderTwilio names Twilio connections (an organization's own Twilio
// account) and the numbers bought or imported through them.
const ProviderTwilio = "twilio"

// ConnectionProviders are the providers whose numbers come from an
// organization's own connections rather than from a shared inventory.
var ConnectionProviders = []string{ProviderSIP, ProviderTwilio}

// IsConnectionProvider reports whether provider's numbers come from connections.
func IsConnectionProvider(provider string) bool {
	for _, p := range ConnectionProviders {
		if p == provider {
			return true
		}
	}
	return false
}

// Bounds of a connection.
const (
	MaxConnectionName     = 200
	MaxConnectionNumbers  = 1000
	MaxInboundSources     = 100
	MaxSIPCredential      = 256
	DefaultSIPPort        = 5060
	DefaultSIPSPort       = 5061
	DefaultSIPTransport   = "udp"
	maxHostLength         = 253
	maxDestinationLength  = 256
	maxDNSLabelLength     = 63
	connectionFieldPrefix = "sip."
)

// SIPTransports are the transports a SIP connection may use.
var SIPTransports = []string{"udp", "tcp", "tls"}

// Connection is an organization's link to a phone network that it brings
// itself (a SIP trunk; Twilio next). Its numbers can be bought by that
// organization only, and a number is on one connection at most, so that an
// inbound call finds its organization without doubt.
type Connection struct {
	ID       string
	OrgID    string
	Provider string
	Name     string
	SIP      SIPConnection    // provider sip
	Twilio   TwilioConnection // provider twilio
	// CreatedAt and UpdatedAt are set by the caller.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SIPConnection is where a SIP trunk is and how to authenticate to it.
type SIPConnection struct {
	// Address is host:port (a DNS name or an IP address; IPv6 in brackets).
	Address string
	// Transport is udp, tcp or tls.
	Transport string
	// Username is the digest user name, empty when the trunk
	// authenticates by address.
	Username string
	// SealedPassword is the digest password sealed with the server's key
	// (internal/secret, sealed for the connection's id); empty when there
	// is none. The plain password is never stored.
	SealedPassword []byte
	// Numbers are the trunk's numbers in E.164, distinct.
	Numbers []string
	// InboundSources are the networks inbound calls may come from, as
	// prefixes (a single address is a /32 or /128). Empty: only the
	// addresses of Address's host.
	InboundSources []string
}

// TwilioConnection is an organization's Twilio account. Its numbers are
// the account's: searched, bought and imported through Twilio's API, each
// purchase remembering the connection.
type TwilioConnection struct {
	// AccountSID is the account's id, AC followed by 32 hex digits.
	AccountSID string
	// SealedAuthToken is the account's auth token sealed with the
	// server's key (internal/secret, for the connection's id). The plain
	// token is never stored, returned or logged.
	SealedAuthToken []byte
}

// Bounds of a Twilio connection's credentials.
const maxTwilioToken = 128

// CheckTwilio validates a Twilio connection's name, account SID and auth
// token (not whether Twilio accepts them: the API asks Twilio). Bad fields
// are added to errs under their API names (twilio.accountSid, …).
func (c *Connection) CheckTwilio(token string, errs *apperr.Fields) {
	c.checkName(errs)
	sid := strings.TrimSpace(c.Twilio.AccountSID)
	switch {
	case sid == "":
		errs.Add("twilio.accountSid", "is required: your Twilio Account SID (AC followed by 32 hex digits, on the Twilio Console's dashboard)")
	case !validTwilioSID(sid):
		errs.Add("twilio.accountSid", "must be AC followed by 32 hex digits, e.g. AC0123456789abcdef0123456789abcdef")
	}
	c.Twilio.AccountSID = sid
	switch {
	case token == "":
		errs.Add("twilio.authToken", "is required: the account's auth token (Twilio Console, Account Info)")
	case len(token) > maxTwilioToken:
		errs.Add("twilio.authToken", "must be at most %d bytes", maxTwilioToken)
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		errs.Add("twilio.authToken", "must not contain spaces or control characters")
	}
}

func validTwilioSID(s string) bool {
	if len(s) != 34 || s[:2] != "AC" {
		return false
	}
	for _, r := range s[2:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// NumberSearch filters a search of an account's numbers for sale
// (GET /v1/phone/numbers?provider=twilio).
type NumberSearch struct {
	Country  string // ISO 3166-1 alpha-2, default US
	AreaCode int    // 0: any
	Contains string // digits, letters and * (any one digit)
}

var searchContains = regexp.MustCompile(`^[0-9A-Za-z*]{1,16}$`)

// ParseNumberSearch reads a search of numbers for sale as typed: a
// country code (default US), an area code and a pattern; a bad one is
// added to errs under its name (country, areaCode, contains).
func ParseNumberSearch(country, areaCode, contains string, errs *apperr.Fields) NumberSearch {
	q := NumberSearch{Country: strings.ToUpper(country), Contains: contains}
	if q.Country == "" {
		q.Country = "US"
	} else if len(q.Country) != 2 || strings.Trim(q.Country, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		errs.Add("country", "must be an ISO 3166-1 alpha-2 country code, e.g. US")
	}
	if areaCode != "" {
		n, err := strconv.Atoi(areaCode)
		if err != nil || n < 200 || n > 999 {
			errs.Add("areaCode", "must be a 3-digit area code, e.g. 415")
		}
		q.AreaCode = n
	}
	if q.Contains != "" && !searchContains.MatchString(q.Contains) {
		errs.Add("contains", "must be 1 to 16 digits, letters or * (any one digit), e.g. 555 or 415***1234")
	}
	return q
}

// HasAuthToken reports whether the connection keeps an auth token.
func (t TwilioConnection) HasAuthToken() bool { return len(t.SealedAuthToken) > 0 }

// HasPassword reports whether the connection has a digest password.
func (s SIPConnection) HasPassword() bool { return len(s.SealedPassword) > 0 }

// Check validates and normalizes the connection's name and SIP settings
// (not the password, see CheckSIPCredentials): defaults are filled in,
// numbers are put in E.164 and sources in prefix form. Each bad field is
// added to errs under its API name (name, sip.address, sip.numbers[2], …).
func (c *Connection) Check(errs *apperr.Fields) {
	c.checkName(errs)
	s := &c.SIP
	f := func(name string) string { return connectionFieldPrefix + name }
	if s.Transport == "" {
		s.Transport = DefaultSIPTransport
	}
	transportOK := false
	for _, t := range SIPTransports {
		transportOK = transportOK || s.Transport == t
	}
	if !transportOK {
		errs.Add(f("transport"), "must be udp, tcp or tls")
	}
	if s.Address == "" {
		errs.Add(f("address"), "is required: the trunk's host:port, e.g. sip.example.com:5060")
	} else if a, err := NormalizeSIPAddress(s.Address, s.Transport); err != nil {
		errs.Add(f("address"), "%s", err.Error())
	} else {
		s.Address = a
	}
	s.Numbers = checkNumbers(s.Numbers, f("numbers"), errs)
	s.InboundSources = checkSources(s.InboundSources, f("inboundSources"), errs)
}

func (c *Connection) checkName(errs *apperr.Fields) {
	switch {
	case strings.TrimSpace(c.Name) == "":
		errs.Add("name", "is required")
	case len(c.Name) > MaxConnectionName:
		errs.Add("name", "must be at most %d bytes", MaxConnectionName)
	}
}

func checkNumbers(in []string, field string, errs *apperr.Fields) []string {
	if len(in) == 0 {
		errs.Add(field, "must hold at least one number of the trunk, in E.164 (e.g. +16175550100)")
		return in
	}
	if len(in) > MaxConnectionNumbers {
		errs.Add(field, "must hold at most %d numbers", MaxConnectionNumbers)
		return in
	}
	out := make([]string, len(in))
	first := map[string]int{}
	for i, n := range in {
		name := fmt.Sprintf("%s[%d]", field, i)
		e, err := NormalizeE164(n)
		if err != nil {
			errs.Add(name, "%s", err.Error())
			out[i] = n
			continue
		}
		if j, dup := first[e]; dup {
			errs.Add(name, "%s is already %s[%d]", e, field, j)
		}
		first[e] = i
		out[i] = e
	}
	return out
}

func checkSources(in []string, field string, errs *apperr.Fields) []string {
	if len(in) > MaxInboundSources {
		errs.Add(field, "must hold at most %d networks", MaxInboundSources)
		return in
	}
	out := make([]string, len(in))
	first := map[netip.Prefix]int{}
	for i, src := range in {
		name := fmt.Sprintf("%s[%d]", field, i)
		p, err := ParseSource(src)
		if err != nil {
			errs.Add(name, "%s", err.Error())
			out[i] = src
			continue
		}
		if j, dup := first[p]; dup {
			errs.Add(name, "%s is already %s[%d]", p, field, j)
		}
		first[p] = i
		out[i] = p.String()
	}
	return out
}

// ParseSource reads an inbound source: a CIDR prefix (203.0.113.0/24,
// 2001:db8::/32) or one address (203.0.113.7, a /32). A prefix with bits
// set past its length is refused rather than guessed at.
func ParseSource(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("must be a CIDR prefix such as 203.0.113.0/24 or one IP address")
		}
		if p.Addr().Is4In6() {
			return netip.Prefix{}, fmt.Errorf("write an IPv4 prefix in IPv4 form, e.g. 203.0.113.0/24")
		}
		if m := p.Masked(); m != p {
			return netip.Prefix{}, fmt.Errorf("has address bits set past /%d; did you mean %s?", p.Bits(), m)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("must be a CIDR prefix such as 203.0.113.0/24 or one IP address")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// NormalizeSIPAddress checks a trunk address, host[:port], and returns it
// as host:port: the host a DNS name (lower-cased) or an IP address (IPv6 in
// brackets), the port 1-65535, by default 5060 (5061 for tls).
func NormalizeSIPAddress(s, transport string) (string, error) {
	if strings.HasPrefix(strings.ToLower(s), "sip:") || strings.HasPrefix(strings.ToLower(s), "sips:") {
		return "", fmt.Errorf("must be host:port without a sip: scheme, e.g. sip.example.com:5060")
	}
	host, port, err := splitHostPort(s)
	if err != nil {
		return "", err
	}
	if port == 0 {
		port = DefaultSIPPort
		if transport == "tls" {
			port = DefaultSIPSPort
		}
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port), nil
	}
	return host + ":" + strconv.Itoa(port), nil
}

// splitHostPort splits host[:port] and checks both; port is 0 when absent.
// An IPv6 host comes back without its brackets.
func splitHostPort(s string) (host string, port int, err error) {
	const want = "must be host:port, e.g. sip.example.com:5060, 203.0.113.7:5060 or [2001:db8::7]:5060"
	rest := ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%s: the IPv6 address has no closing bracket", want)
		}
		host, rest = s[1:end], s[end+1:]
		a, perr := netip.ParseAddr(host)
		if perr != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return "", 0, fmt.Errorf("%s: %q is not an IPv6 address", want, host)
		}
		host = a.String()
	case strings.Count(s, ":") > 1:
		return "", 0, fmt.Errorf("%s: write an IPv6 address in brackets", want)
	default:
		host, rest, _ = strings.Cut(s, ":")
		if rest != "" || strings.HasSuffix(s, ":") {
			rest = ":" + rest
		}
		var herr error
		if host, herr = checkHost(host); herr != nil {
			return "", 0, fmt.Errorf("%s: %v", want, herr)
		}
	}
	if a, perr := netip.ParseAddr(host); perr == nil && (a.IsUnspecified() || a.IsMulticast()) {
		return "", 0, fmt.Errorf("%s: %s cannot be a trunk's address", want, host)
	}
	if rest == "" {
		return host, 0, nil
	}
	digits, ok := strings.CutPrefix(rest, ":")
	n, perr := strconv.Atoi(digits)
	if !ok || perr != nil || n < 1 || n > 65535 || digits != strconv.Itoa(n) {
		return "", 0, fmt.Errorf("%s: the port must be a number from 1 to 65535", want)
	}
	return host, n, nil
}

// checkHost accepts an IPv4 address or a DNS name (letters, digits and
// hyphens in dot-separated labels), returned lower-cased.
func checkHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("the host is missing")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if !a.Is4() {
			return "", fmt.Errorf("write an IPv6 address in brackets")
		}
		return a.String(), nil
	}
	if len(h) > maxHostLength {
		return "", fmt.Errorf("the host name is longer than %d characters", maxHostLength)
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > maxDNSLabelLength || l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("%q is not a host name or IP address", h)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("%q is not a host name or IP address", h)
			}
		}
	}
	if last := labels[len(labels)-1]; last[0] >= '0' && last[0] <= '9' {
		// 1.2.3.999 and 1.2.3 are neither names nor addresses.
		return "", fmt.Errorf("%q is not a host name or IP address", h)
	}
	return h, nil
}

// CheckSIPCredentials checks a digest user name and password: each at
// most 256 bytes without control characters; a password needs a user name.
func CheckSIPCredentials(username, password string, errs *apperr.Fields) {
	for _, f := range []struct{ name, v string }{{"username", username}, {"password", password}} {
		if len(f.v) > MaxSIPCredential {
			errs.Add(connectionFieldPrefix+f.name, "must be at most %d bytes", MaxSIPCredential)
		} else if strings.ContainsFunc(f.v, unicode.IsControl) {
			errs.Add(connectionFieldPrefix+f.name, "must not contain control characters")
		}
	}
	if password != "" && username == "" {
		errs.Add(connectionFieldPrefix+"username", "is required with a password (digest authentication needs both)")
	}
}

// InboundPrefixes are the networks the connection's inbound calls may come
// from: its InboundSources, or when it has none, the addresses of its
// Address's host (an IP address as it is, a DNS name through lookup).
func (s SIPConnection) InboundPrefixes(ctx context.Context, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) ([]netip.Prefix, error) {
	if len(s.InboundSources) > 0 {
		out := make([]netip.Prefix, 0, len(s.InboundSources))
		for _, src := range s.InboundSources {
			p, err := ParseSource(src)
			if err != nil {
				return nil, fmt.Errorf("phone: stored inbound source %q: %w", src, err)
			}
			out = append(out, p)
		}
		return out, nil
	}
	host, _, err := splitHostPort(s.Address)
	if err != nil {
		return nil, fmt.Errorf("phone: stored address %q: %w", s.Address, err)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Prefix{netip.PrefixFrom(a, a.BitLen())}, nil
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("phone: resolve the trunk's host %s: %w", host, err)
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// AllowsSource reports whether an inbound call from src may be taken on
// the connection (see InboundPrefixes).
func (s SIPConnection) AllowsSource(ctx context.Context, src netip.Addr, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) (bool, error) {
	ps, err := s.InboundPrefixes(ctx, lookup)
	if err != nil {
		return false, err
	}
	src = src.Unmap().WithZone("")
	for _, p := range ps {
		if p.Contains(src) {
			return true, nil
		}
	}
	return false, nil
}

// ConnectionNumber is one number of a connection and, when it is bought,
// the purchase that holds it.
type ConnectionNumber struct {
	Number       string
	ConnectionID string
	// PurchaseID is the held purchase of the number, empty when none.
	PurchaseID string
}

// Region is the ISO 3166-1 alpha-2 region of an E.164 number, "" when unknown.
func Region(e164 string) string {
	n, err := phonenumbers.Parse(e164, "")
	if err != nil {
		return ""
	}
	return phonenumbers.GetRegionCodeForNumber(n)
}

// NormalizeDestination checks where a call may be transferred: a number
// (returned in E.164, see NormalizeE164) or a SIP URI
// (sip:user@host[:port][;param…] or sips:…, without headers).
func NormalizeDestination(s string) (string, error) {
	lower := strings.ToLower(s)
	if !strings.HasPrefix(lower, "sip:") && !strings.HasPrefix(lower, "sips:") {
		n, err := NormalizeE164(s)
		if err != nil {
			return "", fmt.Errorf("must be a phone number in E.164 (e.g. +14155550123) or a SIP URI (sip:alice@pbx.example.com): the number %v", err)
		}
		return n, nil
	}
	const want = "must be a SIP URI such as sip:alice@pbx.example.com or sip:+14155550123@203.0.113.7:5060"
	if len(s) > maxDestinationLength {
		return "", fmt.Errorf("%s, at most %d bytes", want, maxDestinationLength)
	}
	scheme, rest, _ := strings.Cut(s, ":")
	scheme = strings.ToLower(scheme)
	if strings.ContainsAny(rest, "?> \t\r\n<\"") {
		return "", fmt.Errorf("%s (no headers, spaces or quotes)", want)
	}
	hostport, params, hasParams := strings.Cut(rest, ";")
	user, hp, hasUser := strings.Cut(hostport, "@")
	if !hasUser {
		hp, user = hostport, ""
	} else if user == "" || strings.Contains(hp, "@") || !uriUser(user) {
		return "", fmt.Errorf("%s: the user part %q is not valid", want, user)
	}
	host, port, err := splitHostPort(hp)
	if err != nil {
		return "", fmt.Errorf("%s: %v", want, err)
	}
	if hasParams && !uriParams(params) {
		return "", fmt.Errorf("%s: the parameters %q are not valid", want, params)
	}
	out := scheme + ":"
	if user != "" {
		out += user + "@"
	}
	if strings.Contains(host, ":") {
		out += "[" + host + "]"
	} else {
		out += host
	}
	if port != 0 {
		out += ":" + strconv.Itoa(port)
	}
	if hasParams {
		out += ";" + params
	}
	return out, nil
}

// uriUser reports whether u is a SIP URI user part (RFC 3261: unreserved,
// escapes and user-unreserved characters; no password).
func uriUser(u string) bool {
	for i := 0; i < len(u); i++ {
		c := u[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()%&=+$,/", c) >= 0) {
			return false
		}
	}
	return true
}

// uriParams reports whether p is ;-separated name[=value] parameters of
// token characters.
func uriParams(p string) bool {
	for _, kv := range strings.Split(p, ";") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			return false
		}
		for _, part := range []string{k, v} {
			for i := 0; i < len(part); i++ {
				c := part[i]
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'%+[]:", c) >= 0) {
					return false
				}
			}
		}
	}
	return true
}
