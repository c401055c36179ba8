package throttle

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseProxies(t *testing.T) {
	got, err := ParseProxies(" 10.0.0.1, 10.1.2.3/16 ,::1,, ::ffff:192.0.2.1")
	if err != nil {
		t.Fatalf("ParseProxies: %v", err)
	}
	want := []string{"10.0.0.1/32", "10.1.0.0/16", "::1/128", "192.0.2.1/32"}
	if len(got) != len(want) {
		t.Fatalf("ParseProxies = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("ParseProxies[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0", "example.com", "10.0.0.0/33", "fe80::1%eth0"} {
		if _, err := ParseProxies(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseProxies(%q) error = %v, want one naming the entry", bad, err)
		}
	}
	if p, err := ParseProxies(""); err != nil || len(p) != 0 {
		t.Errorf(`ParseProxies("") = %v, %v; want no proxies`, p, err)
	}
}

func TestClient(t *testing.T) {
	proxies, err := ParseProxies("127.0.0.1, 10.0.0.0/8, 2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		proxies Proxies
		remote  string
		xff     []string
		want    string
	}{
		{"no proxies: the peer, whatever it says", nil, "192.0.2.1:5000", []string{"198.51.100.7"}, "192.0.2.1"},
		{"untrusted peer: header ignored", proxies, "192.0.2.1:5000", []string{"198.51.100.7"}, "192.0.2.1"},
		{"trusted peer without a header", proxies, "127.0.0.1:5000", nil, "127.0.0.1"},
		{"trusted peer: the entry it appended", proxies, "127.0.0.1:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"a spoofed entry left of the real one", proxies, "127.0.0.1:5000", []string{"203.0.113.9, 198.51.100.7"}, "198.51.100.7"},
		{"past a chain of trusted proxies", proxies, "127.0.0.1:5000", []string{"198.51.100.7, 10.1.1.1", "10.2.2.2"}, "198.51.100.7"},
		{"only proxies: the leftmost", proxies, "127.0.0.1:5000", []string{"10.3.3.3, 10.1.1.1"}, "10.3.3.3"},
		{"garbage stops at the last good address", proxies, "127.0.0.1:5000", []string{"198.51.100.7, bogus, 10.1.1.1"}, "10.1.1.1"},
		{"garbage right away: the peer", proxies, "127.0.0.1:5000", []string{"not-an-ip"}, "127.0.0.1"},
		{"entries with ports and brackets", proxies, "127.0.0.1:5000", []string{"[2001:db9::5]:443"}, "2001:db9::5"},
		{"bracketed IPv6 without a port", proxies, "127.0.0.1:5000", []string{"[2001:db9::6]"}, "2001:db9::6"},
		{"IPv4 with a port", proxies, "127.0.0.1:5000", []string{"198.51.100.7:8080"}, "198.51.100.7"},
		{"IPv6 peer in a trusted prefix", proxies, "[2001:db8::1]:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"IPv4-mapped peer", proxies, "[::ffff:127.0.0.1]:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"unparseable peer", proxies, "@", []string{"198.51.100.7"}, "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			r.Header.Set("Forwarded", "for=203.0.113.66")
			if got := tt.proxies.Client(r); got.String() != tt.want {
				t.Errorf("Client(RemoteAddr %s, X-Forwarded-For %q) = %s, want %s", tt.remote, tt.xff, got, tt.want)
			}
		})
	}
}

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLimiter(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLimiter(LimiterConfig{Rate: 2, Burst: 3, Now: c.now})
	a, other := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for i := range 3 {
		if _, blocked := l.Blocked(a); blocked {
			t.Fatalf("Blocked after %d refusals = true, want false (burst 3)", i)
		}
		l.Refused(a)
	}
	wait, blocked := l.Blocked(a)
	if !blocked || wait != 500*time.Millisecond {
		t.Fatalf("Blocked after the burst = %v, %v; want true, 500ms (rate 2/s)", wait, blocked)
	}
	if _, blocked := l.Blocked(other); blocked {
		t.Errorf("Blocked(another address) = true, want its own budget")
	}
	c.t = c.t.Add(500 * time.Millisecond)
	if _, blocked := l.Blocked(a); blocked {
		t.Errorf("Blocked 500ms later = true, want one refusal earned back")
	}
	l.Refused(a)
	if _, blocked := l.Blocked(a); !blocked {
		t.Errorf("Blocked after spending it = false, want true")
	}
	c.t = c.t.Add(2 * time.Second)
	if _, blocked := l.Blocked(a); blocked || l.Len() != 0 {
		t.Errorf("after a full refill: Blocked = %v, Len = %d; want false, 0 (forgotten)", blocked, l.Len())
	}

	// IPv6: one /64 is one client.
	v6a, v6b, v6c := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9"), netip.MustParseAddr("2001:db8:1:3::1")
	for range 3 {
		l.Refused(v6a)
	}
	if _, blocked := l.Blocked(v6b); !blocked {
		t.Errorf("Blocked(%s) after its /64 spent the budget = false, want true", v6b)
	}
	if _, blocked := l.Blocked(v6c); blocked {
		t.Errorf("Blocked(%s) in another /64 = true, want false", v6c)
	}

	off := NewLimiter(LimiterConfig{Rate: 0, Burst: 3})
	off.Refused(a)
	if _, blocked := off.Blocked(a); blocked || off != nil {
		t.Errorf("NewLimiter(Rate 0) = %v, blocks %v; want nil, never", off, blocked)
	}
}

// TestLimiterBounded: an attacker rotating addresses cannot grow the table
// past MaxClients, and clients keep being limited.
func TestLimiterBounded(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLimiter(LimiterConfig{Rate: 0.001, Burst: 1, MaxClients: 1000, Now: c.now})
	for i := range 100_000 {
		l.Refused(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
		if i%1000 == 0 {
			c.t = c.t.Add(time.Second)
		}
	}
	if n := l.Len(); n > 1000 || n < 900 {
		t.Errorf("Len after 100,000 addresses = %d, want at most 1000 (and most of them kept)", n)
	}
	last := netip.AddrFrom4([4]byte{10, 1, 134, 159}) // i = 99,999
	if _, blocked := l.Blocked(last); !blocked {
		t.Errorf("Blocked(the latest address) = false, want true")
	}
	// Refilled clients go at the next sweep.
	c.t = c.t.Add(time.Hour)
	l.Refused(netip.MustParseAddr("192.0.2.1"))
	if n := l.Len(); n != 1 {
		t.Errorf("Len after every budget refilled and one refusal = %d, want 1", n)
	}
}

// TestSampler: a thousand refusals make one full line per reason and one
// summary line per window, and a lone one later is logged in full again.
func TestSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		s := NewSampler(slog.New(slog.NewJSONHandler(&buf, nil)), "refused", 10*time.Second)
		full := 0
		for i := range 1000 {
			reason := "not_found"
			if i%10 == 0 {
				reason = "gone"
			}
			if s.Sample(reason) {
				full++
			}
		}
		if full != 2 {
			t.Errorf("Sample told the caller to log %d of 1000 events, want 2 (the first of each reason)", full)
		}
		time.Sleep(11 * time.Second)
		synctest.Wait()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], `"count":998`) || !strings.Contains(lines[0], `"by_reason":{"gone":99,"not_found":899}`) {
			t.Errorf("summary lines = %q, want one with count 998 by reason", lines)
		}
		if !s.Sample("not_found") {
			t.Errorf("Sample in a new window = false, want the first logged in full")
		}
		s.Sample("not_found")
		s.Close()
		if n := strings.Count(buf.String(), "\n"); n != 2 {
			t.Errorf("lines after Close = %d, want 2 (Close writes the open window's count)", n)
		}
		if first, second := s.Sample("x"), s.Sample("x"); !first || !second {
			t.Errorf("Sample after Close = false, want everything logged")
		}
	})
}

func BenchmarkLimiterFlood(b *testing.B) {
	l := NewLimiter(LimiterConfig{Rate: 1, Burst: 20})
	addrs := make([]netip.Addr, 1024)
	for i := range addrs {
		addrs[i] = netip.MustParseAddr(fmt.Sprintf("10.0.%d.%d", i/256, i%256))
	}
	b.ResetTimer()
	for i := range b.N {
		a := addrs[i%len(addrs)]
		if _, blocked := l.Blocked(a); !blocked {
			l.Refused(a)
		}
	}
}
