package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeResolver answers from a table, so no test touches real DNS. Unknown
// names are "no such host".
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := f[strings.ToLower(strings.TrimSuffix(host, "."))]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	addrs := make([]netip.Addr, len(ips))
	for i, s := range ips {
		addrs[i] = netip.MustParseAddr(s)
	}
	return addrs, nil
}

var testDNS = fakeResolver{
	"hooks.example.com":      {"93.184.216.34"},
	"v6.example.com":         {"2606:2800:220:1:248:1893:25c8:1946"},
	"internal.example.com":   {"10.0.0.5"},
	"metadata.example.com":   {"169.254.169.254"},
	"mixed.example.com":      {"93.184.216.34", "127.0.0.1"},
	"empty.example.com":      {},
	"localhost":              {"127.0.0.1", "::1"},
	"receiver.test":          {"127.0.0.1"},
	"sixtofour.example.com":  {"2606:4700:4700::1111", "2002:7f00:1::1"},
	"nat64local.example.com": {"64:ff9b:1::a00:1"},
	"compat.example.com":     {"::10.0.0.1"},
}

func TestGuardCheckURL(t *testing.T) {
	t.Parallel()
	const (
		ok       = ""
		resolveE = "could not be resolved"
		noAddrE  = "has no addresses"
	)
	dnsFailure := func(want string) bool { return want == resolveE || want == noAddrE }
	tests := []struct {
		url          string
		allowPrivate bool
		want         string // "" = allowed, else a substring of the error
	}{
		// Public destinations.
		{"https://93.184.216.34/hook", false, ok},
		{"http://93.184.216.34:8080/hook?x=1#frag", false, ok},
		{"https://[2606:2800:220:1:248:1893:25c8:1946]/hook", false, ok},
		{"https://hooks.example.com/switchboard", false, ok},
		{"https://HOOKS.example.com./switchboard", false, ok},
		{"https://v6.example.com/", false, ok},
		{"http://172.32.0.1/", false, ok},  // just past 172.16.0.0/12
		{"http://100.128.0.1/", false, ok}, // just past 100.64.0.0/10
		{"http://8.8.8.8/", false, ok},

		// Forbidden addresses, as IP literals.
		{"http://127.0.0.1/", false, "loopback"},
		{"http://127.255.255.254:9000/", false, "loopback"},
		{"http://[::1]:8080/", false, "loopback"},
		{"http://10.1.2.3/", false, "private address (RFC 1918)"},
		{"http://172.16.0.1/", false, "private address (RFC 1918)"},
		{"http://172.31.255.255/", false, "private address (RFC 1918)"},
		{"http://192.168.1.1/", false, "private address (RFC 1918)"},
		{"http://[fc00::1]/", false, "unique local"},
		{"http://[fd12:3456::1]/", false, "unique local"},
		{"http://169.254.169.254/latest/meta-data/", false, "cloud metadata"},
		{"http://[fd00:ec2::254]/", false, "cloud metadata"},
		{"http://169.254.1.1/", false, "link-local"},
		{"http://[fe80::1]/", false, "link-local"},
		{"http://[fe80::1%25eth0]/", false, "link-local"},
		{"http://100.64.0.1/", false, "carrier-grade NAT"},
		{"http://100.127.255.255/", false, "carrier-grade NAT"},
		{"http://0.0.0.0/", false, "unspecified"},
		{"http://0.1.2.3/", false, "unspecified"},
		{"http://[::]/", false, "unspecified"},
		{"http://224.0.0.1/", false, "multicast"},
		{"http://[ff02::1]/", false, "multicast"},
		{"http://255.255.255.255/", false, "reserved"},
		{"http://[::ffff:127.0.0.1]/", false, "loopback"},
		{"http://[::ffff:10.0.0.1]/", false, "RFC 1918"},
		{"http://[::ffff:169.254.169.254]/", false, "cloud metadata"},
		{"http://[::ffff:100.64.0.1]/", false, "carrier-grade NAT"},
		{"http://[64:ff9b::7f00:1]/", false, "loopback address via NAT64"},
		{"http://[64:ff9b::5db8:d822]/", false, ok}, // NAT64 of 93.184.216.34

		// IPv6 forms that embed an IPv4 address: the embedded address is
		// judged by the IPv4 rules, or the whole prefix is refused.
		{"http://[::127.0.0.1]/", false, "IPv4-compatible"},
		{"http://[::7f00:1]/", false, "IPv4-compatible"},
		{"http://[::10.0.0.1]/", false, "IPv4-compatible"},
		{"http://[::93.184.216.34]/", false, "IPv4-compatible"}, // deprecated (RFC 4291): refused whatever it embeds
		{"http://[64:ff9b:1::7f00:1]/", false, "local-use NAT64"},
		{"http://[64:ff9b:1:7f00:1::]/", false, "local-use NAT64"},   // the /48 embedding of RFC 6052
		{"http://[64:ff9b:1::5db8:d822]/", false, "local-use NAT64"}, // not globally reachable (RFC 8215)
		{"http://[64:ff9b::a9fe:a9fe]/", false, "cloud metadata address via NAT64 (169.254.169.254)"},
		{"http://[2002:7f00:1::1]/", false, "loopback address via 6to4 (127.0.0.1)"},
		{"http://[2002:a9fe:a9fe::1]/", false, "cloud metadata address via 6to4 (169.254.169.254)"},
		{"http://[2002:a00:1:5::1]/", false, "private address (RFC 1918) via 6to4 (10.0.0.1)"},
		{"http://[2002:6440:1::1]/", false, "carrier-grade NAT address (100.64.0.0/10) via 6to4"},
		{"http://[2002:5db8:d822::1]/", false, ok}, // 6to4 of 93.184.216.34
		{"http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", false, "private address (RFC 1918) via Teredo (client 10.0.0.1)"},
		{"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", false, "loopback address via Teredo (client 127.0.0.1)"},
		{"http://[2001:0:4136:e378:8000:63bf:5601:5601]/", false, "cloud metadata address via Teredo (client 169.254.169.254)"},
		{"http://[2001:0:a00:1:8000:63bf:a247:27dd]/", false, "private address (RFC 1918) via Teredo (server 10.0.0.1)"},
		{"http://[2001:0:4136:e378:8000:63bf:a247:27dd]/", false, ok}, // Teredo: server 65.54.227.120, client 93.184.216.34
		{"http://[::ffff:0:127.0.0.1]/", false, "loopback address via SIIT (127.0.0.1)"},
		{"http://[::ffff:0:5db8:d822]/", false, ok},
		{"http://[2606:4700:4700::1111]/", false, ok}, // public IPv6 stays allowed
		{"http://[2001:4860:4860::8888]/", false, ok}, // 2001:4860::/32 is not Teredo (2001::/32)
		{"http://[2001:db8:7f00:1::1]/", false, ok},   // not 6to4
		{"http://[2003:7f00:1::1]/", false, ok},       // not 6to4
		{"https://sixtofour.example.com/", false, `resolves to 2002:7f00:1::1, a loopback address via 6to4`},
		{"https://nat64local.example.com/", false, "local-use NAT64"},
		{"https://compat.example.com/", false, "IPv4-compatible"},

		// Forbidden addresses behind names.
		{"https://internal.example.com/", false, `"internal.example.com" resolves to 10.0.0.5, a private address`},
		{"https://metadata.example.com/", false, "cloud metadata"},
		{"https://mixed.example.com/", false, "resolves to 127.0.0.1, a loopback"},
		{"http://localhost:8080/", false, "loopback name"},
		{"http://LOCALHOST./", false, "loopback name"},
		{"http://api.localhost/", false, "loopback name"},
		{"http://127.1/", false, "neither a standard IP address"},
		{"http://2130706433/", false, "neither a standard IP address"},
		{"http://0x7f.1/", false, "neither a standard IP address"},
		{"http://0177.0.0.1/", false, "neither a standard IP address"},
		{"https://nowhere.example.com/", false, resolveE},
		{"https://empty.example.com/", false, noAddrE},

		// Not http(s), not absolute, credentials, ports.
		{"ftp://93.184.216.34/", false, "not ftp://"},
		{"file:///etc/passwd", false, "not file://"},
		{"gopher://93.184.216.34:70/", false, "not gopher://"},
		{"javascript:alert(1)", false, "not javascript://"},
		{"93.184.216.34/hook", false, "must be absolute"},
		{"//93.184.216.34/hook", false, "must be absolute"},
		{"http:93.184.216.34", false, "must name a host"},
		{"https://", false, "must name a host"},
		{"https://:443/", false, "must name a host"},
		{"http://user:pass@93.184.216.34/", false, "credentials"},
		{"http://user@93.184.216.34/", false, "credentials"},
		{"http://93.184.216.34:0/", false, "port"},
		{"http://93.184.216.34:99999/", false, "port"},
		{"http://%zz/", false, "not a valid URL"},
		{"", false, "must be absolute"},

		// AllowPrivate lifts the address checks only.
		{"http://127.0.0.1:8080/", true, ok},
		{"http://10.0.0.1/", true, ok},
		{"http://169.254.169.254/", true, ok},
		{"http://localhost:8080/", true, ok},
		{"https://internal.example.com/", true, ok},
		{"http://[::127.0.0.1]/", true, ok},
		{"http://[64:ff9b:1::7f00:1]/", true, ok},
		{"http://[2002:7f00:1::1]/", true, ok},
		{"https://sixtofour.example.com/", true, ok},
		{"ftp://10.0.0.1/", true, "not ftp://"},
		{"http://user:pass@10.0.0.1/", true, "credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			g := Guard{AllowPrivate: tt.allowPrivate, Resolver: testDNS}
			err := g.CheckURL(context.Background(), tt.url)
			switch {
			case tt.want == ok && err != nil:
				t.Errorf("Guard{AllowPrivate: %v}.CheckURL(%q) = %v, want nil", tt.allowPrivate, tt.url, err)
			case tt.want != ok && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Guard{AllowPrivate: %v}.CheckURL(%q) = %v, want error containing %q", tt.allowPrivate, tt.url, err, tt.want)
			case tt.want != ok && !dnsFailure(tt.want) && !errors.Is(err, ErrUnsafeURL):
				t.Errorf("Guard{AllowPrivate: %v}.CheckURL(%q) = %v, want errors.Is ErrUnsafeURL", tt.allowPrivate, tt.url, err)
			case dnsFailure(tt.want) && errors.Is(err, ErrUnsafeURL):
				t.Errorf("Guard{}.CheckURL(%q) = %v, a DNS failure, want it not to be ErrUnsafeURL", tt.url, err)
			}
		})
	}
}

func TestGuardCheckAddrInvalid(t *testing.T) {
	t.Parallel()
	if err := (Guard{}).CheckAddr(netip.Addr{}); !errors.Is(err, ErrUnsafeURL) {
		t.Errorf("Guard{}.CheckAddr(zero Addr) = %v, want ErrUnsafeURL", err)
	}
}

// FuzzCheckURL: CheckURL parses user input and must never panic.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://hooks.example.com/x", "http://[::ffff:127.0.0.1]/", "http://[fe80::1%25eth0]:1/", "http://0x7f.1", "ftp://x", "http://a@b:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		_ = Guard{Resolver: testDNS}.CheckURL(context.Background(), raw)
	})
}

// newCountingServer is a loopback receiver that counts the requests it gets,
// so a test can show a refused request never reached it.
func newCountingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestTransportRefusesLoopbackUnlessAllowPrivate(t *testing.T) {
	t.Parallel()
	srv, hits := newCountingServer(t)

	blocked := &http.Client{Transport: Guard{Resolver: testDNS}.Transport()}
	resp, err := blocked.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("Guard{}.Transport() GET %s = %s, want refusal", srv.URL, resp.Status)
	}
	if !errors.Is(err, ErrUnsafeURL) || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("Guard{}.Transport() GET %s error = %v, want ErrUnsafeURL mentioning loopback", srv.URL, err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server got %d requests through Guard{}.Transport(), want 0", n)
	}

	allowed := &http.Client{Transport: Guard{AllowPrivate: true, Resolver: testDNS}.Transport()}
	resp, err = allowed.Get(srv.URL)
	if err != nil {
		t.Fatalf("Guard{AllowPrivate: true}.Transport() GET %s error = %v, want nil", srv.URL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || hits.Load() != 1 {
		t.Errorf("Guard{AllowPrivate: true}.Transport() GET %s = %d with %d hits, want 204 with 1", srv.URL, resp.StatusCode, hits.Load())
	}
}

// TestTransportResolvesWithGuardResolver shows the transport dials the
// addresses the Guard's resolver vetted, not what the system resolver says.
func TestTransportResolvesWithGuardResolver(t *testing.T) {
	t.Parallel()
	srv, hits := newCountingServer(t)
	u, _ := url.Parse(srv.URL)
	target := "http://receiver.test:" + u.Port() + "/hook"

	client := &http.Client{Transport: Guard{AllowPrivate: true, Resolver: testDNS}.Transport()}
	resp, err := client.Get(target)
	if err != nil {
		t.Fatalf("GET %s via fake DNS error = %v, want nil", target, err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("GET %s reached the server %d times, want 1", target, hits.Load())
	}

	client = &http.Client{Transport: Guard{Resolver: testDNS}.Transport()}
	if resp, err := client.Get(target); !errors.Is(err, ErrUnsafeURL) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("Guard{}.Transport() GET %s (resolves to 127.0.0.1) error = %v, want ErrUnsafeURL", target, err)
	}
}

// rebindingResolver answers a public address first and loopback afterwards:
// the DNS-rebinding attack on a check-then-connect guard.
type rebindingResolver struct {
	mu    sync.Mutex
	calls int
}

func (r *rebindingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func TestTransportDefeatsDNSRebinding(t *testing.T) {
	t.Parallel()
	srv, hits := newCountingServer(t)
	u, _ := url.Parse(srv.URL)
	target := "http://rebind.example.com:" + u.Port() + "/hook"

	g := Guard{Resolver: &rebindingResolver{}}
	if err := g.CheckURL(context.Background(), target); err != nil {
		t.Fatalf("CheckURL(%q) at registration = %v, want nil (first answer is public)", target, err)
	}
	resp, err := (&http.Client{Transport: g.Transport()}).Get(target)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s after rebinding to 127.0.0.1 = %s, want refusal", target, resp.Status)
	}
	if !errors.Is(err, ErrUnsafeURL) || hits.Load() != 0 {
		t.Errorf("GET %s after rebinding: error %v, %d hits; want ErrUnsafeURL, 0 hits", target, err, hits.Load())
	}
}

func TestTransportUsesNoProxy(t *testing.T) {
	t.Parallel()
	if tr := (Guard{}).Transport(); tr.Proxy != nil {
		t.Errorf("Guard{}.Transport().Proxy is set; a proxy would connect on the guard's behalf, want nil")
	}
}

// TestTransportRefusesEmbeddedIPv4 shows the dialer refuses, at connect
// time, the IPv6 forms that carry a loopback or private IPv4 address, when a
// name resolves to one after registration.
func TestTransportRefusesEmbeddedIPv4(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{
		"::127.0.0.1",                          // IPv4-compatible
		"64:ff9b::7f00:1",                      // NAT64, RFC 6052
		"64:ff9b:1::7f00:1",                    // local-use NAT64, RFC 8215
		"2002:7f00:1::1",                       // 6to4, RFC 3056
		"2002:a9fe:a9fe::1",                    // 6to4 of the metadata address
		"2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1
		"::ffff:0:a00:1",                       // SIIT, 10.0.0.1
	} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			g := Guard{Resolver: &rebindingToResolver{addr: netip.MustParseAddr(addr)}}
			target := "http://rebind.example.com:8080/hook"
			if err := g.CheckURL(context.Background(), target); err != nil {
				t.Fatalf("CheckURL(%q) at registration = %v, want nil (first answer is public)", target, err)
			}
			resp, err := (&http.Client{Transport: g.Transport()}).Get(target)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s after rebinding to %s = %s, want refusal", target, addr, resp.Status)
			}
			if !errors.Is(err, ErrUnsafeURL) {
				t.Errorf("GET %s after rebinding to %s: error %v, want ErrUnsafeURL", target, addr, err)
			}
			if err := g.CheckAddr(netip.MustParseAddr(addr)); !errors.Is(err, ErrUnsafeURL) {
				t.Errorf("Guard{}.CheckAddr(%s) = %v, want ErrUnsafeURL", addr, err)
			}
		})
	}
}

// rebindingToResolver answers a public address first and addr afterwards.
type rebindingToResolver struct {
	addr  netip.Addr
	mu    sync.Mutex
	calls int
}

func (r *rebindingToResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	return []netip.Addr{r.addr}, nil
}
