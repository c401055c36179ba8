package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/gateway/protocol"
	"switchboard/internal/id"
)

// Pacing of `call web`'s lines (see talk).
const (
	// openingQuiet is how long after session.started an assistant that
	// says nothing is taken to wait for the caller (a model with no
	// firstMessage): the first line is sent then.
	openingQuiet = 3 * time.Second
	// replyWait bounds the wait for the assistant's reply to a line before
	// the next one is sent anyway.
	replyWait = 20 * time.Second
	// settle is how long after an assistant turn the client listens for
	// another before it speaks.
	settle = 400 * time.Millisecond
	// hangupWait bounds the wait for call.ended after a hangup.
	hangupWait = 5 * time.Second
)

// callWeb is `switchboard call web ASSISTANT_ID`: a terminal client of a
// web call. It creates the call with the REST API (POST
// /v1/calls/initiate), joins its gateway websocket as a text session
// (docs/gateway-protocol.md), sends each line read from stdin as
// user.text and prints the assistant's turns and the user's transcript
// lines; end of input hangs up (Ctrl-D), Ctrl-C too. It returns when the
// call ends: nil when its outcome is completed.
func callWeb(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("call web", flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := clientFlags(fs)
	var asst string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		asst, args = args[0], args[1:] // ASSISTANT_ID may come before the flags
	}
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if asst == "" && fs.NArg() == 1 {
		asst = fs.Arg(0)
	} else if fs.NArg() != 0 || asst == "" {
		return errors.New("usage: switchboard call web ASSISTANT_ID [--url URL] (key in SWITCHBOARD_API_KEY)")
	}
	if !id.Valid(id.Assistant, asst) {
		return fmt.Errorf("call web: %q is not an assistant id (asst_…)", asst)
	}
	api, err := client()
	if err != nil {
		return fmt.Errorf("call web: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var created struct {
		CallID  string
		Gateway struct{ URL string }
	}
	if err := api.do(ctx, "POST", "/v1/calls/initiate", map[string]any{"assistantId": asst, "type": "web"}, &created); err != nil {
		return fmt.Errorf("call web: %w", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, _, err := websocket.Dial(dctx, created.Gateway.URL, nil)
	cancel()
	if err != nil {
		return fmt.Errorf("call web: joining %s at %s: %w", created.CallID, created.Gateway.URL, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(4 << 20)
	fmt.Fprintf(stderr, "switchboard: call %s started; type a line and Enter to say it, Ctrl-D to hang up\n", created.CallID)

	lines := make(chan string, 16)
	go readLines(stdin, lines) // ends with stdin; the process exit ends a terminal's read
	t := &talk{conn: conn, out: stdout, errOut: stderr}
	return t.run(ctx, lines)
}

// readLines sends each non-blank line of r, then closes lines.
func readLines(r io.Reader, lines chan<- string) {
	defer close(lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines <- line
		}
	}
}

// talk is one call web session. Lines are sent one at a time, when the
// assistant is listening: after its opening (or openingQuiet of silence
// from an assistant that waits for the caller), then each after the reply
// to the one before (settle after its last turn, or replyWait), so that
// piped input is answered line by line instead of cutting the assistant
// off. The socket is read by one goroutine, which ends when it closes.
type talk struct {
	conn        *websocket.Conn
	out, errOut io.Writer
}

// frame is a server event read, or the error that ended the reads.
type frame struct {
	ev  protocol.ServerEvent
	err error
}

func (t *talk) run(ctx context.Context, lines <-chan string) error {
	frames := make(chan frame, 16)
	rctx, stopReads := context.WithCancel(context.WithoutCancel(ctx))
	defer stopReads()
	go func() { // ends when the socket closes or stopReads
		for {
			_, data, err := t.conn.Read(rctx)
			var f frame
			if err != nil {
				f.err = err
			} else if f.ev, err = protocol.DecodeServer(data); err != nil {
				continue // an event this client does not know: ignored, as the protocol asks
			}
			select {
			case frames <- f:
			case <-rctx.Done():
				return
			}
			if f.err != nil {
				return
			}
		}
	}()

	var (
		ready  bool // the assistant is listening: a line may be sent
		hungUp bool
		eof    bool
		queue  []string
		ended  *protocol.CallEnded
		timer  = time.NewTimer(time.Hour)
	)
	timer.Stop()
	defer timer.Stop()
	send := func(ev protocol.ClientEvent) error {
		b, err := protocol.EncodeClient(ev)
		if err != nil {
			return err
		}
		return t.conn.Write(ctx, websocket.MessageText, b)
	}
	hangup := func() {
		if !hungUp {
			hungUp = true
			_ = send(protocol.Hangup{})
			timer.Reset(hangupWait)
		}
	}
	// next sends the next line if the assistant is listening; at the end
	// of input, once nothing is left to say, it hangs up.
	next := func() error {
		if !ready || hungUp {
			return nil
		}
		if len(queue) > 0 {
			line := queue[0]
			queue, ready = queue[1:], false
			timer.Reset(replyWait)
			return send(protocol.UserText{Text: line})
		}
		if eof {
			hangup()
		}
		return nil
	}
	tru := true
	if err := send(protocol.SessionUpdate{TextOnly: &tru}); err != nil {
		return fmt.Errorf("call web: %w", err)
	}
	interrupted := ctx.Done()
	for {
		var err error
		select {
		case <-interrupted:
			interrupted = nil
			hangup()
		case line, ok := <-lines:
			if !ok {
				lines, eof = nil, true
			} else {
				queue = append(queue, line)
			}
			err = next()
		case <-timer.C:
			if hungUp {
				return errors.New("call web: no call.ended within " + hangupWait.String() + " of the hangup")
			}
			ready = true // the opening, or a reply, is over (or overdue)
			err = next()
		case f := <-frames:
			if f.err != nil {
				if ended != nil {
					return t.result(ended)
				}
				return fmt.Errorf("call web: the connection closed before the call ended: %w", f.err)
			}
			switch ev := f.ev.(type) {
			case protocol.SessionStarted:
				timer.Reset(openingQuiet)
			case protocol.TextDelta:
				if !hungUp {
					ready = false
					timer.Reset(replyWait)
				}
			case protocol.TurnDone:
				text := ev.Text
				if ev.Interrupted {
					text += " [interrupted]"
				}
				fmt.Fprintf(t.out, "assistant: %s\n", text)
				if !hungUp {
					// Another turn may follow at once (a firstMessage, then
					// a flow's opening): listen a moment before speaking.
					timer.Reset(settle)
				}
			case protocol.Transcript:
				if ev.Role == protocol.RoleUser && ev.Final {
					fmt.Fprintf(t.out, "you: %s\n", ev.Text)
				}
			case protocol.ErrorEvent:
				fmt.Fprintf(t.errOut, "switchboard: the gateway says %s: %s\n", ev.Code, ev.Message)
				if !ev.Fatal && !ready && !hungUp {
					timer.Reset(settle) // the line was refused: no reply is coming
				}
			case protocol.CallEnded:
				ended = &ev
				fmt.Fprintf(t.out, "call ended: %s (%s)\n", ev.Outcome, ev.EndedReason)
				timer.Stop()
			}
		}
		if err != nil {
			return fmt.Errorf("call web: %w", err)
		}
	}
}

// result is the command's outcome for the call's end.
func (t *talk) result(ended *protocol.CallEnded) error {
	if ended.Outcome != "completed" {
		return fmt.Errorf("call web: the call ended %s (%s)", ended.Outcome, ended.EndedReason)
	}
	return nil
}
