package local

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/speech"
)

// execSynthesizer speaks by running `espeak-ng --stdout`, one process per
// request. It needs no cgo; a sentence costs ~10–20 ms of process start
// and synthesis, far less than the audio lasts.
type execSynthesizer struct {
	program string
	opts    SynthesizerOptions
}

func newExecSynthesizer(opts SynthesizerOptions) (*execSynthesizer, error) {
	path, err := lookEspeak(opts.Program)
	if err != nil {
		return nil, err
	}
	return &execSynthesizer{program: path, opts: opts}, nil
}

// Name implements speech.Synthesizer.
func (s *execSynthesizer) Name() string { return Name }

// readChunk is how much of espeak-ng's output is read, converted and
// handed to out at a time: ~46 ms at 22050 Hz.
const readChunk = 2048

// Synthesize implements speech.Synthesizer. The PCM reaches out as
// espeak-ng writes it; ctx's end kills the process.
func (s *execSynthesizer) Synthesize(ctx context.Context, text string, vo speech.VoiceOptions, out func(pcm []int16) error) error {
	text, err := checkRequest(text, vo)
	if err != nil || text == "" {
		return err
	}
	voice, err := voiceFor(vo, s.opts.Voice)
	if err != nil {
		return err
	}
	// --stdin reads the whole text at once, so newlines do not split it
	// into separate utterances and nothing in it can be taken for an option.
	cmd := exec.CommandContext(ctx, s.program,
		"--stdout", "--stdin", "-b", "1", "-v", voice, "-s", strconv.Itoa(s.opts.Rate))
	cmd.Stdin = strings.NewReader(text)
	stderr := &tailBuffer{max: 512}
	cmd.Stderr = stderr
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("local: espeak-ng: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("local: starting espeak-ng: %w", err)
	}
	streamErr := s.stream(ctx, stdout, vo.SampleRate, out)
	if streamErr != nil {
		// Stop the process now rather than let it write into a full pipe.
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case streamErr != nil:
		return streamErr
	case waitErr != nil:
		return fmt.Errorf("local: espeak-ng -v %s: %w: %s", voice, waitErr, stderr.String())
	}
	return nil
}

// stream reads the WAV on r and hands it to out, resampled.
func (s *execSynthesizer) stream(ctx context.Context, r io.Reader, rate int, out func([]int16) error) error {
	f, err := readWAVHeader(r)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// The process wrote nothing or failed; Wait says why.
			return nil
		}
		return fmt.Errorf("local: espeak-ng output: %w", err)
	}
	if f.Channels != 1 {
		return fmt.Errorf("local: espeak-ng wrote %d channels, want 1", f.Channels)
	}
	limit := min(f.DataSize, int64(f.SampleRate)*2*maxSpeechSecond)
	data := io.LimitReader(r, limit)
	rs := newResampler(f.SampleRate, rate)
	buf := make([]byte, readChunk+1)
	in := make([]int16, 0, readChunk/2)
	var pcm []int16
	carry := 0 // an odd byte left from the previous read
	total := int64(0)
	for {
		n, err := data.Read(buf[carry:readChunk])
		n += carry
		total += int64(n - carry)
		even := n &^ 1
		in = in[:0]
		for i := 0; i < even; i += 2 {
			in = append(in, int16(binary.LittleEndian.Uint16(buf[i:])))
		}
		carry = n - even
		if carry == 1 {
			buf[0] = buf[even]
		}
		eof := err == io.EOF
		if err != nil && !eof {
			return fmt.Errorf("local: reading espeak-ng: %w", err)
		}
		pcm = rs.process(pcm[:0], in)
		if eof {
			pcm = rs.flush(pcm)
		}
		if len(pcm) > 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := out(pcm); err != nil {
				return err
			}
		}
		if eof {
			if total >= limit && limit < f.DataSize {
				return fmt.Errorf("local: espeak-ng spoke for more than %d s; stopped", maxSpeechSecond)
			}
			return nil
		}
	}
}

// tailBuffer keeps the last max bytes written to it: enough of a
// process's stderr to say why it failed.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }
