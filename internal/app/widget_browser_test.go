package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"switchboard/internal/audio"
	"switchboard/internal/doctest"
	"switchboard/internal/sip/siptest"
)

// RequireBrowserEnv makes a missing chromium fail the browser tests rather
// than skip them; make test sets it (scripts/ensure-deps.sh test installs
// Debian's chromium).
const requireBrowserEnv = "SWITCHBOARD_REQUIRE_BROWSER"

// requireBrowser returns the chromium to drive, skipping the test (or
// failing it, under SWITCHBOARD_REQUIRE_BROWSER=1) when there is none.
func requireBrowser(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("a browser test; make test runs it")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(requireBrowserEnv) == "1" {
		t.Fatalf("no chromium on PATH and %s=1: ./scripts/ensure-deps.sh test installs it", requireBrowserEnv)
	}
	t.Skipf("no chromium on PATH (./scripts/ensure-deps.sh test installs it; %s=1 makes this a failure)", requireBrowserEnv)
	return ""
}

// widgetFlow opens with a question, catches "tomorrow" in the answer
// (asking again if it does not), and then waits for a word the caller never
// says, so the call goes on until the caller hangs up.
const widgetFlow = `{
  "start": "ask_day",
  "nodes": {
    "ask_day": {"type": "ask", "text": "Hello! Which day would you like to come in?",
      "branches": [{"match": {"kind": "keywords", "any": ["tomorrow"]}, "next": "more"}],
      "noMatch": {"text": "Sorry, which day?", "maxRetries": 3, "next": "more"}},
    "more": {"type": "ask", "text": "Tomorrow it is. Is there anything else?",
      "branches": [{"match": {"kind": "keywords", "any": ["goodbye"]}, "next": "bye"}],
      "noMatch": {"text": "Anything else?", "maxRetries": 5, "next": "bye"}},
    "bye": {"type": "end", "text": "Goodbye!", "success": true}
  }
}`

// callerWAV speaks text with the local voice and writes it as the fake
// microphone chromium plays: 48 kHz mono PCM16 WAV, after lead of silence
// (the assistant's question plays first) and followed by tail of silence
// (the end of the utterance is found in it).
func callerWAV(t *testing.T, text string, lead, tail time.Duration) string {
	t.Helper()
	return callerPhrasesWAV(t, lead, phrase{text, tail})
}

// phrase is one thing the fake microphone says, and the silence after it.
type phrase struct {
	text  string
	pause time.Duration
}

// callerPhrasesWAV is callerWAV for several phrases, each followed by its
// pause.
func callerPhrasesWAV(t *testing.T, lead time.Duration, phrases ...phrase) string {
	t.Helper()
	const rate = 48000
	tts := localVoice(t)
	samples := make([]int16, int(lead*rate/time.Second))
	for _, ph := range phrases {
		pcm16k, err := audio.DecodePCM16(nil, speak(t, tts, ph.text))
		if err != nil {
			t.Fatal(err)
		}
		rs := audio.NewResampler(audio.PipelineRate, rate)
		samples = rs.Flush(rs.Process(samples, pcm16k))
		samples = append(samples, make([]int16, int(ph.pause*rate/time.Second))...)
	}
	for i := range samples {
		samples[i] /= 2 // -6 dB: room for the browser's gain control, which would clip at full scale
	}
	path := filepath.Join(t.TempDir(), "caller48k.wav")
	if err := siptest.WriteWAV(path, siptest.WAV{Rate: rate, Samples: samples}); err != nil {
		t.Fatal(err)
	}
	return path
}

// embedPage is a customer's page on another origin that embeds the
// widget from the app's origin with the one tag, holding a publishable
// key (pk_) that may start web calls for one assistant from that origin.
const embedPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Bright Smile Dental</title>
<style>body{font:16px system-ui,sans-serif;margin:40px;color:#1b1f24} h1{font-size:22px}</style></head>
<body>
<h1>Bright Smile Dental</h1>
<p>Questions about an appointment? Talk to our assistant.</p>
<script src="%s/widget.js" data-assistant-id="%s" data-public-key="%s" data-test async></script>
</body></html>`

// pageStats is window.__switchboardStats, as far as the test reads it.
type pageStats struct {
	States      []string `json:"states"`
	Transcripts []struct {
		Role  string `json:"role"`
		Text  string `json:"text"`
		Final bool   `json:"final"`
	} `json:"transcripts"`
	Errors []map[string]any `json:"errors"`
	Ended  *struct {
		Outcome     string `json:"outcome"`
		EndedReason string `json:"endedReason"`
	} `json:"ended"`
	FramesSent     int     `json:"framesSent"`
	BytesSent      int     `json:"bytesSent"`
	FramesReceived int     `json:"framesReceived"`
	Marks          []mark  `json:"marks"`
	OutputPeak     float64 `json:"outputPeak"`
	AnalyserPeak   float64 `json:"analyserPeak"`
	NonSilentMs    int     `json:"nonSilentMs"`
	InputPeak      float64 `json:"inputPeak"`
	ContextRate    float64 `json:"contextRate"`
	Underruns      int     `json:"underruns"`
	Dropped        int     `json:"dropped"`
}

type mark struct {
	TurnID   string `json:"turnId"`
	PlayedMs int    `json:"playedMs"`
}

// TestWidgetBrowserCall is the widget end to end, in a real chromium: a
// customer's page on another origin embeds /widget.js with one tag and a
// publishable key for that origin; Tab reaches the call button and Enter
// starts a call (POST /v1/calls/initiate with the pk_, CORS); chromium's fake microphone plays
// espeak-ng saying the answer, which reaches the call's transcript as the
// caller's turn; the assistant's speech plays (the page hears it); the
// captions show both; a click on "Hang up" ends the call
// customer-ended-call.
func TestWidgetBrowserCall(t *testing.T) {
	t.Parallel()
	chromium := requireBrowser(t)
	requireLocal(t)
	wav := callerWAV(t, "I would like to come in tomorrow", 4500*time.Millisecond, 3*time.Second)

	b := start(t, testConfig(databases(t)["sqlite"](t)))
	var flow any
	if err := json.Unmarshal([]byte(widgetFlow), &flow); err != nil {
		t.Fatal(err)
	}
	asst := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Front desk", "model": map[string]any{"provider": "flow"}, "flow": flow}).data()["id"].(string)

	// The customer's site, on its own origin, and the publishable key
	// its page holds (created for that origin; the page is served once it
	// exists).
	var pk string
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, embedPage, b.m.URL(), asst, pk)
	}))
	defer site.Close()
	pk = b.must(201, "POST", "/v1/public-keys", map[string]any{"name": "Dental site", "assistantIds": []string{asst},
		"origins": []string{site.URL}}).data()["key"].(string)

	ctx := browser(t, chromium, wav)
	began := time.Now()
	const shadow = `document.querySelector("[data-switchboard-widget]").shadowRoot`
	const button = shadow + `.querySelector("[data-switchboard-call]")`
	if err := chromedp.Do(ctx, chromedp.Navigate(site.URL), chromedp.WaitReady(chromedp.JSPath(button))); err != nil {
		t.Fatalf("loading the page: %v", err)
	}

	// The button: a real <button>, labelled, reached by Tab with a visible focus ring, started by Enter.
	type buttonInfo struct {
		Tag, Text, Outline string
		Focused            bool
	}
	info, err := chromedp.Run(ctx, chromedp.Evaluate[buttonInfo](`(() => { const b = `+button+`; return {Tag: b.tagName, Text: b.textContent, Outline: "", Focused: false}; })()`))
	if err != nil || info.Tag != "BUTTON" || info.Text != "Call assistant" {
		t.Fatalf("call button = %+v, %v; want a <button> labelled Call assistant", info, err)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
		t.Fatal(err)
	}
	info, err = chromedp.Run(ctx, chromedp.Evaluate[buttonInfo](`(() => { const b = `+button+`; const s = getComputedStyle(b);
		return {Tag: b.tagName, Text: b.textContent, Focused: `+shadow+`.activeElement === b, Outline: s.outlineStyle + " " + s.outlineWidth}; })()`))
	if err != nil || !info.Focused || !strings.HasPrefix(info.Outline, "solid") {
		t.Fatalf("after Tab: %+v, %v; want the call button focused with a visible outline", info, err)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	var callID string
	for deadline := time.Now().Add(10 * time.Second); callID == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if list := b.must(200, "GET", "/v1/calls?type=web", nil).list(); len(list) > 0 {
			callID = list[0]["id"].(string)
		}
	}
	if callID == "" {
		t.Fatalf("pressing Enter on the button created no call; page: %s", stats(ctx))
	}

	// The caller's words reach the call as a user turn.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(window.__switchboardStats || {transcripts: []}).transcripts.some(t => t.role === "user" && t.final && /tomorrow/i.test(t.text))`,
		chromedp.WithPollingTimeout(35*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("no final user transcript with \"tomorrow\": %v; page: %s", err, stats(ctx))
	}
	// The assistant's answer to it plays out: its last mark is sent.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const s = window.__switchboardStats;
		const a = s.transcripts.filter(t => t.role === "assistant" && t.final && /anything else/i.test(t.text));
		return a.length > 0 && s.states.at(-1) === "listening"; })()`,
		chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("the answer did not play out: %v; page: %s", err, stats(ctx))
	}

	// The captions show both sides.
	capt, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...`+shadow+`.querySelectorAll("[data-switchboard-captions] p")].map(p => p.dataset.role + ": " + p.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(capt, "\n")
	if !strings.Contains(joined, "user: You: ") || !strings.Contains(strings.ToLower(joined), "tomorrow") || !strings.Contains(joined, "assistant: Assistant: Hello! Which day") {
		t.Errorf("captions = %q, want the question and the caller's answer", capt)
	}
	status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](shadow+`.querySelector("[data-switchboard-status]").textContent`))
	if status != "Listening" {
		t.Errorf("status = %q, want Listening", status)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	saveScreenshot(t, shot)

	// Hang up by clicking.
	if label, _ := chromedp.Run(ctx, chromedp.Evaluate[string](button+`.textContent`)); label != "Hang up" {
		t.Errorf("in a call the button says %q, want Hang up", label)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.JSPath(button))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.__switchboardStats.ended !== null`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("hang-up did not end the call: %v; page: %s", err, stats(ctx))
	}
	elapsed := time.Since(began)
	s := readStats(t, ctx)
	if s.Ended.Outcome != "completed" || s.Ended.EndedReason != "customer-ended-call" {
		t.Errorf("page saw the call end %+v, want completed/customer-ended-call", *s.Ended)
	}
	status, _ = chromedp.Run(ctx, chromedp.Evaluate[string](shadow+`.querySelector("[data-switchboard-status]").textContent`))
	label, _ := chromedp.Run(ctx, chromedp.Evaluate[string](button+`.textContent`))
	if !strings.HasPrefix(status, "Call ended") || label != "Call assistant" {
		t.Errorf("after the hang-up: status %q, button %q", status, label)
	}

	// What the page sent and played.
	if len(s.Errors) > 0 {
		t.Errorf("page errors: %v", s.Errors)
	}
	if s.FramesSent < 100 || s.BytesSent != 640*s.FramesSent {
		t.Errorf("sent %d frames, %d bytes: want 20 ms frames of 640 bytes for the whole call", s.FramesSent, s.BytesSent)
	}
	if s.InputPeak < 0.05 {
		t.Errorf("microphone peak %.3f: the fake microphone was silent", s.InputPeak)
	}
	if s.OutputPeak < 0.05 || s.AnalyserPeak < 0.05 || s.NonSilentMs < 1000 {
		t.Errorf("played output peak %.3f, analyser peak %.3f, %d ms non-silent: want the assistant's speech heard", s.OutputPeak, s.AnalyserPeak, s.NonSilentMs)
	}
	turns := map[string][]int{}
	for _, m := range s.Marks {
		turns[m.TurnID] = append(turns[m.TurnID], m.PlayedMs)
	}
	if len(turns) < 2 {
		t.Errorf("playback marks %v, want marks for the question and the answer", turns)
	}
	for turn, ms := range turns {
		for i := 1; i < len(ms); i++ {
			if ms[i] <= ms[i-1] || (i < len(ms)-1 && ms[i]-ms[i-1] > 400) {
				t.Errorf("marks of %s = %v: want increasing, about 200 ms apart", turn, ms)
				break
			}
		}
	}

	// The server's record agrees.
	c := b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["endedReason"] != nil && c["endedReason"] != "" })
	if c["outcome"] != "completed" || c["endedReason"] != "customer-ended-call" {
		t.Errorf("call = %v/%v, want completed/customer-ended-call", c["outcome"], c["endedReason"])
	}
	var user string
	var lines []string
	for _, tr := range b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list() {
		lines = append(lines, fmt.Sprintf("%v: %v", tr["role"], tr["text"]))
		if tr["role"] == "user" && strings.Contains(strings.ToLower(tr["text"].(string)), "tomorrow") {
			user = tr["text"].(string)
		}
	}
	if user == "" {
		t.Errorf("transcript %q: want the caller's turn with \"tomorrow\"", lines)
	}
	t.Logf("browser call %s in %s: context %v Hz; mic peak %.3f; sent %d frames (%d bytes), received %d; output peak %.3f (analyser %.3f), %d ms non-silent; underruns %d, dropped %d samples; marks %v",
		callID, elapsed.Round(100*time.Millisecond), s.ContextRate, s.InputPeak, s.FramesSent, s.BytesSent, s.FramesReceived, s.OutputPeak, s.AnalyserPeak, s.NonSilentMs, s.Underruns, s.Dropped, turns)
	t.Logf("transcript:\n%s\ncaptions:\n%s", strings.Join(lines, "\n"), joined)
}

// TestWidgetBrowserDemoPage: the demo page renders the call button under
// its Content-Security-Policy (script-src 'self', style-src 'self': no
// inline script, the widget's styles adopted), with the parameters from
// its URL.
func TestWidgetBrowserDemoPage(t *testing.T) {
	t.Parallel()
	chromium := requireBrowser(t)
	b := start(t, testConfig(databases(t)["sqlite"](t)))
	ctx := browser(t, chromium, "")
	const button = `document.querySelector("#demo-call [data-switchboard-widget]").shadowRoot.querySelector("[data-switchboard-call]")`
	if err := chromedp.Do(ctx, chromedp.Navigate(b.m.URL()+"/widget/demo?assistantId=asst_demo&publicKey=pk_demo"),
		chromedp.WaitReady(chromedp.JSPath(button))); err != nil {
		t.Fatalf("demo page: %v", err)
	}
	type demo struct{ Background, Assistant, Snippet string }
	d, err := chromedp.Run(ctx, chromedp.Evaluate[demo](`({Background: getComputedStyle(`+button+`).backgroundColor,
		Assistant: document.getElementById("assistantId").value, Snippet: document.getElementById("demo-snippet").textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Background != "rgb(11, 107, 203)" {
		t.Errorf("call button background %q: the widget's styles did not apply under the page's CSP", d.Background)
	}
	if d.Assistant != "asst_demo" || !strings.Contains(d.Snippet, `data-assistant-id="asst_demo" data-public-key="pk_demo"`) {
		t.Errorf("demo = %+v, want the URL's parameters", d)
	}
}

// browser starts a headless chromium whose microphone plays wav (none if
// empty) and returns its tab's context; it stops when the test ends.
func browser(t *testing.T, chromium, wav string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox,
		chromedp.WindowSize(900, 640),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-fake-device-for-media-stream", true),
	)
	if wav != "" {
		// The file loops: if the recognizer mishears the caller (the
		// offline engines are approximate, more so on a loaded machine),
		// the flow asks again and the caller says it again.
		opts = append(opts, chromedp.Flag("use-file-for-fake-audio-capture", wav))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // start the browser now, so a missing library fails here
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return ctx
}

func readStats(t *testing.T, ctx context.Context) pageStats {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[pageStats](`window.__switchboardStats`))
	if err != nil {
		t.Fatalf("reading the page's stats: %v", err)
	}
	return s
}

// stats is the page's test hook as JSON, for failure messages.
func stats(ctx context.Context) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.__switchboardStats || null)`))
	if err != nil {
		return err.Error()
	}
	return s
}

// screenshotsEnv makes the browser tests rewrite docs/screenshots (make
// test sets it: the pictures in docs/ are the last test run's); without
// it they write only a missing file.
const screenshotsEnv = "SWITCHBOARD_SCREENSHOTS"

// saveScreenshot writes the page as it looked during the call to
// docs/screenshots/widget.png.
func saveScreenshot(t *testing.T, png []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "screenshots", "widget.png")
	if _, err := os.Stat(path); err == nil && os.Getenv(screenshotsEnv) != "1" {
		return
	}
	// A read-only checkout only loses the picture.
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, png, 0o644)
	}
	if err != nil {
		t.Logf("not saving the screenshot: %v", err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// TestWidgetBrowserOriginRefused: the same one-tag embed on an origin
// the publishable key does not name: the click is refused (CORS and the
// server's 403) with a visible error, and no call is created.
func TestWidgetBrowserOriginRefused(t *testing.T) {
	t.Parallel()
	chromium := requireBrowser(t)
	b := start(t, testConfig(databases(t)["sqlite"](t)))
	asst := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Front desk"}).data()["id"].(string)
	pk := b.must(201, "POST", "/v1/public-keys", map[string]any{"name": "Dental site", "assistantIds": []string{asst},
		"origins": []string{"https://dental.example.com"}}).data()["key"].(string)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, embedPage, b.m.URL(), asst, pk)
	}))
	defer site.Close()
	ctx := browser(t, chromium, "")
	const shadow = `document.querySelector("[data-switchboard-widget]").shadowRoot`
	const button = shadow + `.querySelector("[data-switchboard-call]")`
	if err := chromedp.Do(ctx, chromedp.Navigate(site.URL), chromedp.WaitReady(chromedp.JSPath(button)), chromedp.Click(chromedp.JSPath(button))); err != nil {
		t.Fatalf("loading the page and clicking: %v", err)
	}
	status, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = `+shadow+`.querySelector("[data-switchboard-status]"); return s.dataset.state === "error" && s.textContent; })()`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("a refused origin shows no error: %v; page: %s", err, stats(ctx))
	}
	if !strings.Contains(status, site.URL) || !strings.Contains(status, "origins") {
		t.Errorf("status = %q, want it to name this page's origin and the key's origins", status)
	}
	if n := len(b.must(200, "GET", "/v1/calls?type=web", nil).list()); n != 0 {
		t.Errorf("a page on a refused origin created %d calls, want none", n)
	}
	t.Logf("refused origin %s: status %q", site.URL, status)
}

// TestWidgetBrowserModuleRefused: a page on another origin imports
// /widget.mjs as an ES module (CORS), mounts the button with a gateway URL
// the server refuses (no such call), and the click ends in a visible error
// and an error event, not a hang or a retry loop.
func TestWidgetBrowserModuleRefused(t *testing.T) {
	t.Parallel()
	chromium := requireBrowser(t)
	b := start(t, testConfig(databases(t)["sqlite"](t)))
	wsBase := "ws" + strings.TrimPrefix(b.m.URL(), "http")
	refused := wsBase + "/new-web-call/connection?assistant_id=asst_aaaaaaaaaaaaaaaaaaaaaaaaaa&call_id=call_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	page := `<!doctype html><html><head><meta charset="utf-8"><title>module</title></head><body><div id="call"></div>
<script type="module">
import Switchboard, { join, start, mount, version } from "` + b.m.URL() + `/widget.mjs";
window.moduleAPI = {version, join: typeof join, start: typeof start, same: Switchboard.mount === mount};
window.events = [];
mount("#call", {gatewayUrl: "` + refused + `", test: true, onCall: (c) => c.on("error", (e) => events.push(e)).on("ended", (e) => events.push({ended: e}))});
</script></body></html>`
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer site.Close()
	ctx := browser(t, chromium, "")
	const shadow = `document.querySelector("[data-switchboard-widget]").shadowRoot`
	if err := chromedp.Do(ctx, chromedp.Navigate(site.URL), chromedp.WaitReady(chromedp.JSPath(shadow+`.querySelector("[data-switchboard-call]")`))); err != nil {
		t.Fatalf("loading the module page: %v", err)
	}
	type api struct {
		Version, Join, Start string
		Same                 bool
	}
	a, err := chromedp.Run(ctx, chromedp.Evaluate[api](`window.moduleAPI`))
	if err != nil || a != (api{Version: "1", Join: "function", Start: "function", Same: true}) {
		t.Fatalf("widget.mjs exports = %+v, %v", a, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.JSPath(shadow+`.querySelector("[data-switchboard-call]")`))); err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const s = `+shadow+`.querySelector("[data-switchboard-status]"); return s.dataset.state === "error" && s.textContent; })()`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("a refused call shows no error: %v; page: %s", err, stats(ctx))
	}
	if !strings.Contains(status, "could not connect") {
		t.Errorf("status = %q, want it to say the call could not connect", status)
	}
	evs, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.events)`))
	if !strings.Contains(evs, `"code":"connection_closed"`) || !strings.Contains(evs, `"ended"`) {
		t.Errorf("events = %s, want a connection_closed error and ended", evs)
	}
	label, _ := chromedp.Run(ctx, chromedp.Evaluate[string](shadow+`.querySelector("[data-switchboard-call]").textContent`))
	if label != "Call assistant" {
		t.Errorf("after the refusal the button says %q, want Call assistant (a new call)", label)
	}
	t.Logf("refused: status %q; events %s", status, evs)
}

// readmeBookingAssistant is the "Booking line" flow assistant of README.md
// step 1, as a newcomer creates it: the JSON body of the step's first
// block's POST /v1/assistants, read from the README itself, so that the
// browser test talks to the assistant the README has the reader create.
func readmeBookingAssistant(t *testing.T) map[string]any {
	t.Helper()
	const heading = "1. An assistant that converses offline"
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doctest.Blocks(readme, "### "+heading)
	if err != nil || len(blocks) == 0 || blocks[0].Heading != heading {
		t.Fatalf("README.md: no shell block under %q (%v)", heading, err)
	}
	text := strings.Join(blocks[0].Lines, "\n")
	i := strings.Index(text, "/v1/assistants -d '")
	if i < 0 {
		t.Fatalf("README.md %s: the first block does not POST /v1/assistants -d '{…}'", heading)
	}
	text = text[i+len("/v1/assistants -d '"):]
	var body map[string]any
	if err := json.NewDecoder(strings.NewReader(text)).Decode(&body); err != nil {
		t.Fatalf("README.md %s: the assistant's body: %v", heading, err)
	}
	if body["name"] != "Booking line" {
		t.Fatalf("README.md %s: the assistant is %v, want the Booking line", heading, body["name"])
	}
	return body
}

// TestWidgetBrowserBooking is a newcomer's first spoken call: README step
// 1's booking flow, tried on the widget demo page (/widget/demo) in a
// real chromium whose fake microphone says the README's answers (espeak-ng,
// a day, then "Yes", with pauses for the endpointer; the file loops, and
// the caller talks from the moment the call connects, over the greeting
// too). The booking completes: the call ends completed /
// assistant-ended-call, the analysis has the date and success, and the
// stored transcript has every turn that reached the call, seq 1, 2, 3 …
// without a gap, the opening first even when the caller cut it.
func TestWidgetBrowserBooking(t *testing.T) {
	chromium := requireBrowser(t)
	requireLocal(t)
	t.Parallel()
	wav := callerPhrasesWAV(t, 0, phrase{"Tuesday", 8 * time.Second}, phrase{"Yes", 8 * time.Second})
	b := start(t, testConfig(databases(t)["sqlite"](t)))
	asst := b.must(201, "POST", "/v1/assistants", readmeBookingAssistant(t)).data()["id"].(string)
	origin := strings.TrimRight(b.m.URL(), "/")
	pk := b.must(201, "POST", "/v1/public-keys", map[string]any{"name": "Demo", "assistantIds": []string{asst},
		"origins": []string{origin}}).data()["key"].(string)

	ctx := browser(t, chromium, wav)
	const button = `document.querySelector("#demo-call [data-switchboard-widget]").shadowRoot.querySelector("[data-switchboard-call]")`
	if err := chromedp.Do(ctx, chromedp.Navigate(origin+"/widget/demo?assistantId="+asst+"&publicKey="+pk),
		chromedp.WaitReady(chromedp.JSPath(button)), chromedp.Click(chromedp.JSPath(button))); err != nil {
		t.Fatalf("demo page: %v", err)
	}
	var callID string
	for deadline := time.Now().Add(10 * time.Second); callID == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if list := b.must(200, "GET", "/v1/calls?type=web", nil).list(); len(list) > 0 {
			callID = list[0]["id"].(string)
		}
	}
	if callID == "" {
		t.Fatal("clicking the demo page's call button created no call")
	}
	// The flow ends the call itself once booked; the loop of the caller's
	// answers gets there however often the recognizer mishears.
	var c map[string]any
	for deadline := time.Now().Add(100 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if c = b.must(200, "GET", "/v1/calls/"+callID, nil).data(); c["status"] == 3.0 {
			break
		}
	}
	turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
	var lines []string
	for _, tr := range turns {
		lines = append(lines, fmt.Sprintf("%v %v %q interrupted=%v", tr["seq"], tr["role"], tr["text"], tr["interrupted"]))
	}
	t.Logf("call %s ended %v/%v; transcript:\n%s", callID, c["outcome"], c["endedReason"], strings.Join(lines, "\n"))
	if c["outcome"] != "completed" || c["endedReason"] != "assistant-ended-call" {
		t.Errorf("call = %v/%v, want completed/assistant-ended-call (booked)", c["outcome"], c["endedReason"])
	}
	a := b.waitAnalysis(callID, 15*time.Second)
	data, _ := a["structuredData"].(map[string]any)
	if date, _ := data["date"].(string); !isoDate.MatchString(date) || a["successEvaluation"] != true {
		t.Errorf("analysis structuredData %v, successEvaluation %v; want a date and true", a["structuredData"], a["successEvaluation"])
	}
	checkSeq(t, turns)
	if len(turns) < 4 {
		t.Fatalf("%d turns, want at least the opening, a day, yes and the goodbye", len(turns))
	}
	opening := "Hi! This is Bright Smile Dental. What day would suit you?"
	if first := turns[0]; first["role"] != "assistant" || !strings.HasPrefix(opening, first["text"].(string)) ||
		(first["text"] != opening && first["interrupted"] != true) {
		t.Errorf("turn 1 = %v %q interrupted=%v, want the opening (what was heard of it, interrupted if cut)", first["role"], first["text"], first["interrupted"])
	}
	// The goodbye is the last assistant turn: all of it, or what was heard
	// before the looping microphone talked over it.
	const bye = "You are booked for "
	for i := len(turns) - 1; i >= 0; i-- {
		if tr := turns[i]; tr["role"] == "assistant" {
			if text := tr["text"].(string); !strings.HasPrefix(text, bye) && !strings.HasPrefix(bye, text) {
				t.Errorf("last assistant turn %q, want the goodbye (%q…)", text, bye)
			}
			break
		}
	}
}
