package phone

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/apperr"
)

func fieldsOf(errs apperr.Fields) []string {
	var out []string
	for _, f := range errs {
		out = append(out, f.Field)
	}
	slices.Sort(out)
	return out
}

func TestNormalizeSIPAddress(t *testing.T) {
	tests := []struct {
		in, transport, want string
	}{
		{"sip.example.com:5060", "udp", "sip.example.com:5060"},
		{"SIP.Example.COM:5080", "tcp", "sip.example.com:5080"},
		{"sip.example.com", "udp", "sip.example.com:5060"},
		{"sip.example.com", "tcp", "sip.example.com:5060"},
		{"sip.example.com", "tls", "sip.example.com:5061"},
		{"pbx", "udp", "pbx:5060"},
		{"trunk.example.com.", "udp", "trunk.example.com:5060"},
		{"203.0.113.7:5060", "udp", "203.0.113.7:5060"},
		{"203.0.113.7", "udp", "203.0.113.7:5060"},
		{"[2001:db8::7]:5070", "udp", "[2001:db8::7]:5070"},
		{"[2001:DB8:0::7]", "tls", "[2001:db8::7]:5061"},
		{"127.0.0.1:65535", "udp", "127.0.0.1:65535"},
		{"a-b.c1.example:1", "udp", "a-b.c1.example:1"},
	}
	for _, tt := range tests {
		got, err := NormalizeSIPAddress(tt.in, tt.transport)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeSIPAddress(%q, %s) = %q, %v; want %q", tt.in, tt.transport, got, err, tt.want)
		}
	}
	for _, bad := range []string{
		"", ":5060", "host:", "host:0", "host:65536", "host:-1", "host:50a", "host:05060", "host:5060:1",
		"2001:db8::7", "[2001:db8::7", "[203.0.113.7]:5060", "[::ffff:1.2.3.4]:5060", "[fe80::1%eth0]:5060",
		"sip:host:5060", "SIPS:host", "host name:5060", "-host:5060", "host-:5060", "ho_st:5060", "1.2.3:5060",
		"1.2.3.999:5060", "0.0.0.0:5060", "[::]:5060", "224.0.0.1:5060", "a..b:5060", "héllo.example:5060",
		strings.Repeat("a", 64) + ".example:5060", strings.Repeat("abcdefgh.", 29) + "com:5060", "host:5060\x00",
	} {
		if got, err := NormalizeSIPAddress(bad, "udp"); err == nil {
			t.Errorf("NormalizeSIPAddress(%q) = %q, nil; want an error", bad, got)
		}
	}
}

func TestParseSource(t *testing.T) {
	tests := []struct{ in, want string }{
		{"203.0.113.0/24", "203.0.113.0/24"},
		{"203.0.113.7", "203.0.113.7/32"},
		{"2001:db8::/32", "2001:db8::/32"},
		{"2001:db8::7", "2001:db8::7/128"},
		{"::ffff:203.0.113.7", "203.0.113.7/32"},
		{"0.0.0.0/0", "0.0.0.0/0"},
	}
	for _, tt := range tests {
		got, err := ParseSource(tt.in)
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseSource(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "203.0.113.5/24", "203.0.113.0/33", "example.com", "203.0.113", "fe80::1%eth0", "::ffff:1.2.3.0/120", "1.2.3.4/ 8"} {
		if got, err := ParseSource(bad); err == nil {
			t.Errorf("ParseSource(%q) = %v, nil; want an error", bad, got)
		}
	}
	if _, err := ParseSource("203.0.113.5/24"); err == nil || !strings.Contains(err.Error(), "203.0.113.0/24") {
		t.Errorf("ParseSource(203.0.113.5/24) error = %v; want it to suggest 203.0.113.0/24", err)
	}
}

func TestConnectionCheck(t *testing.T) {
	good := func() Connection {
		return Connection{Name: "Main trunk", Provider: ProviderSIP, SIP: SIPConnection{
			Address: "Sip.Example.com", Numbers: []string{"+1 617 555 0100", "+16175550101"}, InboundSources: []string{"203.0.113.0/24", "198.51.100.7"}}}
	}
	c := good()
	var errs apperr.Fields
	c.Check(&errs)
	if len(errs) != 0 {
		t.Fatalf("Check(good connection) = %v; want no errors", errs)
	}
	want := SIPConnection{Address: "sip.example.com:5060", Transport: "udp", Numbers: []string{"+16175550100", "+16175550101"},
		InboundSources: []string{"203.0.113.0/24", "198.51.100.7/32"}}
	if fmt.Sprint(c.SIP) != fmt.Sprint(want) {
		t.Errorf("Check normalized the connection to %+v; want %+v", c.SIP, want)
	}

	for _, tt := range []struct {
		name   string
		change func(c *Connection)
		fields []string
	}{
		{"no name", func(c *Connection) { c.Name = " " }, []string{"name"}},
		{"long name", func(c *Connection) { c.Name = strings.Repeat("x", 201) }, []string{"name"}},
		{"no address", func(c *Connection) { c.SIP.Address = "" }, []string{"sip.address"}},
		{"bad port", func(c *Connection) { c.SIP.Address = "h:70000" }, []string{"sip.address"}},
		{"bad transport", func(c *Connection) { c.SIP.Transport = "UDP" }, []string{"sip.transport"}},
		{"no numbers", func(c *Connection) { c.SIP.Numbers = nil }, []string{"sip.numbers"}},
		{"bad and duplicate numbers", func(c *Connection) {
			c.SIP.Numbers = []string{"+16175550100", "617-555-0100", "+1 (617) 555-0100"}
		}, []string{"sip.numbers[1]", "sip.numbers[2]"}},
		{"too many numbers", func(c *Connection) { c.SIP.Numbers = make([]string, MaxConnectionNumbers+1) }, []string{"sip.numbers"}},
		{"bad and duplicate sources", func(c *Connection) {
			c.SIP.InboundSources = []string{"bogus", "203.0.113.7/32", "203.0.113.7"}
		}, []string{"sip.inboundSources[0]", "sip.inboundSources[2]"}},
		{"too many sources", func(c *Connection) { c.SIP.InboundSources = make([]string, MaxInboundSources+1) }, []string{"sip.inboundSources"}},
	} {
		c := good()
		tt.change(&c)
		var errs apperr.Fields
		c.Check(&errs)
		if got := fieldsOf(errs); !slices.Equal(got, tt.fields) {
			t.Errorf("Check(%s) error fields = %v; want %v (%v)", tt.name, got, tt.fields, errs)
		}
	}
}

func TestCheckSIPCredentials(t *testing.T) {
	for _, tt := range []struct {
		user, pass string
		fields     []string
	}{
		{"", "", nil},
		{"alice", "", nil},
		{"alice", "s3cret", nil},
		{"", "s3cret", []string{"sip.username"}},
		{strings.Repeat("u", 257), "p", []string{"sip.username"}},
		{"alice", strings.Repeat("p", 257), []string{"sip.password"}},
		{"al\nice", "p\x7f", []string{"sip.password", "sip.username"}},
	} {
		var errs apperr.Fields
		CheckSIPCredentials(tt.user, tt.pass, &errs)
		if got := fieldsOf(errs); !slices.Equal(got, tt.fields) {
			t.Errorf("CheckSIPCredentials(%q, %d-byte password) fields = %v; want %v", tt.user, len(tt.pass), got, tt.fields)
		}
		for _, e := range errs {
			if tt.pass != "" && strings.Contains(e.Message, tt.pass) {
				t.Errorf("CheckSIPCredentials error %q repeats the password", e.Message)
			}
		}
	}
}

func TestAllowsSource(t *testing.T) {
	ctx := context.Background()
	lookups := 0
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		lookups++
		if host == "trunk.example.com" {
			return []netip.Addr{netip.MustParseAddr("198.51.100.10"), netip.MustParseAddr("2001:db8::10")}, nil
		}
		return nil, errors.New("no such host")
	}
	addr := netip.MustParseAddr
	for _, tt := range []struct {
		name string
		s    SIPConnection
		src  netip.Addr
		want bool
		err  bool
	}{
		{"inside a source", SIPConnection{Address: "trunk.example.com:5060", InboundSources: []string{"203.0.113.0/24"}}, addr("203.0.113.99"), true, false},
		{"outside the sources", SIPConnection{Address: "trunk.example.com:5060", InboundSources: []string{"203.0.113.0/24"}}, addr("198.51.100.10"), false, false},
		{"mapped IPv4", SIPConnection{Address: "trunk.example.com:5060", InboundSources: []string{"203.0.113.0/24"}}, addr("::ffff:203.0.113.1"), true, false},
		{"no sources: the trunk's resolved IPv4", SIPConnection{Address: "trunk.example.com:5060"}, addr("198.51.100.10"), true, false},
		{"no sources: the trunk's resolved IPv6", SIPConnection{Address: "trunk.example.com:5060"}, addr("2001:db8::10"), true, false},
		{"no sources: another address", SIPConnection{Address: "trunk.example.com:5060"}, addr("198.51.100.11"), false, false},
		{"no sources: an IP address", SIPConnection{Address: "203.0.113.7:5060"}, addr("203.0.113.7"), true, false},
		{"no sources: an IPv6 address", SIPConnection{Address: "[2001:db8::7]:5060"}, addr("2001:db8::7"), true, false},
		{"no sources: unresolvable", SIPConnection{Address: "gone.example.com:5060"}, addr("203.0.113.7"), false, true},
	} {
		got, err := tt.s.AllowsSource(ctx, tt.src, lookup)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("AllowsSource(%s: %v) = %v, %v; want %v, error %v", tt.name, tt.src, got, err, tt.want, tt.err)
		}
	}
	if lookups != 4 {
		t.Errorf("lookup called %d times; want 4 (only for a DNS name without inbound sources)", lookups)
	}
}

func TestNormalizeDestination(t *testing.T) {
	tests := []struct{ in, want string }{
		{"+1 415 555 0123", "+14155550123"},
		{"sip:alice@pbx.example.com", "sip:alice@pbx.example.com"},
		{"SIP:alice@PBX.example.com:5080;transport=tcp", "sip:alice@pbx.example.com:5080;transport=tcp"},
		{"sips:+14155550123@203.0.113.7", "sips:+14155550123@203.0.113.7"},
		{"sip:[2001:db8::1]:5060", "sip:[2001:db8::1]:5060"},
		{"sip:pbx.example.com", "sip:pbx.example.com"},
		{"sip:1001@10.0.0.5;user=phone", "sip:1001@10.0.0.5;user=phone"},
	}
	for _, tt := range tests {
		got, err := NormalizeDestination(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeDestination(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "4155550123", "tel:+14155550123", "sip:", "sip:@host", "sip:alice@", "sip:alice:pw@host",
		"sip:alice@host?X-Header=1", "sip:a b@host", "sip:alice@host;", "sip:alice@host;=x", "sip:a@b@c", "sip:alice@host:99999",
		"sip:<alice@host>", "sip:alice@host\r\nVia: x", "sip:" + strings.Repeat("a", 260) + "@host"} {
		if got, err := NormalizeDestination(bad); err == nil {
			t.Errorf("NormalizeDestination(%q) = %q, nil; want an error", bad, got)
		}
	}
}

func TestRegion(t *testing.T) {
	for in, want := range map[string]string{"+16175550100": "US", "+442071838750": "GB", "+33612345678": "FR", "bogus": ""} {
		if got := Region(in); got != want {
			t.Errorf("Region(%q) = %q, want %q", in, got, want)
		}
	}
}
