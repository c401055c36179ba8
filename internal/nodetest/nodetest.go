// Package nodetest runs real switchboard server processes for the tests and
// benchmarks that need what an in-process server cannot give: a node killed
// with SIGKILL, mid-work, with no chance to clean up. It builds the binary,
// starts nodes on :0 ports against one database, drives them over the REST
// API, and reads the database directly to see what the dead left behind.
package nodetest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the probe's SQLite driver

	"switchboard/internal/id"
	"switchboard/internal/store/sqlstore"
)

// Build compiles ./cmd/switchboard of the module rooted at moduleDir into
// dir with the given build tags (pure Go, no race detector: a node is a
// peer here, not the code under the race detector) and returns its path.
// With the tag speech_native it is built with cgo, as `make run` builds it
// with the native speech engines.
func Build(ctx context.Context, moduleDir, dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "switchboard")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "./cmd/switchboard")
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if slices.Contains(tags, "speech_native") {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("nodetest: go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// ModuleDir finds the module root above the working directory.
func ModuleDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("nodetest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Node is a running server process.
type Node struct {
	Name string
	// URL is the node's base URL; Key the API key it printed on the
	// database's first start ("" on later starts); ID its node id in the
	// cluster (node_…, from its "serving" record).
	URL, Key, ID string
	cmd          *exec.Cmd
	done         chan struct{}
	logPath      string
}

// TestSecretKey is the secret key every node of a test is given (base64 of
// 32 bytes): nodes on one PostgreSQL database must share one.
const TestSecretKey = "c3dpdGNoYm9hcmQtbm9kZXRlc3Qtc2VjcmV0LWtleSE="

// Options of a node.
type Options struct {
	Name string
	Bin  string
	DB   string
	// Env is added to the process's environment (failpoints, say).
	Env []string
	// Args are extra serve flags.
	Args []string
	// LogDir receives the node's log as NAME.log.
	LogDir string
	// Dir is the process's working directory ("": the test's).
	Dir string
	// FirstStart: the database is new and the node prints its first API
	// key, which Start waits for (it comes on stdout, the "serving" record
	// on stderr: either may be read first).
	FirstStart bool
}

// Start starts a node and waits until it serves (up to a minute).
func Start(ctx context.Context, o Options) (*Node, error) {
	logPath := filepath.Join(o.LogDir, o.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// A short drain: a test that stops a node with live calls does not
	// wait the default 30 s (Args may say otherwise; the last flag wins).
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", o.DB, "--sandbox-voice=false", "--sip-addr", "127.0.0.1:0", "--log-level", "info",
		"--drain-timeout", "2s"}, o.Args...)
	cmd := exec.Command(o.Bin, args...) //nolint:noctx // the node outlives ctx: Kill and Stop end it
	cmd.Dir = o.Dir
	// Every node of a test shares one secret key, as nodes on one
	// PostgreSQL database must (SQLite nodes would make their own file).
	cmd.Env = append(os.Environ(), "SWITCHBOARD_SECRET_KEY="+TestSecretKey)
	cmd.Env = append(cmd.Env, o.Env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	n := &Node{Name: o.Name, cmd: cmd, done: make(chan struct{}), logPath: logPath}
	addr, key := make(chan serving, 1), make(chan string, 1)
	var copiers sync.WaitGroup
	copiers.Go(func() { scan(stdout, logFile, key, "API key: ") })
	copiers.Go(func() { scanJSON(stderr, logFile, addr) })
	go func() {
		copiers.Wait()
		_ = cmd.Wait()
		logFile.Close()
		close(n.done)
	}()
	select {
	case a := <-addr:
		n.URL, n.ID = "http://"+a.addr, a.node
	case <-n.done:
		return nil, fmt.Errorf("nodetest: node %s exited before serving; its log: %s", o.Name, n.tail())
	case <-time.After(time.Minute):
		n.Kill()
		return nil, fmt.Errorf("nodetest: node %s did not serve within a minute; its log: %s", o.Name, n.tail())
	case <-ctx.Done():
		n.Kill()
		return nil, ctx.Err()
	}
	if o.FirstStart {
		select {
		case n.Key = <-key:
		case <-time.After(10 * time.Second):
			n.Kill()
			return nil, fmt.Errorf("nodetest: node %s printed no API key on a first start; its log: %s", o.Name, n.tail())
		}
	}
	return n, nil
}

// scan copies r to w and sends the rest of the first line holding marker.
// It drains r to its end whatever it holds (a line too long to scan is
// copied as is), so the node never blocks writing to a full pipe.
func scan(r io.Reader, w io.Writer, found chan<- string, marker string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		if _, after, ok := strings.Cut(line, marker); ok {
			select {
			case found <- strings.TrimSpace(after):
			default:
			}
		}
	}
	_, _ = io.Copy(w, r)
}

// serving is what a node's "serving" record says.
type serving struct{ addr, node string }

// scanJSON copies the JSON log r to w and sends the address and node id
// of its "serving" record.
func scanJSON(r io.Reader, w io.Writer, addr chan<- serving) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fmt.Fprintln(w, sc.Text())
		var rec struct {
			Msg, Addr string
			NodeID    string `json:"node_id"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving" && rec.Addr != "" {
			select {
			case addr <- serving{rec.Addr, rec.NodeID}:
			default:
			}
		}
	}
	_, _ = io.Copy(w, r) // see scan
}

// Kill ends the process with SIGKILL, as a crash or the OOM killer would,
// and waits for it.
func (n *Node) Kill() {
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

// Stop asks the process to shut down (SIGTERM) and waits up to a minute.
func (n *Node) Stop() error {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
		return nil
	case <-time.After(time.Minute):
		n.Kill()
		return fmt.Errorf("nodetest: node %s did not stop within a minute", n.Name)
	}
}

// Term sends SIGTERM (the node drains, then shuts down) and returns at once.
func (n *Node) Term() { _ = n.cmd.Process.Signal(syscall.SIGTERM) }

// Exited is closed once the process has exited.
func (n *Node) Exited() <-chan struct{} { return n.done }

// Log returns the node's log so far.
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.logPath)
	return string(b)
}

func (n *Node) tail() string { return tail(n.logPath, 4000) }

func tail(path string, max int) string {
	b, _ := os.ReadFile(path)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Logs returns the last max bytes of each node log in dir, for a failure message.
func Logs(dir string, max int) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "--- %s (last %d bytes)\n%s\n", filepath.Base(p), max, tail(p, max))
	}
	return b.String()
}

// Do sends a JSON request with the key and decodes the answer's JSON into
// out (when not nil); a status other than 2xx is an error.
func Do(ctx context.Context, base, key, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Probe reads a node's database directly, as the test's own connection.
type Probe struct {
	db     *sql.DB
	dollar bool
}

// OpenProbe opens the database a node uses (sqlite:PATH or postgres://…).
func OpenProbe(dbURL string) (*Probe, error) {
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
		if err != nil {
			return nil, err
		}
		return &Probe{db: db}, nil
	}
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	return &Probe{db: stdlib.OpenDB(*cfg), dollar: true}, nil
}

// Close closes the probe's connections.
func (p *Probe) Close() error { return p.db.Close() }

// rebind writes q's ? placeholders as the probe's database wants them.
func (p *Probe) rebind(q string) string {
	if p.dollar {
		return sqlstore.Rebind(q)
	}
	return q
}

// Int runs a query with one integer result; ? placeholders.
func (p *Probe) Int(ctx context.Context, q string, args ...any) (int64, error) {
	var v sql.NullInt64
	err := p.db.QueryRowContext(ctx, p.rebind(q), args...).Scan(&v)
	return v.Int64, err
}

// Scan runs a query of one row into dest; ? placeholders.
func (p *Probe) Scan(ctx context.Context, q string, args []any, dest ...any) error {
	return p.db.QueryRowContext(ctx, p.rebind(q), args...).Scan(dest...)
}

// CreatePostgres creates an empty database named prefix, the Unix time and
// random letters (sbe2e_1795511561_abcdefghijklm) on the server of base (a
// PostgreSQL URL) and returns its URL and a func that drops it. The time in
// the name lets scripts/ensure-postgres.sh drop what a killed run left.
func CreatePostgres(ctx context.Context, base, prefix string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("nodetest: connect %s: %w", base, err)
	}
	defer conn.Close(ctx)
	name := prefix + strconv.FormatInt(time.Now().Unix(), 10) + "_" + id.Random(8)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("nodetest: create database: %w", err)
	}
	drop := func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}
	cfg := conn.Config()
	u := &url.URL{Scheme: "postgres", Host: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), Path: "/" + name, RawQuery: "sslmode=disable"}
	if cfg.Password != "" {
		u.User = url.UserPassword(cfg.User, cfg.Password)
	} else {
		u.User = url.User(cfg.User)
	}
	return u.String(), drop, nil
}
