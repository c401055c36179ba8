// Unit tests of the widget's pure audio code: node --test web/widget/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { Resampler, JitterBuffer, Framer, floatToPCM16, pcm16ToFloat, FRAME_SAMPLES } from "../audio-worklet.mjs";

function tone(freq, rate, seconds, amp = 0.5) {
  const n = Math.round(rate * seconds);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = amp * Math.sin((2 * Math.PI * freq * i) / rate);
  return x;
}

// runBlocks resamples x in blocks of size, as the worklet does (128 frames a quantum).
function runBlocks(rs, x, size) {
  const parts = [];
  for (let i = 0; i < x.length; i += size) parts.push(rs.process(x.subarray(i, i + size)));
  parts.push(rs.flush());
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

// steady drops the edges, where the filter sees the silence around the tone.
const steady = (y, edge) => y.subarray(edge, y.length - edge);
const rms = (y) => Math.sqrt(y.reduce((s, v) => s + v * v, 0) / y.length);

// dominant returns the frequency (Hz) of the strongest DFT bin of y between lo and hi, 5 Hz apart.
function dominant(y, rate, lo, hi) {
  let best = 0;
  let bestMag = -1;
  for (let f = lo; f <= hi; f += 5) {
    let re = 0;
    let im = 0;
    for (let i = 0; i < y.length; i++) {
      const a = (2 * Math.PI * f * i) / rate;
      re += y[i] * Math.cos(a);
      im -= y[i] * Math.sin(a);
    }
    const mag = Math.hypot(re, im);
    if (mag > bestMag) {
      bestMag = mag;
      best = f;
    }
  }
  return best;
}

test("Resampler: a 1 kHz tone at 48 kHz comes out at 16 kHz, same frequency and amplitude", () => {
  const y = runBlocks(new Resampler(48000, 16000), tone(1000, 48000, 1), 128);
  assert.ok(Math.abs(y.length - 16000) <= 2, `1 s at 48 kHz gave ${y.length} samples at 16 kHz, want 16000`);
  const s = steady(y, 200);
  const amp = rms(s) * Math.SQRT2;
  assert.ok(Math.abs(amp - 0.5) < 0.005, `amplitude ${amp.toFixed(4)}, want 0.5 ± 1%`);
  const f = dominant(s.subarray(0, 4000), 16000, 500, 7000);
  assert.equal(f, 1000, `dominant frequency ${f} Hz, want 1000`);
  // Zero crossings agree, to the hertz.
  let crossings = 0;
  for (let i = 1; i < s.length; i++) if ((s[i - 1] < 0) !== (s[i] < 0)) crossings++;
  const byCrossings = crossings / 2 / (s.length / 16000);
  assert.ok(Math.abs(byCrossings - 1000) < 2, `zero crossings say ${byCrossings} Hz`);
});

test("Resampler: a 10 kHz tone at 48 kHz does not alias into 16 kHz (sample dropping would)", () => {
  const x = tone(10000, 48000, 0.5);
  const y = steady(runBlocks(new Resampler(48000, 16000), x, 128), 200);
  const level = rms(y) * Math.SQRT2;
  // Dropping two samples of three folds it to 6 kHz at full amplitude.
  const dropped = new Float32Array(Math.floor(x.length / 3)).map((_, i) => x[3 * i]);
  const naive = rms(steady(dropped, 200)) * Math.SQRT2;
  assert.ok(naive > 0.4, `sample dropping left ${naive}: the test tone is wrong`);
  const db = 20 * Math.log10(level / 0.5);
  assert.ok(db < -60, `10 kHz leaked through at ${db.toFixed(1)} dB, want below -60 dB`);
});

test("Resampler: 44.1 kHz (a fractional ratio) to 16 kHz keeps a 3 kHz tone", () => {
  const y = steady(runBlocks(new Resampler(44100, 16000), tone(3000, 44100, 0.5, 0.8), 128), 200);
  assert.ok(Math.abs(rms(y) * Math.SQRT2 - 0.8) < 0.01, `amplitude ${rms(y) * Math.SQRT2}`);
  assert.equal(dominant(y.subarray(0, 3000), 16000, 500, 7900), 3000);
});

test("Resampler: 16 kHz up to 48 kHz for playback keeps a 1 kHz tone and adds nothing above 8 kHz", () => {
  const y = steady(runBlocks(new Resampler(16000, 48000), tone(1000, 16000, 0.5), 320), 600);
  assert.ok(Math.abs(rms(y) * Math.SQRT2 - 0.5) < 0.005, `amplitude ${rms(y) * Math.SQRT2}`);
  assert.equal(dominant(y.subarray(0, 6000), 48000, 500, 20000), 1000);
  // The images of 1 kHz at 15 and 17 kHz are filtered out.
  const image = dominantLevel(y.subarray(0, 6000), 48000, 15000);
  assert.ok(image < 1e-3, `image at 15 kHz has level ${image}`);
});

function dominantLevel(y, rate, f) {
  let re = 0;
  let im = 0;
  for (let i = 0; i < y.length; i++) {
    const a = (2 * Math.PI * f * i) / rate;
    re += y[i] * Math.cos(a);
    im -= y[i] * Math.sin(a);
  }
  return (2 * Math.hypot(re, im)) / y.length;
}

test("Resampler: block size does not change the output", () => {
  const x = tone(440, 48000, 0.2);
  const a = runBlocks(new Resampler(48000, 16000), x, 128);
  const b = runBlocks(new Resampler(48000, 16000), x, 1000);
  const c = runBlocks(new Resampler(48000, 16000), x, 7);
  assert.equal(a.length, b.length);
  assert.equal(a.length, c.length);
  for (let i = 0; i < a.length; i++) {
    assert.ok(Math.abs(a[i] - b[i]) < 1e-6 && Math.abs(a[i] - c[i]) < 1e-6, `sample ${i}: ${a[i]} ${b[i]} ${c[i]}`);
  }
});

test("floatToPCM16 / pcm16ToFloat: little-endian, rounded, clipped", () => {
  const b = floatToPCM16(Float32Array.from([0, 1, -1, 2, -2, 0.5, NaN]));
  assert.deepEqual([...b.subarray(0, 4)], [0, 0, 0xff, 0x7f]); // 0, 32767 LE
  const v = new DataView(b.buffer);
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((i) => v.getInt16(2 * i, true)), [32767, -32767, 32767, -32768, 16384, 0]);
  const f = pcm16ToFloat(Uint8Array.from([0x00, 0x80, 0xff, 0x7f, 0x01]));
  assert.deepEqual([...f], [-1, 32767 / 32768]);
});

test("Framer: 20 ms frames of 640 bytes, whatever the block size", () => {
  const fr = new Framer();
  let frames = [];
  for (let i = 0; i < 10; i++) frames = frames.concat(fr.push(new Float32Array(100).fill(0.25)));
  assert.equal(frames.length, 3); // 1000 samples: three frames of 320, 40 left over
  for (const f of frames) assert.equal(f.byteLength, 2 * FRAME_SAMPLES);
  assert.equal(new DataView(frames[0].buffer).getInt16(0, true), 8192);
});

test("JitterBuffer: waits for its target, plays, runs dry, rebuffers", () => {
  const jb = new JitterBuffer({ target: 300, capacity: 1000 });
  const out = new Float32Array(128);
  jb.push(new Float32Array(200).fill(0.1));
  assert.equal(jb.pull(out), 0, "played below target");
  assert.ok(out.every((v) => v === 0));
  jb.push(new Float32Array(200).fill(0.2));
  assert.equal(jb.pull(out), 128); // 400 ≥ 300: plays
  assert.equal(out[0], Math.fround(0.1));
  assert.equal(jb.pull(out), 128);
  assert.equal(jb.pull(out), 128);
  assert.equal(jb.pull(out), 16, "the last 16 samples, then silence");
  assert.ok(out.subarray(16).every((v) => v === 0));
  assert.equal(jb.underruns, 1);
  jb.push(new Float32Array(100));
  assert.equal(jb.pull(out), 0, "after an underrun it waits for the target again");
});

test("JitterBuffer: bounded, drops the oldest", () => {
  const jb = new JitterBuffer({ target: 10, capacity: 100 });
  const ramp = Float32Array.from({ length: 150 }, (_, i) => i);
  assert.equal(jb.push(ramp.subarray(0, 80)), 0);
  assert.equal(jb.push(ramp.subarray(80)), 50);
  assert.equal(jb.size, 100);
  assert.equal(jb.dropped, 50);
  const out = new Float32Array(100);
  assert.equal(jb.pull(out), 100);
  assert.equal(out[0], 50, "the oldest kept sample");
  assert.equal(out[99], 149);
  // One push bigger than the whole buffer keeps its newest part.
  assert.equal(jb.push(ramp), 50);
  jb.pull(out);
  assert.equal(out[0], 50);
});

test("JitterBuffer: an ended turn plays out below its target; clear flushes", () => {
  const jb = new JitterBuffer({ target: 300, capacity: 1000 });
  const out = new Float32Array(128);
  jb.push(new Float32Array(50).fill(0.3));
  assert.equal(jb.pull(out), 0);
  jb.end();
  assert.equal(jb.pull(out), 50);
  assert.ok(jb.drained);
  assert.equal(jb.underruns, 0, "the end of a turn is no underrun");
  jb.clear();
  assert.ok(!jb.drained);
  jb.push(new Float32Array(500).fill(0.3));
  jb.clear();
  assert.equal(jb.size, 0);
  assert.equal(jb.pull(out), 0);
});
