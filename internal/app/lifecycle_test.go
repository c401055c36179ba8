package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/campaign"
	"switchboard/internal/id"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
	"switchboard/internal/telephony/sandbox"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestShutdownEndsLiveCalls: a graceful stop ends live calls with
// system-shutdown, and the record survives the restart; logs carry the
// request and organization ids but never the key.
func TestShutdownEndsLiveCalls(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/shutdown.db")
	cfg.Sandbox.TalkTime = time.Hour
	var logs syncBuffer
	m, err := Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, nil)), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{t: t, m: m, cfg: cfg, key: m.BootstrapKey, org: m.OrgID, http: testClient()}
	t.Cleanup(b.stop)
	f := b.fixture(b.key, "+14155550100")
	// The silent persona (…0005) keeps the call live until the silence timeout.
	callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155550005"}).Body["callId"].(string)
	b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 2.0 })

	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	b.m = nil
	if strings.Contains(logs.String(), b.key) || strings.Contains(logs.String(), strings.SplitN(b.key, "_", 3)[2]) {
		t.Errorf("logs contain the API key")
	}
	if !strings.Contains(logs.String(), `"org_id":"`+b.org+`"`) || !strings.Contains(logs.String(), `"request_id":"req_`) {
		t.Errorf("request logs lack org_id %s or request_id", b.org)
	}

	b2 := start(t, cfg)
	b2.key = b.key
	c := b2.must(200, "GET", "/v1/calls/"+callID, nil).data()
	if c["status"] != 3.0 || c["endedReason"] != "system-shutdown" || c["outcome"] != "completed" {
		t.Errorf("live call after graceful shutdown = %v, want ended/completed/system-shutdown", c)
	}
}

// TestLostCallsEnd: calls whose owner died (here: records left ringing or
// talking past their limit, as after a crash) are ended by housekeeping.
func TestLostCallsEnd(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/lost.db")
	cfg.LostCallGrace = time.Second
	b := start(t, cfg)
	f := b.fixture(b.key, "+14155550100")
	old := time.Now().Add(-time.Hour).UTC()
	mk := func(status call.Status, started time.Time) string {
		c := call.Call{ID: id.New(id.Call), OrgID: b.org, Type: call.Phone, Status: status, AssistantID: f.assistant, PurchaseID: f.purchase,
			From: f.number, To: "+14155551234", Provider: "sandbox", CreatedAt: old, UpdatedAt: old, StartedAt: started}
		if err := b.m.DB().CreateCall(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	ringing := mk(call.Ringing, time.Time{})
	overdue := mk(call.InProgress, old) // the assistant allows 600 s; this one started an hour ago
	talking := mk(call.InProgress, time.Now().Add(-10*time.Second).UTC())
	b.waitCall(b.key, ringing, 10*time.Second, func(c map[string]any) bool {
		return c["status"] == 3.0 && c["outcome"] == "failed" && c["endedReason"] == "system-call-lost"
	})
	b.waitCall(b.key, overdue, 10*time.Second, func(c map[string]any) bool {
		return c["status"] == 3.0 && c["outcome"] == "completed" && c["endedReason"] == "system-call-lost"
	})
	if c := b.must(200, "GET", "/v1/calls/"+talking, nil).data(); c["status"] != 2.0 {
		t.Errorf("a conversation within its maximum duration was ended: %v", c)
	}
}

// TestCloseCutsSilentWebClient: a web-call client that never answers the
// close handshake is cut within the gateway's share of the shutdown
// budget; the job queue still gets its own and stops cleanly, so Close
// returns nil, no goroutine the server started outlives Close, and the
// call is recorded ended system-shutdown.
func TestCloseCutsSilentWebClient(t *testing.T) {
	for name, mk := range databases(t) {
		// Not parallel: the goroutine count is the whole process's.
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(mk(t))
			cfg.ShutdownTimeout = 3 * time.Second // the gateway's close handshake waits 10 s
			before := runtime.NumGoroutine()
			b := start(t, cfg)
			asst := b.bookingAssistant(b.key)
			callID, ws := b.dialWebCall(asst)
			ws.until(isTurnDone) // then never reads again: the close frame goes unanswered
			b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 2.0 })

			m := b.m
			b.m = nil
			if err := m.Close(context.Background()); err != nil {
				t.Errorf("Close with a silent web client = %v, want nil", err)
			}
			// The test's own ends of the connections go too.
			ws.conn.CloseNow()
			b.http.CloseIdleConnections()
			waitGoroutines(t, before, "Close with a silent web client")

			b2 := start(t, cfg)
			b2.key = b.key
			c := b2.must(200, "GET", "/v1/calls/"+callID, nil).data()
			if c["status"] != 3.0 || c["endedReason"] != "system-shutdown" {
				t.Errorf("web call after Close = %v/%v, want ended (3) system-shutdown", c["status"], c["endedReason"])
			}
		})
	}
}

// waitGoroutines fails the test, listing every goroutine, unless the
// process is back to at most want goroutines within a few seconds: what
// was started after want was counted has ended. Only tests that do not
// run in parallel can use it.
func waitGoroutines(t *testing.T, want int, after string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Errorf("%s: %d goroutines, want at most %d as before the server started; still running:\n%s",
				after, runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCallAnsweredDuringClose: a sandbox call answered once Close has
// stopped the phone conversations (the first thing its calls stage does
// after the background loops; the sandbox closes after) starts no
// conversation: the sandbox ends it completed/system-shutdown as it
// closes, not failed/model-failed, and nothing of it outlives Close.
func TestCallAnsweredDuringClose(t *testing.T) {
	for name, mk := range databases(t) {
		// Not parallel: the goroutine count is the whole process's.
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(mk(t))
			cfg.Sandbox.TalkTime = time.Hour
			before := runtime.NumGoroutine()
			b := start(t, cfg)
			f := b.fixture(b.key, "+14155550100")
			b.m.runtime.Stop() // where Close's calls stage stands when the call is answered
			callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234"}).Body["callId"].(string)
			b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"].(float64) >= 2 })

			m := b.m
			b.m = nil
			if err := m.Close(context.Background()); err != nil {
				t.Errorf("Close = %v, want nil", err)
			}
			b.http.CloseIdleConnections()
			waitGoroutines(t, before, "Close with a call answered during it")

			b2 := start(t, cfg)
			b2.key = b.key
			c := b2.must(200, "GET", "/v1/calls/"+callID, nil).data()
			if c["status"] != 3.0 || c["outcome"] != "completed" || c["endedReason"] != "system-shutdown" {
				t.Errorf("call answered during Close = %v/%v/%v, want ended (3)/completed/system-shutdown", c["status"], c["outcome"], c["endedReason"])
			}
		})
	}
}

// TestCloseOverrunningDial: a dial still under way when the dialer's share
// of Close runs out is canceled; one that returns then lets Close close the
// database as usual, while one that ignores the cancellation keeps the
// database open until it returns, whenever that is. Either way Close
// names the dialer, and the dial's last write succeeds.
func TestCloseOverrunningDial(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		ignoreCancel bool
	}{
		{"returns once canceled", false},
		{"ignores cancellation", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachDB(t, func(t *testing.T, dbURL string) {
				db, err := OpenMigrated(t.Context(), dbURL)
				if err != nil {
					t.Fatal(err)
				}
				running, release, wrote := make(chan struct{}), make(chan struct{}), make(chan error, 1)
				var once sync.Once
				cfg := Config{ShutdownTimeout: time.Second}
				d := &campaign.Dialer{Store: &oneDial{Store: db}, Every: 50 * time.Millisecond, CancelGrace: dialCancelGrace(cfg),
					Dial: func(ctx context.Context, _ []store.Dial) error {
						close(running)
						if tc.ignoreCancel {
							<-release
						} else {
							<-ctx.Done()
						}
						// Its last write: the database must still be open.
						wrote <- db.PurgeIdempotency(context.WithoutCancel(ctx), time.Now())
						return nil
					}}
				// A Main with only its database and dialer.
				m := &Main{cfg: cfg, log: discardLogger(), db: db, dialer: d}
				closed := false
				t.Cleanup(func() { // when the test failed half-way
					once.Do(func() { close(release) })
					if !closed {
						_ = m.Close(context.Background())
					}
				})
				if err := d.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				select {
				case <-running:
				case <-time.After(10 * time.Second):
					t.Fatal("the dial did not start within 10 s")
				}

				err = m.Close(context.Background())
				closed = true
				if err == nil || !strings.Contains(err.Error(), "dialer") {
					t.Errorf("Close with a dial that overran its share = %v, want an error naming the dialer", err)
				}
				once.Do(func() { close(release) })
				select {
				case err := <-wrote:
					if err != nil {
						t.Errorf("the overrunning dial's last write = %v, want nil (the database still open)", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the overrunning dial did not return within 10 s of Close")
				}
				waitClosed(t, db)
			})
		})
	}
}

// TestCloseWithWebhookInFlight: a webhook delivery still waiting for its
// receiver when Close's last share runs out makes Close name the
// background loops, and the database stays open until the delivery is
// recorded, then closes: after a restart the delivery log has it.
func TestCloseWithWebhookInFlight(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		cfg := testConfig(dbURL)
		cfg.ShutdownTimeout = time.Second // the delivery may take webhook.DefaultTimeout, 10 s
		b := start(t, cfg)
		arrived, release := make(chan struct{}, 1), make(chan struct{})
		var once sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case arrived <- struct{}{}:
			default:
			}
			<-release
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(func() { once.Do(func() { close(release) }); srv.Close() })
		whID := b.must(201, "POST", "/v1/webhooks", map[string]any{"url": srv.URL + "/hooks", "events": []string{"call.ended"}}).data()["id"].(string)
		f := b.fixture(b.key, "+14155550100")
		b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+1415555" + sandbox.SuffixBusy})
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the call.ended delivery did not arrive within 10 s")
		}

		m := b.m
		b.m = nil
		err := m.Close(context.Background())
		if err == nil || !strings.Contains(err.Error(), "background loops") {
			t.Errorf("Close with a webhook delivery in flight = %v, want an error naming the background loops", err)
		}
		once.Do(func() { close(release) })
		waitClosed(t, m.DB())

		b2 := start(t, cfg)
		b2.key = b.key
		ds := b2.must(200, "GET", "/v1/webhooks/"+whID+"/deliveries", nil).list()
		if len(ds) != 1 || ds[0]["status"] != 204.0 {
			t.Errorf("deliveries after Close = %v, want the one in flight, answered 204", ds)
		}
	})
}

// waitClosed waits until db is closed (whoever closes it), failing the
// test after 10 s.
func waitClosed(t *testing.T, db *Database) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for db.Ping(context.Background()) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the database is still open 10 s after the work Close left running returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// oneDial is a store whose dialer's claim finds one attempt, once.
type oneDial struct {
	store.Store
	once sync.Once
}

func (o *oneDial) ClaimDials(context.Context, time.Time, time.Duration, int) ([]store.Dial, error) {
	var out []store.Dial
	o.once.Do(func() { out = []store.Dial{{Attempt: schedule.Attempt{ID: id.New("att"), State: schedule.Pending}}} })
	return out, nil
}
