package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// fits is a script that says whether the page has nothing wider than the
// window (no horizontal scroll) and whether the calls table, if any,
// fits its box with its last column (Duration) in view.
const fits = `(() => {
  const doc = document.documentElement;
  const out = {page: doc.scrollWidth <= window.innerWidth + 1, table: true};
  const wrap = document.querySelector(".table-wrap"), table = document.getElementById("calls");
  if (wrap && table && getComputedStyle(table).display === "table") {
    const last = table.querySelector("thead th:last-child").getBoundingClientRect();
    out.table = table.scrollWidth <= wrap.clientWidth + 1 && last.right <= wrap.getBoundingClientRect().right + 1;
  }
  return out.page && out.table;
})()`

// dashboardConsole drives the console pages in the browser: the overview
// (charts drawn), the calls list at 1280 px (the table fits, the
// assistant's name shown) and at a phone's width (cards, nothing wider
// than the screen), the search, a test phone call from the number and a
// browser call through the widget, talked to by typing, each followed
// live on its page; and the publishable keys page. It saves the
// screenshots of the overview and the calls at both widths.
func dashboardConsole(t *testing.T, ctx context.Context, b *testBundle, asst, purchaseID, callID string) {
	t.Helper()
	base := b.m.URL()
	b.waitAnalysis(callID, 15*time.Second)

	// The overview, at 1280 px: the charts of the calls so far.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/overview"), chromedp.WaitVisible(chromedp.ID("chart-outcomes"))); err != nil {
		t.Fatalf("the overview draws no calls chart: %v", err)
	}
	for _, id := range []string{"chart-minutes", "chart-success", "chart-latency", "chart-reasons"} {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.getElementById("`+id+`")`)); err != nil || !ok {
			t.Errorf("the overview has no %s: %v", id, err)
		}
	}
	calls, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-stat="calls"]`)))
	if err != nil || calls == "0" || calls == "" {
		t.Errorf("the overview counts %q calls, %v; want the analysed calls", calls, err)
	}
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fits)); err != nil || !ok {
		t.Errorf("the overview at 1280 px is wider than the window: %v", err)
	}
	screenshot(t, ctx, "overview.png")

	// The calls at 1280 px: the table fits, names and reasons shown.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/calls"), chromedp.WaitVisible(chromedp.CSS(`tr[data-call-id="`+callID+`"]`))); err != nil {
		t.Fatalf("open /ui/calls: %v", err)
	}
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-call-id="`+callID+`"]`)))
	if err != nil || !strings.Contains(row, "Booker") || !strings.Contains(row, "assistant-ended-call") {
		t.Errorf("the call's row = %q, %v; want its assistant's name and ended reason", row, err)
	}
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fits)); err != nil || !ok {
		t.Errorf("the calls table at 1280 px is wider than its box (the Duration column cut off): %v", err)
	}
	screenshot(t, ctx, "calls.png")

	// Search by the destination's number.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`input[name="q"]`), "+14155551234"),
		chromedp.Submit(chromedp.CSS(`input[name="q"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-call-id="`+callID+`"]`)),
	); err != nil {
		t.Errorf("search by number: %v", err)
	}

	// A phone's width: the pages fit the screen, the calls are cards.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/ui/calls"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-call-id="`+callID+`"]`))); err != nil {
		t.Fatalf("open /ui/calls at 390 px: %v", err)
	}
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fits)); err != nil || !ok {
		t.Errorf("the calls page at 390 px is wider than the screen: %v", err)
	}
	screenshot(t, ctx, "calls-phone.png")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/overview"), chromedp.WaitVisible(chromedp.ID("chart-outcomes"))); err != nil {
		t.Fatalf("open /ui/overview at 390 px: %v", err)
	}
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fits)); err != nil || !ok {
		t.Errorf("the overview at 390 px is wider than the screen: %v", err)
	}
	screenshot(t, ctx, "overview-phone.png")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}

	// A test phone call from the number: its page follows it live.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/test-call?number="+purchaseID),
		chromedp.Submit(chromedp.CSS(`#test-phone-call input[name="to"]`)),
		chromedp.WaitVisible(chromedp.ID("transcript")),
	); err != nil {
		t.Fatalf("place a test phone call: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#transcript li").length >= 3`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("the test phone call's transcript did not grow on its page: %v", err)
	}
	// The page reloads itself when the call ends: wait for that before
	// leaving it, or the reload aborts the next navigation (net::ERR_ABORTED
	// beside a CPU hog, where the call ended later).
	rows := b.must(200, "GET", "/v1/calls?type=phone&pageSize=1", nil).list()
	if len(rows) == 1 {
		b.waitCall(b.key, rows[0]["id"].(string), 30*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	}
	if err := chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(`body[data-events]`))); err != nil {
		t.Errorf("the ended test phone call's page did not reload: %v", err)
	}

	// A browser call of the assistant: the widget joins it, the caller
	// types, the assistant answers on the page. The widget turns audio on
	// as it joins, which needs the local speech engines (make test's
	// speech_native build): without them the gateway closes a text call
	// that is sent audio.
	if !speechNativeBuild {
		t.Log("the browser test call is skipped: it needs the speech_native build (make test)")
	} else {
		dashboardBrowserCall(t, ctx, base, asst)
	}

	// Publishable keys: make one for the assistant.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/public-keys"),
		chromedp.Click(chromedp.CSS(`#new-public-key-form input[name="assistantIds"][value="`+asst+`"]`)),
		chromedp.SetValue(chromedp.CSS(`#new-public-key-form textarea[name="origins"]`), "https://www.example.com"),
		chromedp.Submit(chromedp.CSS(`#new-public-key-form textarea[name="origins"]`)),
		chromedp.WaitVisible(chromedp.ID("key-secret")),
	); err != nil {
		t.Fatalf("create a publishable key: %v", err)
	}
	key, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("key-secret")))
	if err != nil || !strings.HasPrefix(key, "pk_") {
		t.Errorf("the new publishable key shown = %q, %v; want pk_…", key, err)
	}
	screenshot(t, ctx, "public-keys.png")
}

// dashboardBrowserCall starts a browser call of the assistant from "Place
// a test call", joins it with the widget (its fake microphone muted, so
// that only typed turns reach the flow), types the flow's answers, and
// sees the transcript grow and the call end on the call's page.
func dashboardBrowserCall(t *testing.T, ctx context.Context, base, asst string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/test-call?assistant="+asst),
		chromedp.Submit(chromedp.CSS(`#test-web-call select[name="assistant"]`)),
		chromedp.WaitVisible(chromedp.ID("talk-call")),
	); err != nil {
		t.Fatalf("start a test browser call: %v", err)
	}
	// The widget's button, in its shadow root: wait for it, then click it
	// once (a second click would hang up).
	button := `(() => { const w = document.querySelector("#talk-widget [data-switchboard-widget]");
		return w && w.shadowRoot ? w.shadowRoot.querySelector("[data-switchboard-call]") : null; })()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!`+button, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the test call's widget has no button: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](button+`.click() === undefined`)); err != nil {
		t.Fatalf("the test call's widget has no button: %v", err)
	}
	mute := `(() => { const w = document.querySelector("#talk-widget [data-switchboard-widget]");
		const m = w && w.shadowRoot && w.shadowRoot.querySelector("[data-switchboard-mute]"); if (m) m.click(); return !!m; })()`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("talk-text"))); err != nil {
		t.Fatalf("the text box did not appear once the widget joined: %v", err)
	}
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](mute)); err != nil || !ok {
		t.Fatalf("mute the widget's microphone: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("transcript").textContent.includes("What day would suit you?")`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Errorf("the browser call's first message did not appear live: %v", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#talk-text input[name="text"]`), "Next Tuesday please"),
		chromedp.Click(chromedp.CSS(`#talk-text button[type="submit"]`)), // a click fires the form's submit event; form.submit() would not
	); err != nil {
		t.Fatalf("type to the assistant: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("transcript").textContent.includes("Next Tuesday please") &&
		document.getElementById("transcript").textContent.includes("is that right?")`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Errorf("the typed turn and the assistant's answer did not appear on the call's page: %v", err)
	}
	screenshot(t, ctx, "test-call.png")
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#talk-text input[name="text"]`), "yes"),
		chromedp.Click(chromedp.CSS(`#talk-text button[type="submit"]`)), // a click fires the form's submit event; form.submit() would not
	); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	// The flow says goodbye and ends the call: the page reloads, ended.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const s = document.querySelector('[data-field="statusText"]'); return !!s && s.textContent === "ended"; })()`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("the browser call's page did not show it ended: %v", err)
	}

}
