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
//   - Within a process, a port is handed to one test at a time: a small
//     request's ports once and never again, a run of whole blocks (an
//     RTP range) until the test that asked for it ends.
//   - Across processes (go test runs packages in parallel), ports come in
//     blocks of blockSize, and a process owns a block by holding an flock
//     on a file named for it under the temporary directory (until it exits,
//     or the test that took the block ends).
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

// maxPorts bounds one Ports request: 64 blocks, an RTP range for a few
// hundred concurrent calls.
const maxPorts = 64 * blockSize

// Ports returns n consecutive free ports (1 ≤ n ≤ 1024), First even, on
// 127.0.0.1 for UDP and TCP: a SIPp media port block (-mp uses First and
// First+2), or an RTP range for baresip or the server (--rtp-ports).
func Ports(t testing.TB, n int) PortRange {
	t.Helper()
	if n < 1 || n > maxPorts {
		t.Fatalf("siptest.Ports(%d): want 1 to %d ports", n, maxPorts)
	}
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if n > blockSize {
		// A run of whole blocks of its own.
		// Its blocks go back when the test ends (its peers have exited
		// by then, and free checks the next taker's ports anyway): a
		// package whose every test runs a server with an RTP range would
		// otherwise run the machine's range dry under -count.
		k := (n + blockSize - 1) / blockSize
		for range 8 {
			first, held, err := lockBlocks(k)
			if err != nil {
				t.Fatalf("siptest.Ports(%d): %v", n, err)
			}
			if r := (PortRange{First: first, Last: first + n - 1}); free(r) {
				t.Cleanup(func() { closeAll(held) })
				return r
			}
			ports.locks = append(ports.locks, held...) // busy: never again
		}
		t.Fatalf("siptest.Ports(%d): no free run of %d ports in %d-%d", n, n, portLow, portHigh)
	}
	step := n + n%2 // keep every range starting even
	for range (portHigh - portLow) / blockSize {
		if ports.block == 0 || ports.next+step > ports.block+blockSize {
			first, held, err := lockBlocks(1)
			if err != nil {
				t.Fatalf("siptest.Ports(%d): %v", n, err)
			}
			// Shared by the process's later small requests: held until
			// it exits (the kernel drops the lock then).
			ports.locks = append(ports.locks, held...)
			ports.block, ports.next = first, first
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

// lockBlocks takes k consecutive blocks no other process holds and
// returns the first port of the first and the locks that hold them. It
// starts from a random block so that processes rarely contend, and never
// returns a block this process holds.
func lockBlocks(k int) (int, []*os.File, error) {
	dir := filepath.Join(os.TempDir(), "switchboard-siptest-ports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, nil, err
	}
	blocks := (portHigh - portLow + 1) / blockSize
	start := rand.IntN(blocks)
	for i := range blocks {
		b := (start + i) % blocks
		if b+k > blocks {
			continue
		}
		held, err := lockRun(dir, b, k)
		if err != nil {
			return 0, nil, err
		}
		if held == nil {
			continue
		}
		return portLow + b*blockSize, held, nil
	}
	return 0, nil, fmt.Errorf("no %d free port blocks in %d-%d", k, portLow, portHigh)
}

// lockRun flocks the files of blocks b..b+k-1, or none of them: it
// returns nil when another process (or this one, earlier) holds one.
func lockRun(dir string, b, k int) ([]*os.File, error) {
	var held []*os.File
	for j := range k {
		first := portLow + (b+j)*blockSize
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(first)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			closeAll(held)
			return nil, err
		}
		// flock locks belong to the open file: a second open of a file
		// this process already locked fails here too, so no block is
		// handed out twice.
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			closeAll(held)
			return nil, nil
		}
		held = append(held, f)
	}
	return held, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
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
