package local

// Cepstral-mean priors.
//
// pocketsphinx normalizes each frame by subtracting a running cepstral
// mean (live CMN) that it updates at the end of every utterance. A fresh
// decoder starts from the model's -cmninit, which is far from what
// synthetic or telephone speech looks like, so the first utterances of a
// decoder come out as garbage and later ones depend on what it decoded
// before (deps.md §3: "cold start is the main accuracy trap").
//
// So every stream starts from a prior for its input rate, set with
// cmn_live_set before each utterance; within a stream the mean then
// adapts utterance by utterance (adaptCMN) and travels with the stream,
// not the decoder, so a pooled decoder never carries one call's channel
// into another and a stream's results do not depend on which decoder it
// got.
//
// How the priors were made (TestLearnCMNPrior regenerates them):
//
//	go test -tags speech_native -run TestLearnCMNPrior ./internal/speech/local/ -args -learn-cmn
//
// A fresh decoder per rate, starting from the model's -cmninit
// (modelCMNInit), decodes the 8 cmnTrainingSentences (spoken by this
// package's synthesizer running the espeak-ng program, en-us, 150 wpm;
// none is a test sentence) twice
// with the language model, the live mean adapting after each; the mean
// read with cmn_live_get at the end is the prior. For 8 kHz the audio
// went 22050 → 8000 Hz → G.711 μ-law → back → 16000 Hz, as a phone call's
// does. Learned 2026-11-21 with Debian's pocketsphinx 0.8+5prealpha+1-15,
// pocketsphinx-en-us and espeak-ng 1.51.
//
// Measured with and without it (from the model's -cmninit), on speech
// from the espeak-ng program, first utterance of a stream:
//
//	                                     prior    -cmninit
//	booking sentence, 16 kHz             100%     67%
//	booking sentence, 8 kHz μ-law         89%      0% ("what what ah")
//	6 held-out sentences, 16 kHz          35%     26%
//	6 held-out sentences, 8 kHz μ-law     35%      4%
//	hints grammar, 8 kHz μ-law (6 turns)  6/6      5/6
//
// (TestTranscribeBooking, TestTranscribeHeldOut, TestTranscribeYesNo.)
// Priors partway from -cmninit to these (¼, ½, ¾) scored within the
// noise of 6–8 sentences: better at one rate, worse at the other. The full
// estimate is kept because it is what the procedure gives, not a number
// tuned on the test sentences. Priors learned from real microphones or
// phone lines would suit real callers better; a stream's own adaptation
// moves toward its caller after the first utterance either way.

// cmnLen is the length of pocketsphinx's cepstral vector (13 MFCCs).
const cmnLen = 13

// adaptCMN keeps a stream's adapted mean from one utterance to the next;
// false would restart every utterance from the prior.
const adaptCMN = true

// modelCMNInit is the en-us model's own -cmninit (its feat.params), the
// starting point the priors were learned from.
var modelCMNInit = [cmnLen]float32{41.00, -5.29, -0.12, 5.09, 2.48, -4.07, -1.37, -1.78, -5.08, -2.05, -6.45, -1.42, 1.17}

// The priors, by input rate.
var (
	cmnPrior16k = [cmnLen]float32{61.44, 5.12, -6.22, 38.76, -10.22, -0.27, -7.53, -26.49, 3.17, -22.52, 12.24, -7.02, -3.31}
	cmnPrior8k  = [cmnLen]float32{54.83, 28.87, -36.33, 58.80, -20.06, 1.38, -2.01, -28.85, 0.23, -16.93, 4.58, -1.54, -5.31}
)

// priorFor returns a fresh copy of the cepstral-mean prior for audio
// arriving at rate (8 kHz is the telephone band, upsampled to 16 kHz).
func priorFor(rate int) []float32 {
	p := cmnPrior16k
	if rate == 8000 {
		p = cmnPrior8k
	}
	return p[:]
}
