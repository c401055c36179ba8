// Switchboard web widget: the audio side, run in an AudioWorklet.
//
// This one file is both the AudioWorklet module the widget loads
// (audioWorklet.addModule) and the pure DSP that node's test runner
// imports: the resampler, the PCM16 framing and the jitter buffer have no
// browser dependency, and the two processors are only defined where
// registerProcessor exists. It is a single file on purpose: the widget
// loads it with a version query, so a cached copy can never pair a new
// processor with an old resampler.
//
// The wire format is the gateway's pcm16 at 16 kHz (docs/gateway-protocol.md,
// Audio): signed 16-bit little-endian mono, 20 ms = 320 samples = 640 bytes.

/** The gateway's working rate: 16 kHz costs the server no conversion. */
export const WIRE_RATE = 16000;
/** Samples in one 20 ms frame at WIRE_RATE. */
export const FRAME_SAMPLES = 320;

// besselI0 is the zeroth-order modified Bessel function of the first kind,
// by its power series; the Kaiser window needs it.
function besselI0(x) {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 64; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

/**
 * Resampler converts a stream of float samples from one rate to another by
 * band-limited interpolation: a Kaiser-windowed sinc low-pass, cut off
 * below the lower rate's Nyquist frequency, evaluated at each output
 * instant from a finely tabulated kernel. Downsampling 48 kHz to 16 kHz
 * this way removes everything above about 7.2 kHz before decimating, so a
 * 10 kHz tone does not fold back to 6 kHz as it would if samples were
 * dropped. It works for any pair of rates (44.1 kHz, 48 kHz, 16 kHz…) and
 * keeps its history between calls, so blocks of any size join seamlessly.
 */
export class Resampler {
  /**
   * @param {number} inRate input sample rate, Hz
   * @param {number} outRate output sample rate, Hz
   * @param {{zeroCrossings?: number, rolloff?: number, beta?: number, phases?: number}} [opts]
   *   zeroCrossings: sinc lobes each side (filter length); rolloff: the
   *   cut-off as a share of the lower Nyquist; beta: the Kaiser window's
   *   shape (stopband ≈ 80 dB at 8); phases: table points per input sample.
   */
  constructor(inRate, outRate, opts = {}) {
    if (!(inRate > 0) || !(outRate > 0)) throw new RangeError(`Resampler: rates must be positive, got ${inRate} → ${outRate}`);
    this.inRate = inRate;
    this.outRate = outRate;
    this.step = inRate / outRate; // input samples per output sample
    const zeroCrossings = opts.zeroCrossings ?? 16;
    const rolloff = opts.rolloff ?? 0.9;
    const beta = opts.beta ?? 8;
    this.phases = opts.phases ?? 128;
    // The cut-off in cycles per input sample.
    const fc = 0.5 * Math.min(1, outRate / inRate) * rolloff;
    this.half = zeroCrossings / (2 * fc); // the kernel's half-width, input samples
    const n = Math.ceil(this.half * this.phases) + 2;
    this.table = new Float32Array(n);
    const i0b = besselI0(beta);
    for (let i = 0; i < n; i++) {
      const x = i / this.phases;
      if (x >= this.half) break; // the rest stays 0
      const u = 2 * fc * x;
      const sinc = u === 0 ? 1 : Math.sin(Math.PI * u) / (Math.PI * u);
      const r = x / this.half;
      const w = besselI0(beta * Math.sqrt(1 - r * r)) / i0b;
      this.table[i] = 2 * fc * sinc * w;
    }
    this.reset();
  }

  /** reset forgets the history: the next sample starts a new stream. */
  reset() {
    // The stream starts after `pad` zeros, so the first output sample is
    // centred on the first input sample and the filter adds no delay
    // beyond waiting for its look-ahead.
    const pad = Math.ceil(this.half);
    this.buf = new Float32Array(Math.max(1024, 4 * pad));
    this.len = pad;
    this.t = pad; // where the next output falls, in input samples from buf[0]
  }

  /**
   * process takes the next input samples and returns the output samples
   * they complete (a Float32Array, possibly empty).
   * @param {Float32Array|number[]} input
   * @returns {Float32Array}
   */
  process(input) {
    this._append(input);
    return this._drain();
  }

  /**
   * flush returns what is left of the stream, as if it were followed by
   * silence, then resets: call it when the input ends (a turn's audio).
   */
  flush() {
    const out = this.process(new Float32Array(Math.ceil(this.half) + 1));
    this.reset();
    return out;
  }

  _append(input) {
    const need = this.len + input.length;
    if (need > this.buf.length) {
      const bigger = new Float32Array(Math.max(need, 2 * this.buf.length));
      bigger.set(this.buf.subarray(0, this.len));
      this.buf = bigger;
    }
    this.buf.set(input, this.len);
    this.len = need;
  }

  _drain() {
    const { buf, table, phases, half, step } = this;
    const count = Math.max(0, Math.ceil((this.len - half - this.t) / step) + 1);
    const out = new Float32Array(count);
    let n = 0;
    let t = this.t;
    while (t + half < this.len && n < count) {
      const k0 = Math.max(0, Math.ceil(t - half));
      const k1 = Math.floor(t + half);
      let acc = 0;
      for (let k = k0; k <= k1; k++) {
        const d = Math.abs(t - k) * phases;
        const i = d | 0;
        const f = d - i;
        const h = table[i] + f * (table[i + 1] - table[i]);
        acc += buf[k] * h;
      }
      out[n++] = acc;
      t += step;
    }
    // Drop the input no later output needs.
    const keepFrom = Math.max(0, Math.floor(t - half));
    if (keepFrom > 0) {
      buf.copyWithin(0, keepFrom, this.len);
      this.len -= keepFrom;
      t -= keepFrom;
    }
    this.t = t;
    return n === count ? out : out.subarray(0, n);
  }
}

/**
 * floatToPCM16 encodes samples in [-1, 1] as signed 16-bit little-endian
 * bytes, rounding and clipping.
 * @param {Float32Array} samples
 * @returns {Uint8Array}
 */
export function floatToPCM16(samples) {
  const bytes = new Uint8Array(2 * samples.length);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < samples.length; i++) {
    let s = Math.round(samples[i] * 32767);
    if (s > 32767) s = 32767;
    else if (s < -32768) s = -32768;
    else if (Number.isNaN(s)) s = 0;
    view.setInt16(2 * i, s, true);
  }
  return bytes;
}

/**
 * pcm16ToFloat decodes signed 16-bit little-endian bytes to samples in
 * [-1, 1]. A trailing odd byte is ignored (the server sends whole frames).
 * @param {ArrayBuffer|Uint8Array} data
 * @returns {Float32Array}
 */
export function pcm16ToFloat(data) {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const n = bytes.length >> 1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, 2 * n);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(2 * i, true) / 32768;
  return out;
}

/**
 * Framer cuts a stream of 16 kHz samples into 20 ms PCM16 frames of
 * exactly 640 bytes, the size the gateway's own clients send.
 */
export class Framer {
  constructor(frameSamples = FRAME_SAMPLES) {
    this.frame = new Float32Array(frameSamples);
    this.fill = 0;
  }

  /**
   * push adds samples and returns the frames they complete.
   * @param {Float32Array} samples
   * @returns {Uint8Array[]}
   */
  push(samples) {
    const frames = [];
    let i = 0;
    while (i < samples.length) {
      const take = Math.min(this.frame.length - this.fill, samples.length - i);
      this.frame.set(samples.subarray(i, i + take), this.fill);
      this.fill += take;
      i += take;
      if (this.fill === this.frame.length) {
        frames.push(floatToPCM16(this.frame));
        this.fill = 0;
      }
    }
    return frames;
  }
}

/**
 * JitterBuffer holds the assistant's audio, at the playback rate, between
 * the network and the speaker. Frames arrive in real time with some
 * jitter; playback waits until `target` samples are buffered (or the turn
 * has ended) before it starts, and again after running dry, so a late
 * frame is a short wait rather than a click in every frame. It is bounded:
 * past `capacity` the oldest samples are dropped (and counted), so a stall
 * never turns into a growing delay.
 */
export class JitterBuffer {
  /**
   * @param {{target: number, capacity: number}} size in samples
   */
  constructor({ target, capacity }) {
    if (!(capacity > 0) || !(target >= 0) || target > capacity) {
      throw new RangeError(`JitterBuffer: need 0 ≤ target ≤ capacity, got ${target}, ${capacity}`);
    }
    this.target = target;
    this.ring = new Float32Array(capacity);
    this.clear();
    this.underruns = 0; // times playback ran dry before the end of a turn
    this.dropped = 0; // samples dropped because the buffer was full
  }

  /** capacity is the most samples the buffer holds. */
  get capacity() {
    return this.ring.length;
  }

  /** size is how many samples are buffered. */
  get size() {
    return this.count;
  }

  /** clear drops everything and starts a new turn: buffering, not ended. */
  clear() {
    this.head = 0; // the oldest sample
    this.count = 0;
    this.playing = false;
    this.ended = false;
  }

  /** end says no more samples come for this turn: play out the rest, even below target. */
  end() {
    this.ended = true;
  }

  /**
   * push appends samples; returns how many of the oldest were dropped to
   * make room.
   * @param {Float32Array} samples
   */
  push(samples) {
    const cap = this.ring.length;
    let src = samples;
    let dropped = 0;
    if (src.length > cap) {
      dropped += src.length - cap;
      src = src.subarray(src.length - cap);
    }
    const over = this.count + src.length - cap;
    if (over > 0) {
      this.head = (this.head + over) % cap;
      this.count -= over;
      dropped += over;
    }
    let tail = (this.head + this.count) % cap;
    const first = Math.min(src.length, cap - tail);
    this.ring.set(src.subarray(0, first), tail);
    this.ring.set(src.subarray(first), 0);
    this.count += src.length;
    this.dropped += dropped;
    return dropped;
  }

  /**
   * pull fills out with the next samples to play and silence after them;
   * returns how many real samples it wrote.
   * @param {Float32Array} out
   */
  pull(out) {
    if (!this.playing) {
      if (this.count >= this.target || (this.ended && this.count > 0)) this.playing = true;
      else {
        out.fill(0);
        return 0;
      }
    }
    const cap = this.ring.length;
    const n = Math.min(out.length, this.count);
    const first = Math.min(n, cap - this.head);
    out.set(this.ring.subarray(this.head, this.head + first), 0);
    out.set(this.ring.subarray(0, n - first), first);
    out.fill(0, n);
    this.head = (this.head + n) % cap;
    this.count -= n;
    if (this.count === 0) {
      this.playing = false;
      if (n < out.length && !this.ended) this.underruns++;
    }
    return n;
  }

  /** drained says the turn has ended and every sample of it has been pulled. */
  get drained() {
    return this.ended && this.count === 0;
  }
}

// The processors, only where the AudioWorklet global scope provides them.
if (typeof registerProcessor === "function" && typeof AudioWorkletProcessor === "function") {
  /* global sampleRate, currentTime */
  const QUANTUM = 128;

  // Capture: the microphone at the context's rate in, 20 ms PCM16 frames at
  // 16 kHz out to the main thread, which sends them as binary frames.
  class SwitchboardCapture extends AudioWorkletProcessor {
    constructor() {
      super();
      this.resampler = new Resampler(sampleRate, WIRE_RATE);
      this.framer = new Framer();
      this.muted = false;
      this.silence = new Float32Array(QUANTUM);
      this.mix = new Float32Array(QUANTUM);
      this.peak = 0;
      this.port.onmessage = (e) => {
        if (e.data && e.data.t === "mute") this.muted = !!e.data.muted;
      };
    }

    process(inputs) {
      const channels = inputs[0] || [];
      let x = this.silence;
      if (channels.length === 1) x = channels[0];
      else if (channels.length > 1) {
        // Mix down to mono.
        const n = channels[0].length;
        if (this.mix.length !== n) this.mix = new Float32Array(n);
        this.mix.fill(0);
        for (const ch of channels) for (let i = 0; i < n; i++) this.mix[i] += ch[i] / channels.length;
        x = this.mix;
      }
      // A muted microphone still streams, as silence: the server finds the
      // end of an utterance in the silence after it.
      if (this.muted) x = this.silence.length === x.length ? this.silence : new Float32Array(x.length);
      for (let i = 0; i < x.length; i++) {
        const a = Math.abs(x[i]);
        if (a > this.peak) this.peak = a;
      }
      for (const frame of this.framer.push(this.resampler.process(x))) {
        this.port.postMessage({ t: "frame", pcm: frame.buffer, peak: this.peak }, [frame.buffer]);
        this.peak = 0;
      }
      return true;
    }
  }

  // Playback: the assistant's 16 kHz PCM16 frames in, resampled to the
  // context's rate into a jitter buffer, out to the speaker; reports how
  // much of the turn it has played so that the main thread can send
  // playback.mark.
  class SwitchboardPlayback extends AudioWorkletProcessor {
    constructor(options) {
      super();
      const o = (options && options.processorOptions) || {};
      const targetMs = o.targetMs ?? 80;
      const capacityMs = o.capacityMs ?? 400;
      this.resampler = new Resampler(WIRE_RATE, sampleRate);
      this.jitter = new JitterBuffer({
        target: Math.round((targetMs * sampleRate) / 1000),
        capacity: Math.round((capacityMs * sampleRate) / 1000),
      });
      this.reportEvery = Math.round(sampleRate / 20); // 50 ms
      this.turn = null;
      this.paused = false;
      this.position = 0; // samples of the turn consumed: played or dropped
      this.sinceReport = 0;
      this.peak = 0;
      this.drainedSent = false;
      this.port.onmessage = (e) => this.command(e.data);
    }

    command(m) {
      switch (m && m.t) {
        case "start":
          this.jitter.clear();
          this.resampler.reset();
          this.turn = m.turnId;
          this.paused = false;
          this.position = 0;
          this.sinceReport = 0;
          this.drainedSent = false;
          break;
        case "pcm":
          if (this.turn === null) return;
          this.position += this.jitter.push(this.resampler.process(pcm16ToFloat(m.pcm)));
          break;
        case "done":
          if (this.turn === null) return;
          this.position += this.jitter.push(this.resampler.flush());
          this.jitter.end();
          break;
        case "clear":
          this.jitter.clear();
          this.resampler.reset();
          this.turn = null;
          this.paused = false;
          break;
        case "pause":
          this.paused = true;
          break;
        case "resume":
          this.paused = false;
          break;
      }
    }

    process(_inputs, outputs) {
      const out = outputs[0];
      if (!out || out.length === 0) return true;
      const ch0 = out[0];
      let n = 0;
      if (this.turn !== null && !this.paused) n = this.jitter.pull(ch0);
      else ch0.fill(0);
      for (let c = 1; c < out.length; c++) out[c].set(ch0);
      if (this.turn === null) return true;
      for (let i = 0; i < n; i++) {
        const a = Math.abs(ch0[i]);
        if (a > this.peak) this.peak = a;
      }
      this.position += n;
      this.sinceReport += n;
      const drained = this.jitter.drained;
      if (this.sinceReport >= this.reportEvery || (drained && !this.drainedSent)) {
        this.port.postMessage({
          t: "played",
          turnId: this.turn,
          ms: (1000 * this.position) / sampleRate,
          drained,
          peak: this.peak,
          underruns: this.jitter.underruns,
          dropped: this.jitter.dropped,
        });
        this.sinceReport = 0;
        this.peak = 0;
        if (drained) {
          this.drainedSent = true;
          this.turn = null;
        }
      }
      return true;
    }
  }

  registerProcessor("switchboard-capture", SwitchboardCapture);
  registerProcessor("switchboard-playback", SwitchboardPlayback);
}
