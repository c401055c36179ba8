package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/httpapi"
	"switchboard/internal/webhook"
)

// webhooksListen is `switchboard webhooks listen`: a developer's webhook
// receiver, in the shape of `stripe listen`. It creates a listener
// endpoint for the key's organization, connects out to the server's
// stream of its deliveries (the server never connects to this machine, so
// its SSRF guard stays as it is), verifies each one's signature, prints
// it, forwards it to --forward-to with the same headers, and acks with
// what happened; the listener is deleted on exit (docs/ARCHITECTURE.md,
// "Webhook listeners").
func webhooksListen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("webhooks listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := clientFlags(fs)
	forward := fs.String("forward-to", "", "POST each verified delivery, with its webhook-* headers, to this `URL` (e.g. http://127.0.0.1:9000/hooks); its answer is the delivery's")
	events := fs.String("events", "", "comma-separated event types to receive (default: all)")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("webhooks listen: unexpected argument %q", fs.Arg(0))
	}
	api, err := client()
	if err != nil {
		return fmt.Errorf("webhooks listen: %w", err)
	}
	if *forward != "" && !strings.HasPrefix(*forward, "http://") && !strings.HasPrefix(*forward, "https://") {
		return fmt.Errorf("webhooks listen: --forward-to: want an http(s) URL, got %q", *forward)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	body := map[string]any{"kind": "listener"}
	if list := splitList(*events); len(list) > 0 {
		body["events"] = list
	}
	var created struct {
		Data struct {
			ID     string
			Events []string
			Secret string
		}
	}
	if err := api.do(ctx, "POST", "/v1/webhooks", body, &created); err != nil {
		return fmt.Errorf("webhooks listen: creating the listener: %w", err)
	}
	l := &listener{api: api, id: created.Data.ID, secret: created.Data.Secret, forward: *forward, out: stdout, errOut: stderr,
		http: &http.Client{Timeout: webhook.DefaultTimeout}}
	defer l.delete(ctx)
	fmt.Fprintf(stdout, "Listening for %s as %s (deleted when this command exits).\n", strings.Join(created.Data.Events, ", "), l.id)
	fmt.Fprintf(stdout, "Signing secret: %s (your receiver verifies deliveries with it)\n", l.secret)
	if l.forward != "" {
		fmt.Fprintf(stdout, "Forwarding verified deliveries to %s\n", l.forward)
	}
	return l.run(ctx)
}

// listener is one `webhooks listen` run.
type listener struct {
	api         *apiClient
	id, secret  string
	forward     string
	out, errOut io.Writer
	http        *http.Client
}

// errListenerGone: the server deleted the listener (expired, or deleted
// by someone): reconnecting cannot help.
var errListenerGone = errors.New("the listener was deleted or has expired on the server")

// run keeps a stream open until ctx ends: a stream that drops is opened
// again (the server retries what it had sent and not had acked).
func (l *listener) run(ctx context.Context) error {
	wait := 500 * time.Millisecond
	for {
		attached, err := l.stream(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errListenerGone):
			return fmt.Errorf("webhooks listen: %w", err)
		}
		if attached {
			wait = 500 * time.Millisecond
		}
		fmt.Fprintf(l.errOut, "switchboard: the stream of %s ended (%v); connecting again in %s\n", l.id, err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// stream holds one connection: it reads deliveries and acks each.
// attached says whether the server accepted it.
func (l *listener) stream(ctx context.Context) (attached bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, res, err := websocket.Dial(dctx, l.api.wsURL("/v1/webhooks/"+l.id+"/listen"),
		&websocket.DialOptions{HTTPHeader: http.Header{"X-API-Key": {l.api.key}}, HTTPClient: &http.Client{}})
	cancel()
	if err != nil {
		if res != nil && res.StatusCode == http.StatusNotFound {
			return false, errListenerGone
		}
		return false, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(16 << 20)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == httpapi.StatusListenerGone {
				return true, errListenerGone
			}
			return true, err
		}
		var f webhook.ListenFrame
		if err := json.Unmarshal(data, &f); err != nil {
			return true, fmt.Errorf("a frame that is not JSON: %w", err)
		}
		switch f.Type {
		case webhook.FrameListening:
			fmt.Fprintf(l.out, "Ready: the stream is attached; deliveries follow.\n")
		case webhook.FrameDelivery:
			ack := l.handle(ctx, f)
			b, _ := json.Marshal(ack)
			if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
				return true, err
			}
		}
	}
}

// handle verifies, prints and forwards one delivery, and says how it went.
func (l *listener) handle(ctx context.Context, f webhook.ListenFrame) webhook.ListenAck {
	ack := webhook.ListenAck{Type: webhook.FrameAck, MessageID: f.MessageID}
	h := http.Header{}
	for k, v := range f.Headers {
		h.Set(k, v)
	}
	line := fmt.Sprintf("%s  %-26s  %s  attempt %d", time.Now().Format("15:04:05"), f.Event, f.MessageID, f.Attempt)
	if err := webhook.Verify([]string{l.secret}, h, []byte(f.Body), time.Now(), 0); err != nil {
		fmt.Fprintf(l.out, "%s  NOT VERIFIED (%v): not forwarded\n", line, err)
		ack.Error = "signature not verified by the listener: " + err.Error()
		return ack
	}
	if l.forward == "" {
		fmt.Fprintf(l.out, "%s  verified\n", line)
		ack.OK = true
		return ack
	}
	status, answer, err := l.post(ctx, h, f.Body)
	ack.Status, ack.Response = status, answer
	switch {
	case err != nil:
		fmt.Fprintf(l.out, "%s  verified  → %s failed: %v\n", line, l.forward, err)
		ack.Error = fmt.Sprintf("forwarding to %s: %v", l.forward, err)
	case status < 200 || status > 299:
		fmt.Fprintf(l.out, "%s  verified  → %d\n", line, status)
		ack.Error = fmt.Sprintf("%s answered %d", l.forward, status)
	default:
		fmt.Fprintf(l.out, "%s  verified  → %d\n", line, status)
		ack.OK = true
	}
	return ack
}

// post forwards a delivery to the local receiver as the server would have
// sent it: the same body and headers.
func (l *listener) post(ctx context.Context, h http.Header, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forward, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header = h.Clone()
	res, err := l.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(res.Body, 2<<10))
	return res.StatusCode, string(bytes.ToValidUTF8(answer, []byte("\uFFFD"))), nil
}

// delete removes the listener when the command ends, whatever ended it.
func (l *listener) delete(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.api.do(dctx, "DELETE", "/v1/webhooks/"+l.id, nil, nil); err != nil {
		fmt.Fprintf(l.errOut, "switchboard: deleting the listener %s: %v (the server deletes it itself within %s)\n", l.id, err, webhook.DefaultListenerIdle)
		return
	}
	fmt.Fprintf(l.out, "Deleted the listener %s.\n", l.id)
}
