package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"switchboard/internal/audio"
	"switchboard/internal/speech/cloud"
	"switchboard/internal/speech/cloud/internal/pcm"
	"switchboard/internal/vendorapi"
)

// MaxAudioBytes bounds one synthesized reply (about 20 minutes at 24 kHz):
// far above any spoken answer, low enough that a server streaming forever
// fails.
const MaxAudioBytes = 64 << 20

// readChunk is the most read from the body at once: about 85 ms at 24 kHz.
// A read returns what has arrived, so audio reaches out as it streams.
const readChunk = 4 << 10

// StreamPCM reads e's synthesized reply of PCM16 mono at rate from and hands it
// to out at rate to, chunk by chunk as it arrives. A reply that turns out to
// be a WAV stream (servers that ignore the raw format) is accepted when its
// header says PCM16 mono; its rate then replaces from. JSON, text and
// compressed audio are refused as bad responses.
//
// An error from out is returned as it is (the caller's own); the others
// are *cloud.Error. StreamPCM closes the body.
func StreamPCM(ctx context.Context, e *vendorapi.Endpoint, resp *http.Response, from, to int, out func([]int16) error) error {
	defer resp.Body.Close()
	if err := checkAudioType(e, resp); err != nil {
		return err
	}
	var (
		dec      pcm.Decoder
		rs       *audio.Resampler
		head     []byte // the first bytes, until we know whether they are a WAV header
		decided  bool
		total    int
		buf      = make([]byte, readChunk)
		samples  []int16
		resample = func(in []int16, flush bool) []int16 {
			if rs == nil {
				rs = audio.NewResampler(from, to)
			}
			o := rs.Process(nil, in)
			if flush {
				o = rs.Flush(o)
			}
			return o
		}
	)
	emit := func(p []byte, flush bool) error {
		samples = dec.Decode(samples[:0], p)
		o := resample(samples, flush)
		if len(o) == 0 {
			return nil
		}
		return out(o)
	}
	for {
		n, rerr := resp.Body.Read(buf)
		total += n
		if total > MaxAudioBytes {
			return &cloud.Error{Provider: e.Provider, Code: cloud.CodeTooLarge, Message: "audio reply over 64 MiB"}
		}
		p := buf[:n]
		if !decided {
			head = append(head, p...)
			p = nil
			switch {
			case len(head) < 4 && rerr == nil:
			case bytes.HasPrefix(head, []byte("RIFF")):
				rate, start, err := pcm.ParseWAVHeader(head)
				if errors.Is(err, pcm.ErrShortHeader) && rerr == nil {
					break
				}
				if err != nil {
					return e.BadResponse("reply is a WAV stream the client cannot play: %v", err)
				}
				from, p, decided = rate, head[start:], true
			default:
				p, decided = head, true
			}
		}
		eof := errors.Is(rerr, io.EOF)
		if len(p) > 0 || eof {
			if err := emit(p, eof); err != nil {
				return err
			}
		}
		if eof {
			return nil
		}
		if rerr != nil {
			return e.Failure(ctx, cloud.CodeNetwork, true, rerr)
		}
		if err := ctx.Err(); err != nil {
			return e.CtxError(err)
		}
	}
}

// checkAudioType refuses a 2xx reply that is not audio the client can play.
func checkAudioType(e *vendorapi.Endpoint, resp *http.Response) error {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil
	}
	switch {
	case mt == "application/json" || strings.HasPrefix(mt, "text/"):
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, vendorapi.MaxErrorBody))
		if code, msg, ok := e.Parse(raw); ok {
			ce := e.BadResponse("%s", msg)
			if code != "" {
				ce.Code = code
			}
			return ce
		}
		if text := bytes.TrimSpace(raw); utf8.Valid(text) && len(text) > 0 {
			return e.BadResponse("reply is %s, not audio: %s", mt, text)
		}
		return e.BadResponse("reply is %s, not audio", mt)
	case mt == "audio/mpeg", mt == "audio/mp3", mt == "audio/ogg", mt == "audio/opus",
		mt == "audio/aac", mt == "audio/flac", mt == "audio/webm", mt == "audio/mp4":
		return e.BadResponse("reply is %s; the client asked for raw PCM", mt)
	}
	return nil
}
