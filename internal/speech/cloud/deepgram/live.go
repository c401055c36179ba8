package deepgram

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud"
	"switchboard/internal/speech/cloud/internal/pcm"
	"switchboard/internal/speech/cloud/internal/wire"
	"switchboard/internal/vendorapi"
)

// Defaults of the Transcriber's tunables.
const (
	// DefaultModel is used when neither the options nor the Transcriber name one.
	DefaultModel = "nova-3"
	// DefaultKeepAlive is how long the stream may go without audio before it
	// sends a KeepAlive; Deepgram closes a socket after 10 s of nothing.
	DefaultKeepAlive = 5 * time.Second
	// DefaultQueueFrames bounds the audio waiting for the socket: 50 writes
	// are a second of 20 ms frames.
	DefaultQueueFrames = 50
	// DefaultWriteTimeout is how long one frame may take to be written
	// before the socket is judged stalled and the stream fails.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultCloseTimeout is how long Close waits, after CloseStream, for
	// Deepgram to send its last results and close the socket.
	DefaultCloseTimeout = 2 * time.Second
	// utteranceEndMs makes Deepgram send UtteranceEnd after a second
	// without words, which closes an utterance whose speech_final never
	// came (noise keeps its endpointing from firing).
	utteranceEndMs = 1000
	// maxHints bounds the keyterms sent in the URL.
	maxHints = 50
	// resultsBuffer bounds the transcripts waiting for the pipeline.
	resultsBuffer = 16
	// maxMessage bounds one server message (a Results with its words).
	maxMessage = 1 << 20
)

// The client's control messages (text frames).
var (
	msgKeepAlive   = []byte(`{"type":"KeepAlive"}`)
	msgFinalize    = []byte(`{"type":"Finalize"}`)
	msgCloseStream = []byte(`{"type":"CloseStream"}`)
)

// Transcriber opens live recognition streams on Deepgram. Set its fields,
// if at all, before the first Start.
type Transcriber struct {
	// Model is used when TranscribeOptions.Model is empty ("" = DefaultModel).
	Model string
	// KeepAlive, QueueFrames, WriteTimeout and CloseTimeout default to the
	// Default* constants when zero.
	KeepAlive    time.Duration
	QueueFrames  int
	WriteTimeout time.Duration
	CloseTimeout time.Duration

	base   string
	config error
	ep     vendorapi.Endpoint
}

var _ speech.Transcriber = (*Transcriber)(nil)

// NewTranscriber returns a Transcriber for baseURL ("" = DefaultBaseURL).
// apiKey is sent when not empty (a self-hosted Deepgram may need none). hc
// nil means http.DefaultClient; its Timeout, if any, bounds only the
// handshake.
func NewTranscriber(baseURL, apiKey string, hc *http.Client) *Transcriber {
	t := &Transcriber{ep: newEndpoint(apiKey, hc)}
	t.base, t.config = wire.BaseURL(baseURL, DefaultBaseURL)
	return t
}

// Name implements speech.Transcriber.
func (t *Transcriber) Name() string { return Provider }

// Start implements speech.Transcriber: it dials the socket (ctx bounds the
// handshake and the whole stream) and returns a *Stream.
func (t *Transcriber) Start(ctx context.Context, opts speech.TranscribeOptions) (speech.TranscribeStream, error) {
	if t.config != nil {
		return nil, t.ep.Config("%v", t.config)
	}
	if opts.SampleRate <= 0 {
		return nil, t.ep.Invalid("sampleRate: must be positive, got %d", opts.SampleRate)
	}
	u := t.listenURL(opts)
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: t.ep.HTTP, HTTPHeader: t.ep.Header.Clone()})
	if err != nil {
		return nil, t.dialError(ctx, resp, err)
	}
	conn.SetReadLimit(maxMessage)
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Stream{
		conn:         conn,
		cancel:       cancel,
		keepAlive:    or(t.KeepAlive, DefaultKeepAlive),
		writeTimeout: or(t.WriteTimeout, DefaultWriteTimeout),
		closeTimeout: or(t.CloseTimeout, DefaultCloseTimeout),
		ep:           &t.ep,
		audio:        make(chan []byte, or(t.QueueFrames, DefaultQueueFrames)),
		control:      make(chan []byte, 4),
		closeReq:     make(chan struct{}),
		results:      make(chan speech.Transcript, resultsBuffer),
		writerDone:   make(chan struct{}),
		done:         make(chan struct{}),
	}
	go s.write(sctx)
	go s.run(sctx)
	return s, nil
}

// listenURL is the socket URL: raw PCM16 mono at the stream's rate, interim
// results (partials), punctuation, and UtteranceEnd messages.
func (t *Transcriber) listenURL(opts speech.TranscribeOptions) string {
	model := opts.Model
	if model == "" {
		model = t.Model
	}
	if model == "" {
		model = DefaultModel
	}
	q := url.Values{}
	q.Set("model", model)
	q.Set("encoding", "linear16")
	q.Set("sample_rate", strconv.Itoa(opts.SampleRate))
	q.Set("channels", "1")
	q.Set("interim_results", "true")
	q.Set("punctuate", "true")
	q.Set("utterance_end_ms", strconv.Itoa(utteranceEndMs))
	if opts.Language != "" {
		q.Set("language", opts.Language)
	}
	// Hints boost the expected answers: keyterm prompting on Nova-3,
	// keywords on the older models.
	param := "keywords"
	if strings.HasPrefix(model, "nova-3") {
		param = "keyterm"
	}
	n := 0
	for _, h := range opts.Hints {
		if h = strings.TrimSpace(h); h != "" && n < maxHints {
			q.Add(param, h)
			n++
		}
	}
	return t.base + "/listen?" + q.Encode()
}

// dialError classifies a failed handshake: a refused upgrade by its HTTP
// status (Deepgram explains it in the dg-error header and the body).
func (t *Transcriber) dialError(ctx context.Context, resp *http.Response, err error) error {
	if ctx.Err() != nil || resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return t.ep.Failure(ctx, cloud.CodeNetwork, true, err)
	}
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, vendorapi.MaxErrorBody))
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte(resp.Header.Get("dg-error"))
	}
	return t.ep.StatusError(resp.StatusCode, resp.Header, body, time.Now())
}

// Stream is one live recognition stream. Two goroutines own the socket: the
// writer (audio, control messages, keepalives) and the reader (results),
// which ends the stream. Both stop on Close, on the context, or on the
// first failure.
type Stream struct {
	conn         *websocket.Conn
	cancel       context.CancelCauseFunc
	keepAlive    time.Duration
	writeTimeout time.Duration
	closeTimeout time.Duration
	ep           *vendorapi.Endpoint

	audio      chan []byte // bounded; Write drops the oldest when full
	control    chan []byte
	closeReq   chan struct{}
	closeOnce  sync.Once
	closing    atomic.Bool
	results    chan speech.Transcript
	writerDone chan struct{}
	done       chan struct{} // closed when the stream is over, just before results

	droppedFrames  atomic.Uint64
	droppedResults atomic.Uint64

	mu  sync.Mutex
	err error
}

var _ speech.TranscribeStream = (*Stream)(nil)

// errCloseRequested is the cause with which Close cancels the stream.
var errCloseRequested = errors.New("deepgram: stream closed by the client")

// Write implements speech.TranscribeStream: it queues the audio for the
// socket and never blocks; when the socket falls behind, the oldest queued
// frame is dropped and counted (Dropped).
func (s *Stream) Write(samples []int16) error {
	if err := s.ended(); err != nil {
		return err
	}
	if len(samples) == 0 {
		return nil // an empty binary frame would make Deepgram close the stream
	}
	frame := pcm.AppendBytes(make([]byte, 0, 2*len(samples)), samples)
	for {
		select {
		case s.audio <- frame:
			return nil
		default:
		}
		select {
		case <-s.audio:
			s.droppedFrames.Add(1)
		default:
		}
	}
}

// Finish implements speech.TranscribeStream: it sends Finalize after the
// audio already written, and Deepgram answers with the utterance's final
// result (from_finalize), which Results delivers as a Final transcript.
func (s *Stream) Finish() error {
	if err := s.ended(); err != nil {
		return err
	}
	select {
	case s.control <- msgFinalize:
		return nil
	case <-s.done:
		return s.endErr()
	}
}

// Results implements speech.TranscribeStream. Partials that find the
// channel full are dropped (a newer one follows) and counted; finals wait.
func (s *Stream) Results() <-chan speech.Transcript { return s.results }

// Err implements speech.TranscribeStream: why Results closed; nil while it
// is open and after Close, unless the stream had already failed.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close implements speech.TranscribeStream: it sends CloseStream after the
// queued audio, waits (CloseTimeout at most) for Deepgram's last results
// and its close, then releases the socket. Results still arriving are
// delivered only if there is room for them.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		close(s.closeReq)
		timer := time.NewTimer(s.closeTimeout)
		defer timer.Stop()
		select {
		case <-s.done:
		case <-timer.C:
			s.cancel(errCloseRequested)
		}
	})
	<-s.done
	return nil
}

// Dropped is how many audio frames Write dropped because the socket fell
// behind.
func (s *Stream) Dropped() uint64 { return s.droppedFrames.Load() }

// DroppedResults is how many transcripts were dropped because the pipeline
// did not read Results in time: partials, and results arriving during Close.
func (s *Stream) DroppedResults() uint64 { return s.droppedResults.Load() }

// ended returns the error for using a stream that is closing or over.
func (s *Stream) ended() error {
	select {
	case <-s.done:
		return s.endErr()
	default:
	}
	if s.closing.Load() {
		return cloud.ErrStreamClosed
	}
	return nil
}

func (s *Stream) endErr() error {
	if err := s.Err(); err != nil {
		return err
	}
	return cloud.ErrStreamClosed
}

// write owns the socket's writes: audio in order, a control message after
// the audio queued before it, a KeepAlive after KeepAlive without audio,
// and CloseStream when Close asks.
func (s *Stream) write(ctx context.Context) {
	defer close(s.writerDone)
	idle := time.NewTimer(s.keepAlive)
	defer idle.Stop()
	send := func(typ websocket.MessageType, p []byte) bool {
		wctx, cancel := context.WithTimeout(ctx, s.writeTimeout)
		err := s.conn.Write(wctx, typ, p)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				// A stalled or broken socket: the stream fails with it.
				s.cancel(s.ep.Wrap(cloud.CodeNetwork, true, errors.Join(errors.New("writing to the socket"), err)))
			}
			return false
		}
		return true
	}
	drain := func() bool {
		for {
			select {
			case frame := <-s.audio:
				if !send(websocket.MessageBinary, frame) {
					return false
				}
			default:
				return true
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case frame := <-s.audio:
			if !send(websocket.MessageBinary, frame) {
				return
			}
			idle.Reset(s.keepAlive)
		case msg := <-s.control:
			if !drain() || !send(websocket.MessageText, msg) {
				return
			}
		case <-idle.C:
			if !send(websocket.MessageText, msgKeepAlive) {
				return
			}
			idle.Reset(s.keepAlive)
		case <-s.closeReq:
			if drain() {
				send(websocket.MessageText, msgCloseStream)
			}
			return
		}
	}
}

// run reads results until the socket ends, then stops the writer, releases
// the socket and closes Results with the reason.
func (s *Stream) run(ctx context.Context) {
	err := s.read(ctx)
	s.cancel(errCloseRequested) // stops the writer; no-op if already canceled
	<-s.writerDone
	s.conn.CloseNow()
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.done) // before results: whoever sees Results closed sees the stream over
	close(s.results)
}

// read delivers transcripts until the socket ends, and says why it ended:
// nil when the client closed it.
func (s *Stream) read(ctx context.Context) error {
	var asm assembler
	for {
		typ, data, err := s.conn.Read(ctx)
		if err != nil {
			err := s.readError(ctx, err)
			if err == nil && len(asm.segments) > 0 {
				// Closed by the client: what Deepgram finalized in answer
				// to CloseStream ends the utterance.
				s.deliver(ctx, asm.final())
			}
			return err
		}
		if typ != websocket.MessageText {
			continue // /v1/listen sends only JSON
		}
		m, err := decodeMessage(data)
		if err != nil {
			return s.ep.BadResponse("%v", err)
		}
		if tr, ok := asm.apply(m); ok {
			s.deliver(ctx, tr)
		}
	}
}

// deliver hands a transcript to the pipeline. A partial never waits (the
// next one supersedes it); a final waits for room, unless the stream is
// closing and nobody may be reading.
func (s *Stream) deliver(ctx context.Context, tr speech.Transcript) {
	if !tr.Final || s.closing.Load() {
		select {
		case s.results <- tr:
		default:
			s.droppedResults.Add(1)
		}
		return
	}
	select {
	case s.results <- tr:
	case <-ctx.Done():
	}
}

// readError classifies why the socket ended.
func (s *Stream) readError(ctx context.Context, err error) error {
	if s.closing.Load() {
		// Closed by the client: whatever ended the socket since (the
		// answer to CloseStream, Close's timeout, a late failure), Err
		// is nil after Close.
		return nil
	}
	// A close frame is the server's own word, even if the writer (failing
	// on the same closed socket) has canceled the stream meanwhile.
	var closeErr websocket.CloseError
	if errors.As(err, &closeErr) {
		return s.closeError(closeErr)
	}
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		var ce *cloud.Error
		if errors.As(cause, &ce) {
			return ce // the writer failed first
		}
		return s.ep.CtxError(ctx.Err())
	}
	return s.ep.Wrap(cloud.CodeNetwork, true, errors.Join(errors.New("socket dropped"), err))
}

// closeError classifies a close frame the client did not ask for. Deepgram
// puts its error code in the reason: NET-0000 and NET-0001 (timeouts on
// either side) are worth a retry; DATA-0000 (audio it cannot decode) is
// not, nor are protocol and policy errors.
func (s *Stream) closeError(ce websocket.CloseError) *cloud.Error {
	reason := strings.TrimSpace(ce.Reason)
	e := &cloud.Error{Provider: Provider, Status: int(ce.Code), Code: cloud.CodeClosed, Retryable: true}
	if code, _, _ := strings.Cut(reason, " "); strings.HasPrefix(code, "NET-") || strings.HasPrefix(code, "DATA-") {
		e.Code = code
	}
	switch {
	case strings.HasPrefix(e.Code, "DATA-"),
		ce.Code == websocket.StatusProtocolError, ce.Code == websocket.StatusUnsupportedData,
		ce.Code == websocket.StatusInvalidFramePayloadData, ce.Code == websocket.StatusPolicyViolation,
		ce.Code == websocket.StatusMessageTooBig:
		e.Retryable = false
	}
	e.Message = "socket closed by the server"
	if reason != "" {
		e.Message += ": " + s.ep.Clean(reason)
	}
	return e
}

// or is v when positive, else def.
func or[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
