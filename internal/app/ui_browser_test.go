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
		chromedp.Flag("headless", "new"), chromedp.NoSandbox, chromedp.WindowSize(1280, 860),
		// The test call's widget opens a microphone: a fake one, allowed.
		chromedp.Flag("use-fake-ui-for-media-stream", true), chromedp.Flag("use-fake-device-for-media-stream", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 240*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })

	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, string(e.Entry.Source)+": "+e.Entry.Text+" ("+e.Entry.URL+")")
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
	t.Parallel()
	ctx, problems := newBrowser(t)
	b := start(t, testConfig("sqlite:"+filepath.Join(t.TempDir(), "ui.db")))

	const email, password = "ops@example.com", "a long test password"
	b.addOperator(email, password)
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

	refused := dashboardManagement(t, ctx, b.m.URL(), asst, p)
	dashboardConsole(t, ctx, b, asst, p, callID)

	for _, p := range problems() {
		// A refused form is answered 400, which Chromium logs.
		if p != refused {
			t.Errorf("browser console: %s", p)
		}
	}
	// Close the browser before the server stops: Chromium keeps sockets
	// it opened ahead of need, which the server's shutdown would wait for.
	if err := chromedp.Cancel(ctx); err != nil {
		t.Errorf("close chromium: %v", err)
	}
}

// brokenFlowJSON's ask branch names a node that does not exist.
const brokenFlowJSON = `{"start":"greet","nodes":{
  "greet":{"type":"say","text":"Thanks for calling Acme.","next":"ask"},
  "ask":{"type":"ask","text":"Sales or support?","branches":[
    {"match":{"kind":"keywords","any":["sales"]},"next":"sales"},
    {"match":{"kind":"keywords","any":["support"]},"next":"bye"}]},
  "bye":{"type":"end","text":"Goodbye.","success":true}}}`

// dashboardManagement drives the management pages: an assistant with a
// broken flow is refused with the error on its node, in the list and in
// the graph, then fixed; a CSV of contacts with a bad row is imported
// with that row's error shown. It saves their screenshots, and returns
// the console line of the one refused form (its 400).
func dashboardManagement(t *testing.T, ctx context.Context, base, bookingID, purchaseID string) string {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/assistants"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-id="`+bookingID+`"]`)),
	); err != nil {
		t.Fatalf("the assistants page does not list %s: %v", bookingID, err)
	}
	screenshot(t, ctx, "assistants.png")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/assistants/"+bookingID),
		chromedp.WaitVisible(chromedp.ID("flow-graph")),
	); err != nil {
		t.Fatalf("open assistant %s: %v", bookingID, err)
	}
	// "Talk to this assistant": the widget mounts under the dashboard's
	// CSP (same-origin scripts, no inline code), a labelled button.
	label, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const w = document.querySelector("#talk [data-switchboard-widget]");
		const b = w && w.shadowRoot && w.shadowRoot.querySelector("[data-switchboard-call]"); return b ? b.textContent : ""; })()`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || label != "Talk to this assistant" {
		t.Errorf("the assistant's page: talk button %q, %v; want the widget's button labelled Talk to this assistant", label, err)
	}
	screenshot(t, ctx, "assistant.png")

	// A new assistant whose flow names a missing node: refused, the
	// error under the flow and its node red in the graph.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/assistants/new"),
		chromedp.SendKeys(chromedp.CSS(`#assistant-form input[name="name"]`), "Front desk"),
		chromedp.SetValue(chromedp.ID("flow-json"), brokenFlowJSON),
		chromedp.Submit(chromedp.ID("flow-json")),
		chromedp.WaitVisible(chromedp.ID("flow-errors")),
	); err != nil {
		t.Fatalf("create an assistant with a broken flow: %v", err)
	}
	errs, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("flow-errors")))
	if err != nil || !strings.Contains(errs, `nodes.ask.branches[0].next: unknown node "sales"`) {
		t.Errorf("the flow's errors = %q, %v; want the ask node's missing next", errs, err)
	}
	bad, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('#flow-graph g.node.bad[data-node="ask"]') && !!document.querySelector('#flow-graph g.node.missing[data-node="sales"]')`))
	if err != nil || !bad {
		t.Errorf("the graph does not mark the ask node bad and the sales node missing: %v", err)
	}
	screenshot(t, ctx, "assistant-error.png")
	fixed := strings.Replace(brokenFlowJSON, `"next":"sales"`, `"next":"bye"`, 1)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("flow-json"), fixed),
		chromedp.Submit(chromedp.ID("flow-json")),
		chromedp.WaitVisible(chromedp.CSS(`p.notice[role="status"]`)),
	); err != nil {
		t.Fatalf("save the fixed flow: %v", err)
	}
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector('#flow-graph g.node.bad') && !!document.querySelector('#flow-graph g.node[data-node="bye"]') && location.pathname.startsWith('/ui/assistants/asst_')`))
	if err != nil || !ok {
		t.Errorf("after the fix: want the saved assistant's page with its graph and no bad node: %v", err)
	}

	// Contacts from a CSV with one bad row.
	csv := filepath.Join(t.TempDir(), "contacts.csv")
	if err := os.WriteFile(csv, []byte("name,phoneNumber,plan\nAda Lovelace,+14155550111,gold\nBad Row,555-0199,\nGrace Hopper,+1 415 555 0112,silver\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/contacts/"+purchaseID),
		chromedp.SetUploadFiles(chromedp.CSS(`#import-contacts input[name="file"]`), []string{csv}),
		chromedp.Submit(chromedp.CSS(`#import-contacts input[name="file"]`)),
		chromedp.WaitVisible(chromedp.ID("import-report")),
	); err != nil {
		t.Fatalf("import contacts: %v", err)
	}
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#import-rows tr.failed[data-row="3"]`)))
	if err != nil || !strings.Contains(row, "phoneNumber:") {
		t.Errorf("the bad row 3 = %q, %v; want its phoneNumber error", row, err)
	}
	listed, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("contacts")))
	if err != nil || !strings.Contains(listed, "Ada Lovelace") || !strings.Contains(listed, "+14155550112") {
		t.Errorf("the good rows are not listed: %q, %v", listed, err)
	}
	screenshot(t, ctx, "contacts.png")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/numbers"), chromedp.WaitVisible(chromedp.ID("purchases"))); err != nil {
		t.Fatalf("open the numbers page: %v", err)
	}
	screenshot(t, ctx, "numbers.png")
	// The other pages, for the docs.
	for _, pg := range []struct{ path, title, file string }{
		{"/ui/schedules", "Schedules", "schedules.png"}, {"/ui/webhooks", "Webhooks", "webhooks.png"}, {"/ui/keys", "API keys", "keys.png"},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+pg.path)); err != nil {
			t.Errorf("open %s: %v", pg.path, err)
			continue
		}
		title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main h1")))
		if err != nil || title != pg.title {
			t.Errorf("%s: heading %q, %v; want %s", pg.path, title, err, pg.title)
			continue
		}
		screenshot(t, ctx, pg.file)
	}
	return "network: Failed to load resource: the server responded with a status of 400 (Bad Request) (" + base + "/ui/assistants)"
}
