package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"switchboard/internal/id"
	"switchboard/internal/operator"
)

// TestAssistantFormBrowser: in a real Chromium, on a server with one
// model provider, the new assistant form shows what the server runs; the
// system prompt is enabled for the model, disabled with its note when the
// model provider flow is chosen, and enabled again for the model (the
// page's script, under the dashboard's CSP); a flow created with a prompt
// is refused on the prompt's control.
func TestAssistantFormBrowser(t *testing.T) {
	t.Parallel()
	ctx, problems := newBrowser(t)
	cfg := testConfig("sqlite:" + filepath.Join(t.TempDir(), "form.db"))
	cfg.OpenAIBaseURL = "http://127.0.0.1:9/v1" // a model provider; nothing here calls it
	b := start(t, cfg)
	const email, password = "ops@example.com", "a long test password"
	b.addOperator(email, password)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.m.URL()+"/ui/assistants/new"),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), password),
		chromedp.Submit(chromedp.CSS(`input[name="password"]`)),
		chromedp.WaitVisible(chromedp.ID("assistant-form")),
		chromedp.Click(chromedp.CSS(`#server-providers summary`)),
	); err != nil {
		t.Fatalf("sign in and open the new assistant form: %v", err)
	}
	state := func() (disabled, noteHidden bool) {
		t.Helper()
		var err error
		if disabled, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("system-prompt").disabled`)); err != nil {
			t.Fatal(err)
		}
		if noteHidden, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("system-prompt-note").hidden`)); err != nil {
			t.Fatal(err)
		}
		return disabled, noteHidden
	}
	if d, h := state(); d || !h {
		t.Errorf("new form (model provider openai): prompt disabled %v, note hidden %v; want enabled, hidden", d, h)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("server-providers")))
	if err != nil || !strings.Contains(text, "openai ▸ default") || !strings.Contains(text, "--anthropic-api-key / SWITCHBOARD_ANTHROPIC_API_KEY") {
		t.Errorf("What this server runs = %q, %v; want openai the default and how to enable anthropic", text, err)
	}
	screenshot(t, ctx, "assistant-new.png")

	for _, step := range []struct {
		provider       string
		disabled, note bool
	}{{"flow", true, true}, {"openai", false, false}} {
		// The operator picks the option: the select changes and says so.
		if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`select[name="model.provider"]`), step.provider)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('select[name="model.provider"]').dispatchEvent(new Event("change"))`)); err != nil {
			t.Fatal(err)
		}
		if d, h := state(); d != step.disabled || h == step.note {
			t.Errorf("model provider %s: prompt disabled %v, note shown %v; want %v, %v", step.provider, d, !h, step.disabled, step.note)
		}
	}
	for _, p := range problems() {
		t.Errorf("browser console: %s", p)
	}
	if err := chromedp.Cancel(ctx); err != nil {
		t.Errorf("close chromium: %v", err)
	}
}

// addOperator creates a dashboard account of the bundle's organization.
func (b *testBundle) addOperator(email, password string) {
	b.t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.m.DB().CreateOperator(b.t.Context(), operator.Operator{ID: id.New(operator.IDPrefix), OrgID: b.org, Email: email,
		PasswordHash: hash, CreatedAt: id.Now()}); err != nil {
		b.t.Fatal(err)
	}
}
