package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud"
	"switchboard/internal/speech/cloud/internal/pcm"
	"switchboard/internal/speech/cloud/internal/wire"
	"switchboard/internal/vendorapi"
)

// Defaults of the Transcriber's tunables.
const (
	// DefaultTranscribeModel is used when neither the options nor the
	// Transcriber name one. Local servers map or ignore it.
	DefaultTranscribeModel = "whisper-1"
	// DefaultMaxUtterance bounds the audio buffered for one utterance;
	// past it the oldest audio is dropped and counted.
	DefaultMaxUtterance = 60 * time.Second
	// DefaultTimeout bounds one upload and its answer.
	DefaultTimeout = 30 * time.Second
	// minUpload is the shortest utterance uploaded: OpenAI refuses audio
	// under 0.1 s, so a shorter one is answered "" without a request.
	minUpload = 100 * time.Millisecond
	// pendingUploads bounds the utterances waiting to be uploaded.
	pendingUploads = 4
	// maxReply bounds a transcription reply.
	maxReply = 1 << 20
	// maxPrompt bounds the prompt built from the hints (Whisper reads
	// about 224 tokens of it).
	maxPrompt = 800
)

// Transcriber transcribes whole utterances by upload. Set its fields, if at
// all, before the first Start.
type Transcriber struct {
	// Model is used when TranscribeOptions.Model is empty ("" =
	// DefaultTranscribeModel).
	Model string
	// MaxUtterance and Timeout default to the Default* constants when zero.
	MaxUtterance time.Duration
	Timeout      time.Duration

	url    string
	config error
	ep     vendorapi.Endpoint
}

var _ speech.Transcriber = (*Transcriber)(nil)

// NewTranscriber returns a Transcriber for baseURL ("" = DefaultBaseURL):
// OpenAI, or a local whisper.cpp or faster-whisper server. hc nil means
// http.DefaultClient.
func NewTranscriber(baseURL, apiKey string, hc *http.Client) *Transcriber {
	t := &Transcriber{ep: newEndpoint(apiKey, hc)}
	base, err := wire.BaseURL(baseURL, DefaultBaseURL)
	t.url, t.config = base+"/audio/transcriptions", err
	return t
}

// Name implements speech.Transcriber.
func (t *Transcriber) Name() string { return Provider }

// Start implements speech.Transcriber. Nothing is sent until Finish: the
// stream buffers the utterance, uploads it as a WAV file when it ends and
// delivers one Final transcript; there are no partials. ctx bounds the
// stream and its uploads.
func (t *Transcriber) Start(ctx context.Context, opts speech.TranscribeOptions) (speech.TranscribeStream, error) {
	if t.config != nil {
		return nil, t.ep.Config("%v", t.config)
	}
	if opts.SampleRate <= 0 {
		return nil, t.ep.Invalid("sampleRate: must be positive, got %d", opts.SampleRate)
	}
	maxUtt := t.MaxUtterance
	if maxUtt <= 0 {
		maxUtt = DefaultMaxUtterance
	}
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Stream{
		t:       t,
		opts:    opts,
		buf:     ring{max: max(1, int(int64(opts.SampleRate)*int64(maxUtt)/int64(time.Second)))},
		uploads: make(chan []int16, pendingUploads),
		results: make(chan speech.Transcript, pendingUploads),
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go s.run(sctx)
	return s, nil
}

// Stream is one recognition stream: Write buffers, Finish hands the
// utterance to the stream's uploader goroutine, which uploads utterances in
// order and delivers their finals. A failed upload ends the stream.
type Stream struct {
	t    *Transcriber
	opts speech.TranscribeOptions

	mu      sync.Mutex
	buf     ring
	dropped atomic.Uint64

	uploads   chan []int16
	results   chan speech.Transcript
	cancel    context.CancelCauseFunc
	closing   atomic.Bool
	closeOnce sync.Once
	done      chan struct{}
	err       error // set before done is closed
}

var _ speech.TranscribeStream = (*Stream)(nil)

var errCloseRequested = errors.New("openai: stream closed by the client")

// Write implements speech.TranscribeStream: it appends to the utterance,
// dropping (and counting) the oldest audio past MaxUtterance.
func (s *Stream) Write(samples []int16) error {
	if err := s.ended(); err != nil {
		return err
	}
	s.mu.Lock()
	n := s.buf.write(samples)
	s.mu.Unlock()
	s.dropped.Add(uint64(n))
	return nil
}

// Finish implements speech.TranscribeStream: the utterance so far is
// uploaded (after any still pending) and its Final arrives on Results.
// It waits only if pendingUploads utterances are already queued.
func (s *Stream) Finish() error {
	if err := s.ended(); err != nil {
		return err
	}
	s.mu.Lock()
	audio := s.buf.take()
	s.mu.Unlock()
	select {
	case s.uploads <- audio:
		return nil
	case <-s.done:
		return s.endErr()
	}
}

// Results implements speech.TranscribeStream.
func (s *Stream) Results() <-chan speech.Transcript { return s.results }

// Err implements speech.TranscribeStream.
func (s *Stream) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close implements speech.TranscribeStream. Uploads still pending or in
// flight are abandoned.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.cancel(errCloseRequested)
	})
	<-s.done
	return nil
}

// Dropped is how many samples Write dropped because an utterance outgrew
// MaxUtterance.
func (s *Stream) Dropped() uint64 { return s.dropped.Load() }

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
	if s.err != nil {
		return s.err
	}
	return cloud.ErrStreamClosed
}

// run uploads utterances in order until the stream ends.
func (s *Stream) run(ctx context.Context) {
	defer func() {
		close(s.done) // before results: whoever sees Results closed sees the stream over
		close(s.results)
	}()
	for {
		select {
		case <-ctx.Done():
			s.err = s.ctxErr(ctx)
			return
		case audio := <-s.uploads:
			tr, err := s.t.transcribe(ctx, s.opts, audio)
			if err != nil {
				if ctx.Err() != nil {
					err = s.ctxErr(ctx)
				}
				s.err = err
				s.cancel(err)
				return
			}
			select {
			case s.results <- tr:
			case <-ctx.Done():
				s.err = s.ctxErr(ctx)
				return
			}
		}
	}
}

// ctxErr is nil when Close ended the stream, else the context's error.
func (s *Stream) ctxErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errCloseRequested) {
		return nil
	}
	return s.t.ep.CtxError(ctx.Err())
}

// transcribe uploads one utterance.
func (t *Transcriber) transcribe(ctx context.Context, opts speech.TranscribeOptions, audio []int16) (speech.Transcript, error) {
	if time.Duration(len(audio))*time.Second < minUpload*time.Duration(opts.SampleRate) {
		return speech.Transcript{Final: true}, nil
	}
	body, contentType := t.form(opts, audio)
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := t.ep.Post(rctx, t.url, contentType, body)
	if err != nil {
		return speech.Transcript{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return speech.Transcript{}, t.ep.Failure(rctx, cloud.CodeNetwork, true, err)
	}
	if len(raw) > maxReply {
		return speech.Transcript{}, &cloud.Error{Provider: Provider, Code: cloud.CodeTooLarge, Message: "transcription reply over 1 MiB"}
	}
	text, err := decodeTranscription(resp.Header.Get("Content-Type"), raw)
	if err != nil {
		return speech.Transcript{}, t.ep.BadResponse("%v", err)
	}
	return speech.Transcript{Text: text, Final: true}, nil
}

// form is the multipart upload: the model, the language (ISO-639-1, when the
// options' tag has one), response_format json, the hints as the prompt, and
// the utterance as a PCM16 mono WAV file.
func (t *Transcriber) form(opts speech.TranscribeOptions, audio []int16) ([]byte, string) {
	var b bytes.Buffer
	b.Grow(pcm.WAVHeaderSize + 2*len(audio) + 1024)
	mw := multipart.NewWriter(&b)
	model := opts.Model
	if model == "" {
		model = t.Model
	}
	if model == "" {
		model = DefaultTranscribeModel
	}
	// Every write below goes into b, a bytes.Buffer, and cannot fail.
	field := func(name, value string) { _ = mw.WriteField(name, value) }
	field("model", model)
	if lang := iso6391(opts.Language); lang != "" {
		field("language", lang)
	}
	field("response_format", "json")
	if prompt := hintsPrompt(opts.Hints); prompt != "" {
		field("prompt", prompt)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="utterance.wav"`)
	h.Set("Content-Type", "audio/wav")
	fw, _ := mw.CreatePart(h)
	_, _ = fw.Write(pcm.WAVHeader(opts.SampleRate, len(audio)))
	_, _ = fw.Write(pcm.AppendBytes(make([]byte, 0, 2*len(audio)), audio))
	mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

// iso6391 is the two-letter language of a BCP 47 tag ("en-US" → "en"), or
// "" (the server detects the language) when the tag has none.
func iso6391(tag string) string {
	lang, _, _ := strings.Cut(strings.TrimSpace(tag), "-")
	lang = strings.ToLower(lang)
	if len(lang) != 2 || lang[0] < 'a' || lang[0] > 'z' || lang[1] < 'a' || lang[1] > 'z' {
		return ""
	}
	return lang
}

// hintsPrompt lists the expected answers as Whisper's prompt, which biases
// it toward their spelling.
func hintsPrompt(hints []string) string {
	var parts []string
	n := 0
	for _, h := range hints {
		h = strings.TrimSpace(h)
		if h == "" || slices.Contains(parts, h) {
			continue
		}
		if n+len(h)+2 > maxPrompt {
			break
		}
		parts = append(parts, h)
		n += len(h) + 2
	}
	return strings.Join(parts, ", ")
}

// decodeTranscription reads {"text": …}; a server that ignored
// response_format and answered plain text is taken at its word.
func decodeTranscription(contentType string, raw []byte) (string, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if strings.HasPrefix(mt, "text/") {
		return strings.TrimSpace(string(raw)), nil
	}
	var reply struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return "", errors.New("transcription reply is not JSON")
	}
	if reply.Text == nil {
		return "", errors.New(`transcription reply has no "text"`)
	}
	return strings.TrimSpace(*reply.Text), nil
}

// ring buffers an utterance up to max samples, overwriting the oldest past
// that. It grows as audio arrives, so a short utterance costs little.
type ring struct {
	buf   []int16
	start int // oldest sample, once full
	max   int
}

// write appends p and returns how many samples it dropped.
func (r *ring) write(p []int16) int {
	dropped := 0
	if len(p) > r.max {
		dropped += len(p) - r.max
		p = p[len(p)-r.max:]
	}
	if room := r.max - len(r.buf); room > 0 {
		k := min(room, len(p))
		r.buf = append(r.buf, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(r.buf[r.start:], p)
		dropped += k
		r.start = (r.start + k) % r.max
		p = p[k:]
	}
	return dropped
}

// take returns the utterance in order and empties the buffer.
func (r *ring) take() []int16 {
	out := make([]int16, 0, len(r.buf))
	out = append(append(out, r.buf[r.start:]...), r.buf[:r.start]...)
	r.buf, r.start = r.buf[:0], 0
	return out
}
