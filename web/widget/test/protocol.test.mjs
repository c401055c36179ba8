// Unit tests of the widget's protocol logic (CallSession in widget.js),
// driven with the gateway's own example events (docs/gateway-protocol.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import widget from "../widget.js";

const { CallSession } = widget;

// session returns a CallSession whose sink records everything it is told.
function session() {
  const rec = { sent: [], player: [], states: [], transcripts: [], errors: [], ended: [], started: [] };
  const s = new CallSession({
    send: (o) => rec.sent.push(JSON.parse(JSON.stringify(o))),
    player: (c) => rec.player.push(c.t === "pcm" ? { t: "pcm", bytes: c.pcm.byteLength } : c),
    state: (x) => rec.states.push(x),
    transcript: (t) => rec.transcripts.push(t),
    error: (e) => rec.errors.push(e),
    ended: (e) => rec.ended.push(e),
    started: (e) => rec.started.push(e),
  });
  const ev = (o) => s.handleText(JSON.stringify({ seq: 1, at: "2026-11-19T15:04:05.120Z", ...o }));
  return { s, rec, ev };
}

const frame = () => new ArrayBuffer(640);

test("open turns audio on: pcm16 at 16 kHz, in one session.update", () => {
  const { s, rec } = session();
  s.open();
  assert.deepEqual(rec.sent, [{ type: "session.update", textOnly: false, audio: { encoding: "pcm16", sampleRate: 16000 } }]);
});

test("events: session.started, captions from deltas and transcripts, unknown events and members ignored", () => {
  const { s, rec, ev } = session();
  assert.equal(s.state, "connecting");
  ev({ type: "session.started", callId: "call_x", assistantId: "asst_y", protocol: "v1", future: { a: 1 } });
  assert.equal(s.callId, "call_x");
  assert.deepEqual(rec.states, ["listening"]);
  ev({ type: "assistant.text.delta", turnId: "turn_1", text: "Hi, this is Ava. " });
  ev({ type: "assistant.text.delta", turnId: "turn_1", text: "How can I help?" });
  ev({ type: "something.new", turnId: "turn_1" });
  s.handleText("not json");
  s.handleText("[1,2]");
  s.handleText('{"type":7}');
  ev({ type: "transcript", role: "user", text: "I'd like to", final: false });
  ev({ type: "transcript", role: "user", text: "I'd like to book", turnId: "turn_2", final: true });
  ev({ type: "transcript", role: "system", text: "?", final: true });
  assert.deepEqual(rec.transcripts, [
    { role: "assistant", text: "Hi, this is Ava. ", final: false, turnId: "turn_1" },
    { role: "assistant", text: "Hi, this is Ava. How can I help?", final: false, turnId: "turn_1" },
    { role: "user", text: "I'd like to", final: false },
    { role: "user", text: "I'd like to book", final: true, turnId: "turn_2" },
  ]);
  assert.deepEqual(rec.errors, []);
});

test("audio: frames play only between assistant.audio.start and done; clear flushes at once", () => {
  const { s, rec, ev } = session();
  ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  s.handleBinary(frame()); // outside a span: dropped
  ev({ type: "assistant.audio.start", turnId: "turn_1" });
  assert.equal(s.state, "speaking");
  s.handleBinary(frame());
  s.handleBinary(frame());
  ev({ type: "assistant.audio.done", turnId: "turn_1" });
  s.handleBinary(frame()); // after done: dropped
  assert.deepEqual(rec.player, [{ t: "start", turnId: "turn_1" }, { t: "pcm", bytes: 640 }, { t: "pcm", bytes: 640 }, { t: "done" }]);
  assert.equal(s.stats.framesDropped, 2);
  assert.equal(s.state, "speaking", "still playing its buffer after done");

  rec.player.length = 0;
  ev({ type: "assistant.audio.start", turnId: "turn_3" });
  s.handleBinary(frame());
  ev({ type: "assistant.audio.pause", turnId: "turn_3", playedMs: 20 });
  assert.equal(s.state, "listening");
  ev({ type: "assistant.audio.resume", turnId: "turn_3", playedMs: 20 });
  assert.equal(s.state, "speaking");
  ev({ type: "assistant.audio.pause", turnId: "turn_3", playedMs: 40 });
  ev({ type: "assistant.audio.clear", turnId: "turn_3", playedMs: 40 });
  s.handleBinary(frame()); // after clear: dropped
  assert.deepEqual(rec.player.map((c) => c.t), ["start", "pcm", "pause", "resume", "pause", "clear"]);
  assert.equal(s.state, "listening");
  // A pause of another turn changes nothing.
  ev({ type: "assistant.audio.pause", turnId: "turn_9", playedMs: 0 });
  assert.equal(rec.player.length, 6);
});

test("marks: about every 200 ms while a turn plays, and once when its last frame has played", () => {
  const { s, rec, ev } = session();
  ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  ev({ type: "assistant.audio.start", turnId: "turn_1" });
  // The player reports every 50 ms; the turn is 1,030 ms long.
  for (let ms = 50; ms <= 1000; ms += 50) s.handlePlayed("turn_1", ms + 0.4, false);
  ev({ type: "assistant.audio.done", turnId: "turn_1" });
  s.handlePlayed("turn_1", 1030.2, true);
  s.handlePlayed("turn_1", 1030.2, true); // a late duplicate: no second mark
  const marks = rec.sent.filter((m) => m.type === "playback.mark");
  assert.deepEqual(marks.map((m) => m.playedMs), [200, 400, 600, 800, 1000, 1030]);
  assert.ok(marks.every((m) => m.turnId === "turn_1"));
  assert.equal(s.state, "listening", "played out: listening");
});

test("marks: none for another turn, none after a clear, none while paused (no progress)", () => {
  const { s, rec, ev } = session();
  ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  ev({ type: "assistant.audio.start", turnId: "turn_3" });
  s.handlePlayed("turn_3", 250, false);
  s.handlePlayed("turn_1", 900, false); // a stale report of an old turn
  ev({ type: "assistant.audio.pause", turnId: "turn_3", playedMs: 300 });
  s.handlePlayed("turn_3", 260, false); // paused: progress is what it was
  ev({ type: "assistant.audio.clear", turnId: "turn_3", playedMs: 300 });
  s.handlePlayed("turn_3", 600, false);
  s.handlePlayed("turn_3", 600, true);
  assert.deepEqual(rec.sent.filter((m) => m.type === "playback.mark"), [{ type: "playback.mark", turnId: "turn_3", playedMs: 250 }]);
});

test("call.ended: ended once with outcome and reason; the close after it is no error", () => {
  const { s, rec, ev } = session();
  ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  ev({ type: "assistant.audio.start", turnId: "turn_1" });
  ev({ type: "call.ended", outcome: "completed", endedReason: "assistant-ended-call" });
  s.handleClose(1000, "call ended");
  s.handleBinary(frame());
  assert.deepEqual(rec.ended, [{ outcome: "completed", endedReason: "assistant-ended-call" }]);
  assert.deepEqual(rec.errors, []);
  assert.equal(s.state, "ended");
  assert.equal(rec.states.at(-1), "ended");
  assert.notEqual(rec.player.at(-1).t, "clear", "the assistant's goodbye plays out");
  assert.equal(s.hangup(), false, "nothing to hang up");
});

test("call.ended after a hang-up or for any other reason stops playback at once", () => {
  for (const reason of ["customer-ended-call", "exceeded-max-duration", "api-ended-call"]) {
    const { s, rec, ev } = session();
    ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
    ev({ type: "assistant.audio.start", turnId: "turn_1" });
    if (reason === "customer-ended-call") s.hangup();
    ev({ type: "call.ended", outcome: "completed", endedReason: reason });
    assert.equal(rec.player.at(-1).t, "clear", reason);
  }
});

test("hangup: sends {type: hangup}; call.ended customer-ended-call follows", () => {
  const { s, rec, ev } = session();
  ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  assert.equal(s.hangup(), true);
  assert.equal(s.hangup(), false, "once");
  assert.deepEqual(rec.sent, [{ type: "hangup" }]);
  ev({ type: "call.ended", outcome: "completed", endedReason: "customer-ended-call" });
  assert.deepEqual(rec.ended, [{ outcome: "completed", endedReason: "customer-ended-call" }]);
});

test("hangup: a close without call.ended still ends the call as hung up, without an error", () => {
  const { s, rec, ev } = session();
  ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  s.hangup();
  s.handleClose(1006, "");
  assert.deepEqual(rec.errors, []);
  assert.equal(rec.ended[0].endedReason, "customer-ended-call");
});

test("close without call.ended: an error the user sees, then ended; a refused connect says so", () => {
  const { s, rec, ev } = session();
  ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  s.handleClose(1006, "");
  assert.equal(rec.errors.length, 1);
  assert.equal(rec.errors[0].code, "connection_closed");
  assert.equal(rec.errors[0].closeCode, 1006);
  assert.match(rec.errors[0].message, /lost/);
  assert.deepEqual(rec.states, ["listening", "error", "ended"]);
  assert.equal(rec.ended.length, 1);
  s.handleClose(1006, "");
  assert.equal(rec.ended.length, 1, "ended once");

  const r = session();
  r.s.handleClose(1006, "");
  assert.match(r.rec.errors[0].message, /could not connect/);
  const i = session();
  i.ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  i.s.handleClose(4408, "idle");
  assert.match(i.rec.errors[0].message, /silence/);
});

test("errors: a fatal error sets the error state; a server without voice says so and the call goes on", () => {
  const { s, rec, ev } = session();
  ev({ type: "session.started", callId: "c", assistantId: "a", protocol: "v1" });
  s.open();
  ev({ type: "error", code: "unsupported", message: "no speech engines", field: "textOnly", fatal: false });
  assert.equal(s.audioOn, false);
  assert.equal(rec.errors[0].fatal, false);
  assert.match(rec.errors[0].message, /cannot speak/);
  assert.equal(s.state, "listening");
  ev({ type: "error", code: "internal", message: "boom", fatal: true });
  assert.equal(s.state, "error");
  ev({ type: "call.ended", outcome: "failed", endedReason: "pipeline-error" });
  assert.equal(s.state, "ended");
  assert.deepEqual(rec.ended, [{ outcome: "failed", endedReason: "pipeline-error" }]);
});
