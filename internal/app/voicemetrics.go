package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/call"
	"switchboard/internal/voice"
)

// voiceMetrics exports what voice calls do (voice.Observer): the latency
// of replies, split as on the call record, barge-ins, audio dropped, and
// caller utterances speech-to-text failed.
type voiceMetrics struct {
	stage      *prometheus.HistogramVec
	bargeIns   prometheus.Counter
	dropped    *prometheus.CounterVec
	utterances prometheus.Counter
	calls      prometheus.Counter
}

func newVoiceMetrics(reg prometheus.Registerer) *voiceMetrics {
	m := &voiceMetrics{
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_voice_turn_latency_seconds",
			Help: "Where a spoken reply's response time went, by stage (endpointing, transcriber, model, voice, platform, total).",
			// 1 ms to ~16 s: the platform's share sits at the bottom, totals near a second.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"stage"}),
		bargeIns: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_voice_barge_ins_total", Help: "Times a caller interrupted the assistant's audio."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_voice_frames_dropped_total",
			Help: "20 ms audio frames dropped: in, the caller's (the pipeline fell behind); out, the assistant's (the pacer overflowed).",
		}, []string{"direction"}),
		utterances: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_voice_utterances_dropped_total",
			Help: "Caller utterances lost because speech-to-text gave no result in time or its stream broke; the calls went on.",
		}),
		calls: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_voice_calls_total", Help: "Voice pipelines run to their end."}),
	}
	reg.MustRegister(m.stage, m.bargeIns, m.dropped, m.utterances, m.calls)
	return m
}

func (m *voiceMetrics) Turn(b call.Breakdown) {
	m.stage.WithLabelValues("endpointing").Observe(b.Endpointing.Seconds())
	m.stage.WithLabelValues("transcriber").Observe(b.Transcriber.Seconds())
	m.stage.WithLabelValues("model").Observe(b.Model.Seconds())
	m.stage.WithLabelValues("voice").Observe(b.Voice.Seconds())
	m.stage.WithLabelValues("platform").Observe(b.Platform.Seconds())
	m.stage.WithLabelValues("total").Observe(b.Total.Seconds())
}

func (m *voiceMetrics) BargeIn() { m.bargeIns.Inc() }

func (m *voiceMetrics) Ended(s voice.Stats) {
	m.calls.Inc()
	m.dropped.WithLabelValues("in").Add(float64(s.DroppedIn))
	m.dropped.WithLabelValues("out").Add(float64(s.Pacer.Dropped))
	m.utterances.Add(float64(s.UtterancesDropped))
}
