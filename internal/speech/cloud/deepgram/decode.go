package deepgram

import (
	"encoding/json"
	"fmt"
	"strings"

	"switchboard/internal/speech"
)

// The server messages of /v1/listen, told apart by "type".
const (
	typeResults       = "Results"
	typeMetadata      = "Metadata"
	typeUtteranceEnd  = "UtteranceEnd"
	typeSpeechStarted = "SpeechStarted"
)

// message is one server message. "channel" is an object in Results and an
// array ([channel, of]) in UtteranceEnd and SpeechStarted, so it is decoded
// by type.
type message struct {
	Type         string          `json:"type"`
	Channel      json.RawMessage `json:"channel"`
	IsFinal      bool            `json:"is_final"`
	SpeechFinal  bool            `json:"speech_final"`
	FromFinalize bool            `json:"from_finalize"`
	Duration     float64         `json:"duration"`
	Start        float64         `json:"start"`

	// Set by decodeMessage from Channel on Results.
	alternatives []alternative
}

type resultsChannel struct {
	Alternatives []alternative `json:"alternatives"`
}

type alternative struct {
	Transcript string  `json:"transcript"`
	Confidence float64 `json:"confidence"`
}

// decodeMessage parses one text frame. Unknown types decode (and are then
// ignored) so new server messages do not break old clients; a frame that
// is not a JSON object, or a Results whose channel is not Deepgram's shape,
// is an error.
func decodeMessage(data []byte) (message, error) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return message{}, fmt.Errorf("server message is not JSON: %v", err)
	}
	if m.Type == typeResults {
		var ch resultsChannel
		if len(m.Channel) == 0 || json.Unmarshal(m.Channel, &ch) != nil {
			return message{}, fmt.Errorf("Results message without a channel object")
		}
		m.alternatives = ch.Alternatives
	}
	return m, nil
}

// segment is a finalized piece of the current utterance (is_final true).
type segment struct {
	text       string
	confidence float64
	duration   float64
}

// assembler turns Deepgram's results into the pipeline's transcripts.
//
// Deepgram finalizes an utterance in pieces: each is_final result covers a
// new span of audio and will not change again; speech_final (its
// endpointing), a from_finalize result (the answer to Finalize) or an
// UtteranceEnd message closes the utterance. The pipeline wants the whole
// utterance: a partial is the finalized pieces so far plus the current
// interim text, and the Final is all the pieces joined.
type assembler struct {
	segments []segment
}

// apply returns the transcript a message produces, if any.
func (a *assembler) apply(m message) (speech.Transcript, bool) {
	switch m.Type {
	case typeResults:
		var alt alternative
		if len(m.alternatives) > 0 {
			alt = m.alternatives[0]
		}
		cur := segment{text: strings.TrimSpace(alt.Transcript), confidence: clamp01(alt.Confidence), duration: max(0, m.Duration)}
		if !m.IsFinal {
			tr := a.join(cur, false)
			return tr, tr.Text != ""
		}
		if cur.text != "" {
			a.segments = append(a.segments, cur)
		}
		switch {
		case m.FromFinalize:
			// The answer to Finish: always a Final, empty when nothing was
			// said, so the pipeline is never left waiting.
			return a.final(), true
		case m.SpeechFinal:
			if len(a.segments) == 0 {
				return speech.Transcript{}, false
			}
			return a.final(), true
		}
		tr := a.join(segment{}, false)
		return tr, tr.Text != ""
	case typeUtteranceEnd:
		if len(a.segments) == 0 {
			return speech.Transcript{}, false
		}
		return a.final(), true
	}
	return speech.Transcript{}, false
}

// final closes the utterance.
func (a *assembler) final() speech.Transcript {
	tr := a.join(segment{}, true)
	a.segments = a.segments[:0]
	return tr
}

// join is the finalized segments plus cur. Confidence is the mean of the
// segments' weighted by their duration (equal weights when none says).
func (a *assembler) join(cur segment, final bool) speech.Transcript {
	var (
		texts        []string
		wsum, weight float64
	)
	add := func(s segment) {
		if s.text == "" {
			return
		}
		texts = append(texts, s.text)
		w := s.duration
		if w <= 0 {
			w = 1
		}
		wsum += w * s.confidence
		weight += w
	}
	for _, s := range a.segments {
		add(s)
	}
	add(cur)
	tr := speech.Transcript{Text: strings.Join(texts, " "), Final: final}
	if weight > 0 {
		tr.Confidence = clamp01(wsum / weight)
	}
	return tr
}

func clamp01(v float64) float64 {
	if !(v >= 0) { // also NaN
		return 0
	}
	return min(v, 1)
}
