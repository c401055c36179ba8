package throttle

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
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

// refuse is one refused request of a: admitted or not, it is refused.
func refuse(l *Limiter, a netip.Addr) { l.Done(l.Admit(a), true) }

// blocked reports whether a's next request would be answered 429, and the
// wait; it leaves the budget as it was (the request is then not refused).
func blocked(l *Limiter, a netip.Addr) (time.Duration, bool) {
	adm := l.Admit(a)
	l.Done(adm, false)
	return adm.Wait, adm.Blocked
}

func TestLimiter(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLimiter(LimiterConfig{Rate: 2, Burst: 3, Now: c.now})
	a, other := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for i := range 3 {
		if _, b := blocked(l, a); b {
			t.Fatalf("blocked after %d refusals = true, want false (burst 3)", i)
		}
		refuse(l, a)
	}
	wait, b := blocked(l, a)
	if !b || wait != 500*time.Millisecond {
		t.Fatalf("blocked after the burst = %v, %v; want true, 500ms (rate 2/s)", wait, b)
	}
	if _, b := blocked(l, other); b {
		t.Errorf("blocked(another address) = true, want its own budget")
	}
	c.t = c.t.Add(500 * time.Millisecond)
	if _, b := blocked(l, a); b {
		t.Errorf("blocked 500ms later = true, want one refusal earned back")
	}
	refuse(l, a)
	if _, b := blocked(l, a); !b {
		t.Errorf("blocked after spending it = false, want true")
	}
	// A request that is not refused gives back what Admit took.
	c.t = c.t.Add(500 * time.Millisecond)
	for range 5 {
		if _, b := blocked(l, a); b {
			t.Fatalf("blocked after requests that were not refused = true, want them free")
		}
	}
	c.t = c.t.Add(2 * time.Second)
	if _, b := blocked(l, a); b || l.Len() != 0 {
		t.Errorf("after a full refill: blocked = %v, Len = %d; want false, 0 (forgotten)", b, l.Len())
	}

	// IPv6: one /64 is one client.
	v6a, v6b, v6c := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9"), netip.MustParseAddr("2001:db8:1:3::1")
	for range 3 {
		refuse(l, v6a)
	}
	if _, b := blocked(l, v6b); !b {
		t.Errorf("blocked(%s) after its /64 spent the budget = false, want true", v6b)
	}
	if _, b := blocked(l, v6c); b {
		t.Errorf("blocked(%s) in another /64 = true, want false", v6c)
	}

	off := NewLimiter(LimiterConfig{Rate: 0, Burst: 3})
	refuse(off, a)
	if adm := off.Admit(a); adm.Blocked || off != nil {
		t.Errorf("NewLimiter(Rate 0) = %v, admits %v; want nil, always", off, !adm.Blocked)
	}
}

// TestLimiterNetwork48: an IPv6 /48 has a budget NetworkScale times a
// client's, so rotating through its 65,536 /64s buys no more than that.
func TestLimiterNetwork48(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	const burst = 3
	l := NewLimiter(LimiterConfig{Rate: 0.001, Burst: burst, Now: c.now})
	in48 := func(i int) netip.Addr {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 7, byte(i >> 8), byte(i), 15: 1})
	}
	admitted := 0
	for i := range 1000 { // 1,000 /64s of one /48, each refused once
		adm := l.Admit(in48(i))
		if !adm.Blocked {
			admitted++
		}
		l.Done(adm, true)
	}
	if admitted != NetworkScale*burst {
		t.Errorf("1,000 /64s of one /48 were admitted %d times, want %d (the /48's burst)", admitted, NetworkScale*burst)
	}
	if _, b := blocked(l, in48(5000)); !b {
		t.Errorf("a new /64 of a spent /48 is not blocked, want it blocked")
	}
	if _, b := blocked(l, netip.MustParseAddr("2001:db8:8::1")); b {
		t.Errorf("another /48 is blocked, want its own budget")
	}
	// One /64 of a /48 still has its own, smaller budget.
	l2 := NewLimiter(LimiterConfig{Rate: 0.001, Burst: burst, Now: c.now})
	for range burst {
		refuse(l2, in48(1))
	}
	if _, b := blocked(l2, in48(1)); !b {
		t.Errorf("a /64 past its burst is not blocked, want blocked though its /48 is not")
	}
	if _, b := blocked(l2, in48(2)); b {
		t.Errorf("a neighbouring /64 is blocked, want only the spent one")
	}
}

// TestLimiterAdmitParallel: concurrent admissions of one client take its
// refusals atomically: with B refusals left, at most B of any number of
// concurrent requests are admitted. A client with no budget yet is admitted
// without one until its first refusal is counted: those in flight then are
// the window Admit documents, each of which still spends on refusal.
func TestLimiterAdmitParallel(t *testing.T) {
	const burst, n = 20, 400
	for _, addr := range []string{"192.0.2.1", "2001:db8:1:2::1"} {
		a := netip.MustParseAddr(addr)
		l := NewLimiter(LimiterConfig{Rate: 0.001, Burst: burst})
		refuse(l, a) // the client has a budget: burst-1 refusals left
		var admitted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				adm := l.Admit(a)
				if !adm.Blocked {
					admitted.Add(1)
				}
				l.Done(adm, true)
			})
		}
		close(start)
		wg.Wait()
		if got := admitted.Load(); got != burst-1 {
			t.Errorf("%s: %d concurrent refused requests with %d refusals left: %d admitted, want %d", addr, n, burst-1, got, burst-1)
		}

		// No budget yet: everything admitted before the first refusal is
		// counted gets through (here all n, by holding the refusals back),
		// and the refusals then spend the whole budget.
		fresh := netip.MustParseAddr("198.51.100.1")
		adms := make([]Admission, n)
		wg = sync.WaitGroup{}
		for i := range n {
			wg.Go(func() { adms[i] = l.Admit(fresh) })
		}
		wg.Wait()
		for _, adm := range adms {
			if adm.Blocked {
				t.Fatalf("a client with no budget was refused admission: %+v", adm)
			}
			l.Done(adm, true)
		}
		if _, b := blocked(l, fresh); !b {
			t.Errorf("after %d refusals admitted in one window the client is not blocked, want blocked", n)
		}
	}
}

// TestLimiterBounded: an attacker rotating addresses cannot grow the table
// past MaxClients, and clients keep being limited.
func TestLimiterBounded(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLimiter(LimiterConfig{Rate: 0.001, Burst: 2, MaxClients: 1000, Now: c.now})
	for i := range 100_000 {
		refuse(l, netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
		if i%1000 == 0 {
			c.t = c.t.Add(time.Second)
		}
	}
	if n := l.Len(); n > 1000 || n < 900 {
		t.Errorf("Len after 100,000 addresses = %d, want at most 1000 (and most of them kept)", n)
	}
	// Refilled clients go at the next sweep.
	c.t = c.t.Add(time.Hour)
	refuse(l, netip.MustParseAddr("192.0.2.1"))
	if n := l.Len(); n != 1 {
		t.Errorf("Len after every budget refilled and one refusal = %d, want 1", n)
	}
}

// TestLimiterKeepsBlocked: a full table makes room by forgetting clients
// that are not blocked, never one that is (that would give it a new
// budget); when every client is blocked a new one is not remembered.
func TestLimiterKeepsBlocked(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLimiter(LimiterConfig{Rate: 0.001, Burst: 2, MaxClients: 100, Now: c.now})
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}) }
	for i := range 50 { // 50 blocked clients
		refuse(l, addr(i))
		refuse(l, addr(i))
	}
	for i := 50; i < 5000; i++ { // a flood of clients refused once (not blocked)
		refuse(l, addr(i))
	}
	for i := range 50 {
		if _, b := blocked(l, addr(i)); !b {
			t.Fatalf("blocked client %s was forgotten to make room, want it kept", addr(i))
		}
	}
	if n := l.Len(); n != 100 {
		t.Errorf("Len = %d, want 100 (full)", n)
	}

	// Every client blocked: a new one is not remembered, and none is lost.
	full := NewLimiter(LimiterConfig{Rate: 0.001, Burst: 1, MaxClients: 100, Now: c.now})
	for i := range 100 {
		refuse(full, addr(i))
	}
	refuse(full, addr(1000))
	refuse(full, addr(1000))
	if _, b := blocked(full, addr(1000)); b || full.Len() != 100 {
		t.Errorf("new client in a table of blocked ones: blocked %v, Len %d; want not remembered, 100", b, full.Len())
	}
	for i := range 100 {
		if _, b := blocked(full, addr(i)); !b {
			t.Fatalf("blocked client %s was forgotten, want every blocked client kept", addr(i))
		}
	}
}

func TestRetryAfter(t *testing.T) {
	for wait, want := range map[time.Duration]string{0: "1", time.Millisecond: "1", time.Second: "1", 1500 * time.Millisecond: "2", 20 * time.Second: "20"} {
		if got := RetryAfter(wait); got != want {
			t.Errorf("RetryAfter(%v) = %q, want %q", wait, got, want)
		}
	}
}

// TestSampler: a thousand refusals make one full line per reason and one
// summary line per window, and a lone one later is logged in full again;
// Flush writes the open window's count and sampling goes on after it.
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
		s.Flush()
		if n := strings.Count(buf.String(), "\n"); n != 2 {
			t.Errorf("lines after Flush = %d, want 2 (Flush writes the open window's count)", n)
		}
		if first, second, third := s.Sample("x"), s.Sample("x"), s.Sample("x"); !first || second || third {
			t.Errorf("Sample after Flush = %v, %v, %v; want true, false, false (still sampling)", first, second, third)
		}
		time.Sleep(11 * time.Second)
		synctest.Wait()
		if lines := strings.Split(strings.TrimSpace(buf.String()), "\n"); len(lines) != 3 || !strings.Contains(lines[2], `"by_reason":{"x":2}`) {
			t.Errorf("lines a window after Flush = %q, want a third with the count of x: 2", lines)
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
		refuse(l, addrs[i%len(addrs)])
	}
}

// BenchmarkLimiterGoodClient is what the limiter costs a request that is
// not refused, from every core at once: with no client remembered (one
// atomic load), and with other clients remembered (the lock and a lookup).
func BenchmarkLimiterGoodClient(b *testing.B) {
	good := netip.MustParseAddr("192.0.2.1")
	b.Run("idle", func(b *testing.B) {
		l := NewLimiter(LimiterConfig{Rate: 1, Burst: 20})
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Done(l.Admit(good), false)
			}
		})
	})
	b.Run("under-attack", func(b *testing.B) {
		l := NewLimiter(LimiterConfig{Rate: 1, Burst: 20})
		refuse(l, netip.MustParseAddr("198.51.100.1"))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Done(l.Admit(good), false)
			}
		})
	})
}
