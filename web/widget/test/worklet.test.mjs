// The two AudioWorklet processors, run in node under a minimal stand-in
// for the AudioWorklet global scope (registerProcessor, sampleRate, port).
import { test } from "node:test";
import assert from "node:assert/strict";

const processors = {};
globalThis.sampleRate = 48000;
globalThis.AudioWorkletProcessor = class {
  constructor() {
    this.port = { sent: [], onmessage: null, postMessage(m) { this.sent.push(m); } };
  }
};
globalThis.registerProcessor = (name, cls) => { processors[name] = cls; };
const { floatToPCM16 } = await import("../audio-worklet.mjs");

const QUANTUM = 128;
const send = (p, m) => p.port.onmessage({ data: m });

// wireFrame is 20 ms of a 1 kHz tone at 16 kHz, as the server sends it.
function wireFrame(i) {
  const x = new Float32Array(320);
  for (let k = 0; k < 320; k++) x[k] = 0.5 * Math.sin((2 * Math.PI * 1000 * (320 * i + k)) / 16000);
  return floatToPCM16(x).buffer;
}

function render(p, quanta) {
  const out = [new Float32Array(QUANTUM)];
  let peak = 0;
  for (let i = 0; i < quanta; i++) {
    p.process([], [out]);
    for (const v of out[0]) peak = Math.max(peak, Math.abs(v));
  }
  return peak;
}

test("playback: waits for the jitter target, plays the turn, reports progress and the drain", () => {
  const p = new processors["switchboard-playback"]({ processorOptions: { targetMs: 80, capacityMs: 400 } });
  assert.equal(render(p, 10), 0, "silent with no turn");
  send(p, { t: "start", turnId: "turn_1" });
  send(p, { t: "pcm", pcm: wireFrame(0) });
  send(p, { t: "pcm", pcm: wireFrame(1) });
  assert.equal(render(p, 5), 0, "40 ms buffered: below the 80 ms target");
  // The rest of 1 s in real time: a frame every 20 ms (7.5 quanta).
  let peak = 0;
  for (let i = 2; i < 50; i++) {
    send(p, { t: "pcm", pcm: wireFrame(i) });
    peak = Math.max(peak, render(p, i % 2 ? 8 : 7));
  }
  send(p, { t: "done" });
  peak = Math.max(peak, render(p, 40));
  assert.ok(peak > 0.45 && peak < 0.55, `played peak ${peak}, want the tone's 0.5`);
  const reports = p.port.sent.filter((m) => m.t === "played");
  assert.ok(reports.length >= 19, `${reports.length} progress reports for 1 s, want one per 50 ms`);
  const last = reports.at(-1);
  assert.equal(last.turnId, "turn_1");
  assert.ok(last.drained, "the last report says the turn has played out");
  assert.ok(Math.abs(last.ms - 1000) < 5, `played ${last.ms} ms of a 1,000 ms turn`);
  assert.equal(last.underruns, 0);
  assert.equal(last.dropped, 0);
  for (let i = 1; i < reports.length; i++) assert.ok(reports[i].ms > reports[i - 1].ms);
  const n = p.port.sent.length;
  render(p, 20);
  assert.equal(p.port.sent.length, n, "nothing more after the drain");
});

test("playback: a burst over the buffer's bound drops the oldest audio and counts it as played past", () => {
  const p = new processors["switchboard-playback"]({ processorOptions: { targetMs: 80, capacityMs: 400 } });
  send(p, { t: "start", turnId: "turn_1" });
  for (let i = 0; i < 50; i++) send(p, { t: "pcm", pcm: wireFrame(i) }); // 1 s at once: a stalled tab
  send(p, { t: "done" });
  render(p, Math.ceil((0.5 * 48000) / QUANTUM));
  const last = p.port.sent.filter((m) => m.t === "played").at(-1);
  assert.ok(last.drained);
  assert.ok(Math.abs(last.dropped - 0.6 * 48000) < 200, `dropped ${last.dropped} samples, want the oldest 600 ms`);
  assert.ok(Math.abs(last.ms - 1000) < 5, `position ${last.ms} ms: dropped audio counts toward the turn's position`);
});

test("playback: pause holds the buffer and reports no progress; clear stops at once", () => {
  const p = new processors["switchboard-playback"]({ processorOptions: {} });
  send(p, { t: "start", turnId: "turn_3" });
  for (let i = 0; i < 10; i++) send(p, { t: "pcm", pcm: wireFrame(i) });
  render(p, 20);
  send(p, { t: "pause" });
  const before = p.port.sent.length;
  assert.equal(render(p, 40), 0, "silent while paused");
  assert.equal(p.port.sent.length, before, "no progress while paused");
  send(p, { t: "resume" });
  assert.ok(render(p, 5) > 0.4, "plays on after the resume");
  send(p, { t: "clear" });
  assert.equal(render(p, 10), 0, "silent at once after the clear");
  send(p, { t: "pcm", pcm: wireFrame(0) });
  assert.equal(render(p, 10), 0, "frames after a clear are not played");
});

test("capture: the microphone at 48 kHz becomes 640-byte frames at 16 kHz; mute sends silence", () => {
  const p = new processors["switchboard-capture"]();
  const x = new Float32Array(QUANTUM);
  let t = 0;
  const quantum = () => {
    for (let i = 0; i < QUANTUM; i++, t++) x[i] = 0.5 * Math.sin((2 * Math.PI * 440 * t) / 48000);
    p.process([[x]]);
  };
  for (let i = 0; i < 375; i++) quantum(); // 1 s
  const frames = p.port.sent.filter((m) => m.t === "frame");
  assert.ok(frames.length >= 48 && frames.length <= 50, `${frames.length} frames for 1 s`);
  assert.ok(frames.every((f) => f.pcm.byteLength === 640));
  const loud = new DataView(frames[20].pcm);
  let peak = 0;
  for (let i = 0; i < 320; i++) peak = Math.max(peak, Math.abs(loud.getInt16(2 * i, true)));
  assert.ok(peak > 15000 && peak < 17500, `frame peak ${peak}, want about 0.5 × 32767`);
  send(p, { t: "mute", muted: true });
  p.port.sent.length = 0;
  for (let i = 0; i < 375; i++) quantum();
  const muted = p.port.sent.filter((m) => m.t === "frame");
  assert.ok(muted.length >= 48, "a muted microphone still streams");
  const late = new Uint8Array(muted.at(-1).pcm);
  assert.ok(late.every((b) => b === 0), "as silence");
  // No input at all (a track that ended) is silence too, still streamed.
  p.port.sent.length = 0;
  for (let i = 0; i < 30; i++) p.process([[]]);
  assert.ok(p.port.sent.length >= 3, `${p.port.sent.length} frames from 80 ms without input`);
});
