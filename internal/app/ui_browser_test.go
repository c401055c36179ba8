package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"switchboard/internal/id"
	"switchboard/internal/operator"
)

// chromium finds Debian's chromium for the browser tests. Without it they
// skip, unless SWITCHBOARD_REQUIRE_BROWSER=1 (make test), which makes a
// missing browser a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SWITCHBOARD_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium on PATH and SWITCHBOARD_REQUIRE_BROWSER=1 (scripts/ensure-deps.sh test installs it)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium); SWITCHBOARD_REQUIRE_BROWSER=1 makes this a failure")
	return ""
}

// newBrowser starts a headless Chromium (the flags of
// ../shared/research/deps.md §5) and collects the page's console errors.
func newBrowser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", "new"), chromedp.NoSandbox, chromedp.WindowSize(1280, 860))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })

	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, string(e.Entry.Source)+": "+e.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, struct{}{}); err != nil {
		t.Fatalf("chromium: Log.enable: %v", err)
	}
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), problems...) }
}

// screenshot saves a PNG of the whole page: into docs/screenshots/ when
// SWITCHBOARD_SCREENSHOTS=1 (make test sets it, so the pictures in docs/
// are the last test run's), else into the test's temporary directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := t.TempDir()
	if os.Getenv(screenshotsEnv) == "1" {
		dir = filepath.Join("..", "..", "docs", "screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardBrowser: in a real Chromium, an operator signs in, sees a
// sandbox call in the list (and a new call appear there live, without a
// reload), opens it, and sees its transcript and latency chart; the CSP
// blocks nothing the pages use.
func TestDashboardBrowser(t *testing.T) {
	ctx, problems := newBrowser(t)
	b := start(t, testConfig("sqlite:"+filepath.Join(t.TempDir(), "ui.db")))

	const email, password = "ops@example.com", "a long test password"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.m.DB().CreateOperator(t.Context(), operator.Operator{ID: id.New(operator.IDPrefix), OrgID: b.org, Email: email,
		PasswordHash: hash, CreatedAt: id.Now()}); err != nil {
		t.Fatal(err)
	}
	// A sandbox call that becomes a conversation: the booking flow with
	// the default persona, ended and analysed.
	asst := b.bookingAssistant(b.key)
	p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100"}).data()["id"].(string)
	b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "outboundAssistantId": asst})
	place := func() string {
		return b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": p, "phoneNumber": "+14155551234"}).Body["callId"].(string)
	}
	callID := place()
	b.checkBookingCall(callID)

	// Sign in.
	if err := chromedp.Do(ctx, chromedp.Navigate(b.m.URL()+"/ui/calls")); err != nil {
		t.Fatalf("open /ui/calls: %v", err)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "/ui/login?next=") {
		t.Fatalf("signed out, /ui/calls went to %s; want the sign-in page", loc)
	}
	screenshot(t, ctx, "login.png")
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), password),
		chromedp.Submit(chromedp.CSS(`input[name="password"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-call-id="`+callID+`"]`)),
	); err != nil {
		t.Fatalf("sign in and see call %s listed: %v", callID, err)
	}

	// A call placed now shows up in the list without a reload.
	live := place()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector('tr[data-call-id="`+live+`"]')`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Errorf("the new call %s did not appear in the list live: %v", live, err)
	}
	b.waitCall(b.key, live, 15*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('tr[data-call-id="`+live+`"] [data-field="statusText"]').textContent === "ended"`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Errorf("the live call's row did not turn ended: %v", err)
	}
	screenshot(t, ctx, "calls.png")

	// Open the first call.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href="/ui/calls/`+callID+`"]`)),
		chromedp.WaitVisible(chromedp.ID("latency-chart")),
	); err != nil {
		t.Fatalf("open call %s: %v", callID, err)
	}
	transcript, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("transcript")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"What day would suit you?", "Goodbye"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("the call's transcript lacks %q:\n%s", want, transcript)
		}
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#latency-chart g.bar rect').length`))
	if err != nil || bars == 0 {
		t.Errorf("latency chart bars = %d, %v; want one per assistant reply", bars, err)
	}
	summary, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil || !strings.Contains(summary, "Summary") || !strings.Contains(summary, "Structured data") {
		t.Errorf("the call's page shows no analysis summary and structured data: %v", err)
	}
	screenshot(t, ctx, "call.png")

	for _, p := range problems() {
		t.Errorf("browser console: %s", p)
	}
}
