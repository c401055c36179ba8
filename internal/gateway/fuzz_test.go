package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"switchboard/internal/call"
	"switchboard/internal/gateway/protocol"
)

// FuzzSession sends each input as a text frame into a live session. The
// session must survive it — a following user.text is still answered, and
// every error it sent was non-fatal — unless the frame was abuse (over
// MaxFrame), which closes 4400 after a fatal error and call.ended; a
// hangup ends the call normally.
// `go test -run '^$' -fuzz FuzzSession ./internal/gateway/`.
func FuzzSession(f *testing.F) {
	seeds := []string{
		`{"type":"user.text","text":"Book me Tuesday at 3 pm"}`,
		`{"type":"session.update","textOnly":false}`,
		`{"type":"session.update","textOnly":true,"audio":{"encoding":"mulaw"},"metadata":{"a":[1,{"b":null}]}}`,
		`{"type":"ping","id":"p1"}`,
		`{"type":"playback.mark","turnId":"turn_1","playedMs":1200}`,
		`{"type":"hangup"}`,
		`{"type":"user.text","text":"   "}`,
		`{"type":"nope"}`, `{}`, `[]`, `null`, ``, "\xff", `{"a":` + strings.Repeat("[", 100),
		`{"type":"user.text","text":"` + strings.Repeat("a", protocol.MaxFrame) + `"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	b := setup(f, func(o *setupOptions) { o.noLeaks = true })
	f.Fuzz(func(t *testing.T, frame []byte) {
		c := b.webCall()
		cl := b.dialFirst(t, c)
		cl.sendBytes(websocket.MessageText, frame)
		ev, err := protocol.Decode(frame)
		var pe *protocol.Error
		switch {
		case errors.As(err, &pe) && pe.Fatal():
			cl.expectError(pe.Code, "", true)
			cl.expectEnd(call.Completed, call.ReasonCustomerEnded, protocol.CloseProtocolAbuse)
		case err == nil && ev.Type() == protocol.TypeHangup:
			cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
		default:
			const probe = "Are you still there?"
			cl.say(probe)
			for {
				ev := cl.next()
				if e, ok := ev.(protocol.ErrorEvent); ok && e.Fatal {
					t.Fatalf("frame %q got a fatal error %+v, want the session to go on", frame, e)
				}
				if tr, ok := ev.(protocol.Transcript); ok && tr.Role == protocol.RoleAssistant && tr.Text == "You said: "+probe {
					break
				}
				if ev.Type() == protocol.TypeCallEnded {
					t.Fatalf("frame %q ended the call: %+v", frame, ev)
				}
			}
			cl.send(`{"type":"hangup"}`)
			cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
		}
		b.waitLive(t, 0)
	})
}
