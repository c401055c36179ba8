package siptest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// Port allocation. SIPp and baresip take fixed port numbers on their
// command lines (-p, -mp, sip_listen, rtp_ports), so a test cannot use :0;
// it needs numbers nobody else will take between the moment it picks them
// and the moment the peer binds them. Two things make that hold:
//
//   - Within a process, ports are handed out once and never again, so
//     parallel tests of one package never share a port.
//   - Across processes (go test runs packages in parallel), ports come in
//     blocks of blockSize, and a process owns a block by holding an flock
//     on a file named for it under the temporary directory until it exits.
//     Two test binaries never take the same block.
//
// Each port handed out is also checked free on 127.0.0.1 for both UDP and
// TCP by binding and releasing it, which catches programs that do not play
// by these locks. The range sits below Linux's ephemeral ports
// (32768–60999), so the kernel does not give them to outgoing sockets.
const (
	portLow   = 21000
	portHigh  = 32767
	blockSize = 16
)

// PortRange is a run of consecutive ports on 127.0.0.1, First..Last
// inclusive; First is even (RTP ports conventionally start even).
type PortRange struct {
	First, Last int
}

// Len returns how many ports the range holds.
func (r PortRange) Len() int { return r.Last - r.First + 1 }

// String returns "first-last", the form of baresip's rtp_ports and the
// server's --rtp-ports.
func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

var ports struct {
	mu    sync.Mutex
	block int // first port of the block being handed out; 0: none yet
	next  int // next port in it
	locks []*os.File
}

// Port returns one port free for UDP and TCP on 127.0.0.1 that no other
// test of any siptest user on this machine will be given.
func Port(t testing.TB) int {
	t.Helper()
	return Ports(t, 1).First
}

// Ports returns n consecutive free ports (1 ≤ n ≤ 16), First even, on
// 127.0.0.1 for UDP and TCP: a SIPp media port block (-mp uses First and
// First+2), or an RTP range for baresip or the server.
func Ports(t testing.TB, n int) PortRange {
	t.Helper()
	if n < 1 || n > blockSize {
		t.Fatalf("siptest.Ports(%d): want 1 to %d ports", n, blockSize)
	}
	ports.mu.Lock()
	defer ports.mu.Unlock()
	step := n + n%2 // keep every range starting even
	for range (portHigh - portLow) / blockSize {
		if ports.block == 0 || ports.next+step > ports.block+blockSize {
			if err := lockBlock(); err != nil {
				t.Fatalf("siptest.Ports(%d): %v", n, err)
			}
		}
		r := PortRange{First: ports.next, Last: ports.next + n - 1}
		ports.next += step
		if free(r) {
			return r
		}
	}
	t.Fatalf("siptest.Ports(%d): no free run of ports in %d-%d", n, portLow, portHigh)
	return PortRange{}
}

// lockBlock takes the next block no other process holds, starting from a
// random one so that processes rarely contend.
func lockBlock() error {
	dir := filepath.Join(os.TempDir(), "switchboard-siptest-ports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	blocks := (portHigh - portLow + 1) / blockSize
	start := rand.IntN(blocks)
	if ports.block != 0 {
		start = (ports.block-portLow)/blockSize + 1
	}
	for i := range blocks {
		first := portLow + (start+i)%blocks*blockSize
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(first)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		// Held until the process exits: the kernel drops the lock then.
		ports.locks = append(ports.locks, f)
		ports.block, ports.next = first, first
		return nil
	}
	return fmt.Errorf("every port block in %d-%d is held by another process", portLow, portHigh)
}

// free reports whether every port of r can be bound on 127.0.0.1 for both
// UDP and TCP right now.
func free(r PortRange) bool {
	var lc net.ListenConfig
	ctx := context.Background()
	for p := r.First; p <= r.Last; p++ {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		pc, err := lc.ListenPacket(ctx, "udp4", addr)
		if err != nil {
			return false
		}
		pc.Close()
		l, err := lc.Listen(ctx, "tcp4", addr)
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
