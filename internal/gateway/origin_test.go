package gateway

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/auth"
	"switchboard/internal/call"
)

// TestPublicKeyOrigin: a call started with a publishable key is joined only
// from one of the key's origins; any other Origin, or none, is a 403
// before the claim, and the call stays queued for the right page. A call
// started with a secret key is joined from any origin.
func TestPublicKeyOrigin(t *testing.T) {
	b := setup(t)
	k, _ := auth.NewPublicKey(b.asst.OrgID, "shop", []string{b.asst.ID}, []string{"https://shop.example.com"}, time.Now())
	b.mem.mu.Lock()
	b.mem.publicKeys[k.ID] = k
	b.mem.mu.Unlock()
	c := b.webCall()
	c.PublicKeyID = k.ID
	b.mem.add(c)

	query := "call_id=" + c.ID + "&assistant_id=" + c.AssistantID
	upgrade := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, origin := range []string{"https://evil.example.com", "", "null", "https://shop.example.com.evil.example", "http://shop.example.com"} {
		headers := upgrade
		if origin != "" {
			headers = append(append([]string{}, upgrade...), "Origin", origin)
		}
		w := handshake(b.srv, query, "192.0.2.1:1", headers...)
		if w.Code != http.StatusForbidden {
			t.Errorf("handshake of a publishable key's call with Origin %q = %d %s, want 403", origin, w.Code, w.Body)
		}
		if got := b.mem.call(c.ID).Status; got != call.Queued {
			t.Fatalf("after a refused Origin %q the call is %s, want queued", origin, got.Text())
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, b.url(c.ID, c.AssistantID), &websocket.DialOptions{HTTPClient: b.web.Client(),
		HTTPHeader: http.Header{"Origin": {"https://shop.example.com"}}})
	if err != nil {
		t.Fatalf("Dial(publishable key's call) from its origin: %v, want a session", err)
	}
	conn.CloseNow()

	other := b.webCall() // started with a secret key
	conn, _, err = websocket.Dial(ctx, b.url(other.ID, other.AssistantID), &websocket.DialOptions{HTTPClient: b.web.Client(),
		HTTPHeader: http.Header{"Origin": {"https://anywhere.example"}}})
	if err != nil {
		t.Fatalf("Dial(secret key's call) from another origin: %v, want a session", err)
	}
	conn.CloseNow()
}
