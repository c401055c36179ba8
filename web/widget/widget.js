/*! Switchboard web widget v1 — a voice call to a Switchboard assistant from a web page.
 * Served as is by the Switchboard server (no build step, no third-party code).
 * Docs: docs/widget.md. Protocol: docs/gateway-protocol.md (v1).
 *
 * One file, three ways in:
 *   - a classic <script src=".../widget.js" data-assistant-id data-public-key>,
 *     which defines window.Switchboard and renders a call button;
 *   - widget.mjs, the ES module, which imports this file and exports the API;
 *   - node's test runner, which require()s the protocol logic (CallSession),
 *     which touches no browser API.
 */
(function (root, factory) {
  "use strict";
  var api = factory(root);
  if (typeof module === "object" && module && module.exports) module.exports = api;
  if (root && typeof root.document !== "undefined") root.Switchboard = api;
})(typeof globalThis !== "undefined" ? globalThis : this, function (root) {
  "use strict";

  var VERSION = "1";
  // The AudioWorklet module's content version (the first 16 hex digits of
  // its SHA-256): its URL carries it, so a cached worklet never pairs with
  // a newer widget. internal/widget's tests fail, with the right value,
  // when audio-worklet.mjs changes and this does not.
  var WORKLET_VERSION = "0625396e9955042d";
  var WIRE_RATE = 16000;
  var MARK_EVERY_MS = 200;
  var HANGUP_GRACE_MS = 2000;

  // ---------------------------------------------------------------------
  // CallSession: the gateway protocol, as a client plays it. Pure: it gets
  // the server's frames and the player's progress, and says what to do
  // through its sink (send JSON, drive the player, report state, captions,
  // errors, the end). No DOM, no WebSocket, no audio: node tests it.
  // ---------------------------------------------------------------------

  /**
   * @param {object} sink
   *   send(obj)           a client event to send as a JSON text frame
   *   player(cmd)         {t:"start",turnId} {t:"pcm",pcm} {t:"done"} {t:"clear"} {t:"pause"} {t:"resume"}
   *   state(s)            "connecting" | "listening" | "speaking" | "ended" | "error"
   *   transcript(t)       {role, text, final, turnId?}
   *   error(e)            {code, message, fatal, field?, closeCode?}
   *   ended(e)            {outcome, endedReason, closeCode?}
   *   started(e)          {callId, assistantId, protocol}
   */
  function CallSession(sink) {
    this.sink = sink;
    this.state = "connecting";
    this.callId = null;
    this.audioTurn = null; // the turn whose binary frames are arriving
    this.playing = null; // the turn the player holds, until it drains or is cleared
    this.lastMark = 0; // playedMs of the last mark sent for this.playing
    this.audioDone = false; // assistant.audio.done seen for this.playing
    this.paused = false;
    this.captions = {}; // assistant text per turn, from the deltas
    this.endedSent = false;
    this.hangingUp = false;
    this.audioOn = false;
    this.stats = { framesIn: 0, bytesIn: 0, framesDropped: 0, marks: 0, events: 0 };
  }

  CallSession.prototype._setState = function (s) {
    if (this.state === s || this.state === "ended") return;
    if (this.state === "error" && s !== "ended") return;
    this.state = s;
    this.sink.state(s);
  };

  /** open is called when the socket opens: audio on, in the widget's format. */
  CallSession.prototype.open = function () {
    this.sink.send({ type: "session.update", textOnly: false, audio: { encoding: "pcm16", sampleRate: WIRE_RATE } });
    this.audioOn = true;
  };

  /** handleText takes one text frame. Unknown events and members are ignored, as v1 requires. */
  CallSession.prototype.handleText = function (data) {
    var ev;
    try {
      ev = JSON.parse(data);
    } catch (e) {
      return; // not ours to judge; the server never sends this
    }
    if (!ev || typeof ev !== "object" || typeof ev.type !== "string") return;
    this.stats.events++;
    switch (ev.type) {
      case "session.started":
        this.callId = typeof ev.callId === "string" ? ev.callId : this.callId;
        this.sink.started({ callId: ev.callId, assistantId: ev.assistantId, protocol: ev.protocol });
        this._setState("listening");
        break;
      case "assistant.text.delta":
        if (typeof ev.turnId === "string" && typeof ev.text === "string") {
          this.captions[ev.turnId] = (this.captions[ev.turnId] || "") + ev.text;
          this.sink.transcript({ role: "assistant", text: this.captions[ev.turnId], final: false, turnId: ev.turnId });
        }
        break;
      case "assistant.turn.done":
        delete this.captions[ev.turnId];
        break;
      case "transcript":
        if (ev.role === "user" || ev.role === "assistant") {
          var t = { role: ev.role, text: typeof ev.text === "string" ? ev.text : "", final: ev.final === true };
          if (typeof ev.turnId === "string") t.turnId = ev.turnId;
          this.sink.transcript(t);
        }
        break;
      case "assistant.audio.start":
        if (typeof ev.turnId !== "string") break;
        this.audioTurn = ev.turnId;
        this.playing = ev.turnId;
        this.lastMark = 0;
        this.audioDone = false;
        this.paused = false;
        this.sink.player({ t: "start", turnId: ev.turnId });
        this._setState("speaking");
        break;
      case "assistant.audio.done":
        if (ev.turnId === this.audioTurn) {
          this.audioTurn = null;
          this.audioDone = true;
          this.sink.player({ t: "done" });
        }
        break;
      case "assistant.audio.clear":
        if (ev.turnId === this.playing || ev.turnId === this.audioTurn) {
          this.audioTurn = null;
          this.playing = null;
          this.paused = false;
          this.sink.player({ t: "clear" });
          this._setState("listening");
        }
        break;
      case "assistant.audio.pause":
        if (ev.turnId === this.playing && !this.paused) {
          this.paused = true;
          this.sink.player({ t: "pause" });
          this._setState("listening");
        }
        break;
      case "assistant.audio.resume":
        if (ev.turnId === this.playing && this.paused) {
          this.paused = false;
          this.sink.player({ t: "resume" });
          this._setState("speaking");
        }
        break;
      case "error":
        var err = { code: String(ev.code || "error"), message: String(ev.message || ""), fatal: ev.fatal === true };
        if (typeof ev.field === "string") err.field = ev.field;
        if (err.code === "unsupported" && err.field === "textOnly") {
          // The server has no voice for this assistant: the call stays text.
          this.audioOn = false;
          err.message = "this assistant cannot speak on this server: " + err.message;
        }
        this.sink.error(err);
        if (err.fatal) this._setState("error");
        break;
      case "call.ended":
        this._end({ outcome: String(ev.outcome || ""), endedReason: String(ev.endedReason || "") });
        break;
      default:
      // pong, speech.started/stopped and events of later v1 servers: nothing to do.
    }
  };

  /** handleBinary takes one binary frame: the assistant's speech, or nothing outside an audio span. */
  CallSession.prototype.handleBinary = function (buf) {
    if (this.audioTurn === null || this.state === "ended") {
      this.stats.framesDropped++;
      return;
    }
    this.stats.framesIn++;
    this.stats.bytesIn += buf.byteLength;
    this.sink.player({ t: "pcm", pcm: buf });
  };

  /**
   * handlePlayed takes the player's progress on a turn: ms of its audio
   * played so far, and whether it has played out. It sends playback.mark
   * about every 200 ms while the turn plays, and once when it has played
   * its last frame.
   */
  CallSession.prototype.handlePlayed = function (turnId, ms, drained) {
    if (turnId !== this.playing || this.state === "ended") return;
    var played = Math.max(0, Math.floor(ms));
    var last = drained && this.audioDone;
    if (played - this.lastMark >= MARK_EVERY_MS || (last && played > this.lastMark)) {
      this.lastMark = played;
      this.stats.marks++;
      this.sink.send({ type: "playback.mark", turnId: turnId, playedMs: played });
    }
    if (last) {
      this.playing = null;
      this._setState("listening");
    }
  };

  /** hangup asks the server to end the call; call.ended and the close follow. */
  CallSession.prototype.hangup = function () {
    if (this.state === "ended" || this.hangingUp) return false;
    this.hangingUp = true;
    this.sink.send({ type: "hangup" });
    return true;
  };

  /**
   * handleClose takes the socket's close. After call.ended it is the
   * expected end. Without it the call has ended all the same (v1 has no
   * reconnection), and unless we hung up, that is an error the user sees.
   */
  CallSession.prototype.handleClose = function (code, reason) {
    if (this.endedSent) return;
    if (this.hangingUp) {
      this._end({ outcome: "completed", endedReason: "customer-ended-call", closeCode: code });
      return;
    }
    var msg;
    switch (code) {
      case 4400:
        msg = "the server closed the call: protocol error";
        break;
      case 4404:
        msg = "the call was not found";
        break;
      case 4408:
        msg = "the call ended after a long silence";
        break;
      case 4410:
        msg = "the call has already ended";
        break;
      case 1006:
        msg = this.state === "connecting" ? "could not connect to the call (refused, expired or unreachable)" : "the connection was lost";
        break;
      default:
        msg = "the connection closed (code " + code + (reason ? ": " + reason : "") + ")";
    }
    this.sink.error({ code: "connection_closed", message: msg, fatal: true, closeCode: code });
    this._setState("error");
    this._end({ outcome: "", endedReason: "connection-closed", closeCode: code });
  };

  CallSession.prototype._end = function (e) {
    if (this.endedSent) return;
    this.endedSent = true;
    this.audioTurn = null;
    this.playing = null;
    // A caller who hung up hears nothing more; otherwise (the assistant's
    // goodbye) the few buffered milliseconds play out.
    if (this.hangingUp || e.endedReason !== "assistant-ended-call") this.sink.player({ t: "clear" });
    this.state = "ended";
    this.sink.state("ended");
    this.sink.ended(e);
  };

  // ---------------------------------------------------------------------
  // The browser: Call wires a WebSocket, the microphone, two AudioWorklet
  // nodes and a CallSession together.
  // ---------------------------------------------------------------------

  var defaultBase = "";
  var currentScript = root.document && root.document.currentScript;
  if (currentScript && currentScript.src) {
    try {
      defaultBase = new URL(currentScript.src).origin;
    } catch (e) {
      defaultBase = "";
    }
  }

  function CallError(code, message, extra) {
    var e = new Error(message);
    e.name = "SwitchboardError";
    e.code = code;
    if (extra) for (var k in extra) e[k] = extra[k];
    return e;
  }

  function Emitter() {
    this._handlers = {};
  }
  Emitter.prototype.on = function (name, fn) {
    (this._handlers[name] = this._handlers[name] || []).push(fn);
    return this;
  };
  Emitter.prototype.off = function (name, fn) {
    var hs = this._handlers[name] || [];
    var i = hs.indexOf(fn);
    if (i >= 0) hs.splice(i, 1);
    return this;
  };
  Emitter.prototype._emit = function (name, value) {
    var hs = (this._handlers[name] || []).slice();
    for (var i = 0; i < hs.length; i++) {
      try {
        hs[i](value);
      } catch (e) {
        if (root.console) root.console.error("Switchboard: a " + name + " handler threw", e);
      }
    }
  };

  /**
   * Call is one voice call. Made by start() or join(); its constructor runs
   * inside the user's click, so the AudioContext it creates may play.
   */
  function Call(opts) {
    Emitter.call(this);
    this.id = null;
    this.state = "connecting";
    this.muted = false;
    this._opts = opts || {};
    this._assetBase = (this._opts.baseUrl || defaultBase || root.location.origin) + "/widget/v" + VERSION + "/";
    this._ws = null;
    this._stream = null;
    this._closeTimer = null;
    this._stats = this._opts.test ? newStats() : null;
    if (this._stats) root.__switchboardStats = this._stats;
    var AC = root.AudioContext || root.webkitAudioContext;
    if (!AC) throw CallError("unsupported_browser", "this browser has no Web Audio (AudioContext)");
    this._ctx = new AC({ latencyHint: "interactive" });
    if (this._ctx.state === "suspended") this._ctx.resume().catch(function () {});
    var self = this;
    this._session = new CallSession({
      send: function (obj) {
        self._sendJSON(obj);
      },
      player: function (cmd) {
        self._player(cmd);
      },
      state: function (s) {
        self.state = s;
        if (self._stats) self._stats.states.push(s);
        self._emit("state", s);
      },
      transcript: function (t) {
        if (self._stats) self._stats.transcripts.push(t);
        self._emit("transcript", t);
      },
      error: function (e) {
        if (self._stats) self._stats.errors.push(e);
        self._emit("error", e);
      },
      ended: function (e) {
        if (self._stats) self._stats.ended = e;
        self._emit("ended", e);
        self._teardown();
      },
      started: function (e) {
        if (e.callId) self.id = e.callId;
      },
    });
  }
  Call.prototype = Object.create(Emitter.prototype);
  Call.prototype.constructor = Call;

  function newStats() {
    return {
      states: [],
      transcripts: [],
      errors: [],
      ended: null,
      framesSent: 0,
      bytesSent: 0,
      framesReceived: 0,
      marks: [],
      playedMs: 0,
      outputPeak: 0,
      analyserPeak: 0,
      nonSilentMs: 0,
      inputPeak: 0,
      contextRate: 0,
    };
  }

  // _prepare gets the microphone and loads the worklets: everything that
  // can fail on this side before a call is created or joined.
  Call.prototype._prepare = function () {
    var self = this;
    var md = root.navigator && root.navigator.mediaDevices;
    if (!md || !md.getUserMedia) {
      return Promise.reject(CallError("unsupported_browser", "this page cannot use the microphone (it needs HTTPS and a current browser)"));
    }
    if (!this._ctx.audioWorklet) {
      return Promise.reject(CallError("unsupported_browser", "this browser has no AudioWorklet"));
    }
    var mic = md
      .getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true } })
      .catch(function (e) {
        var denied = e && (e.name === "NotAllowedError" || e.name === "SecurityError");
        throw CallError(denied ? "microphone_denied" : "microphone_unavailable",
          denied ? "microphone access was denied" : "no microphone could be opened (" + (e && e.name) + ")", { cause: e });
      });
    var worklet = this._ctx.audioWorklet.addModule(this._assetBase + "audio-worklet.mjs?v=" + WORKLET_VERSION).catch(function (e) {
      throw CallError("load_failed", "the audio worklet did not load from " + self._assetBase, { cause: e });
    });
    return Promise.all([mic, worklet]).then(function (r) {
      self._stream = r[0];
      if (self.state === "ended") throw CallError("ended", "the call was hung up before it started");
      self._buildGraph();
    });
  };

  Call.prototype._buildGraph = function () {
    var self = this;
    var ctx = this._ctx;
    if (this._stats) this._stats.contextRate = ctx.sampleRate;
    this._capture = new root.AudioWorkletNode(ctx, "switchboard-capture", { numberOfInputs: 1, numberOfOutputs: 0 });
    this._capture.port.onmessage = function (e) {
      var m = e.data;
      if (!m || m.t !== "frame") return;
      if (self._stats && m.peak > self._stats.inputPeak) self._stats.inputPeak = m.peak;
      var ws = self._ws;
      if (ws && ws.readyState === 1 && self._session.audioOn && self.state !== "ended") {
        ws.send(m.pcm);
        if (self._stats) {
          self._stats.framesSent++;
          self._stats.bytesSent += m.pcm.byteLength;
        }
      }
    };
    this._source = ctx.createMediaStreamSource(this._stream);
    this._source.connect(this._capture);
    this._playback = new root.AudioWorkletNode(ctx, "switchboard-playback", {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      processorOptions: { targetMs: this._opts.jitterMs || 80, capacityMs: 400 },
    });
    this._playback.port.onmessage = function (e) {
      var m = e.data;
      if (!m || m.t !== "played") return;
      if (self._stats) {
        if (m.peak > self._stats.outputPeak) self._stats.outputPeak = m.peak;
        self._stats.underruns = m.underruns;
        self._stats.dropped = m.dropped;
      }
      self._session.handlePlayed(m.turnId, m.ms, m.drained);
    };
    this._playback.connect(ctx.destination);
    if (this._stats) {
      // What reaches the speaker, measured as a page would.
      var an = ctx.createAnalyser();
      an.fftSize = 2048;
      this._playback.connect(an);
      var buf = new Float32Array(an.fftSize);
      var last = ctx.currentTime;
      this._meter = root.setInterval(function () {
        an.getFloatTimeDomainData(buf);
        var peak = 0;
        for (var i = 0; i < buf.length; i++) peak = Math.max(peak, Math.abs(buf[i]));
        var now = ctx.currentTime;
        if (peak > 0.01) self._stats.nonSilentMs += Math.round((now - last) * 1000);
        last = now;
        if (peak > self._stats.analyserPeak) self._stats.analyserPeak = peak;
      }, 50);
    }
  };

  Call.prototype._connect = function (url) {
    var self = this;
    if (this.state === "ended") return Promise.reject(CallError("ended", "the call was hung up before it started"));
    try {
      var q = new URL(url).searchParams.get("call_id");
      if (q && !this.id) this.id = q;
    } catch (e) {
      return Promise.reject(CallError("invalid_gateway_url", "not a gateway URL: " + url));
    }
    return new Promise(function (resolve, reject) {
      var ws;
      try {
        ws = new root.WebSocket(url);
      } catch (e) {
        reject(CallError("invalid_gateway_url", "cannot open " + url + ": " + e.message));
        return;
      }
      ws.binaryType = "arraybuffer";
      self._ws = ws;
      var opened = false;
      ws.onopen = function () {
        opened = true;
        self._session.open();
        resolve(self);
      };
      ws.onmessage = function (m) {
        if (typeof m.data === "string") self._session.handleText(m.data);
        else {
          if (self._stats) self._stats.framesReceived++;
          self._session.handleBinary(m.data);
        }
      };
      ws.onclose = function (e) {
        self._ws = null;
        self._session.handleClose(e.code, e.reason);
        if (!opened) reject(CallError("connection_closed", "could not connect to the call (refused, expired or unreachable)", { closeCode: e.code }));
      };
    });
  };

  Call.prototype._sendJSON = function (obj) {
    var ws = this._ws;
    if (!ws || ws.readyState !== 1) return;
    ws.send(JSON.stringify(obj));
    if (this._stats && obj.type === "playback.mark") this._stats.marks.push({ turnId: obj.turnId, playedMs: obj.playedMs });
  };

  Call.prototype._player = function (cmd) {
    if (!this._playback) return;
    if (cmd.t === "pcm") this._playback.port.postMessage(cmd, [cmd.pcm]);
    else this._playback.port.postMessage(cmd);
  };

  /** mute stops sending the microphone (silence is sent instead); the call goes on. */
  Call.prototype.mute = function (on) {
    this.muted = on === undefined ? true : !!on;
    if (this._capture) this._capture.port.postMessage({ t: "mute", muted: this.muted });
    if (this._stream) {
      var tracks = this._stream.getAudioTracks();
      for (var i = 0; i < tracks.length; i++) tracks[i].enabled = !this.muted;
    }
    this._emit("mute", this.muted);
    return this.muted;
  };

  /**
   * sendText sends typed text as the caller's turn ({"type":"user.text"}),
   * beside the microphone; false when the call is not connected.
   */
  Call.prototype.sendText = function (text) {
    if (typeof text !== "string" || text === "" || this.state === "ended" || !this._ws || this._ws.readyState !== 1) return false;
    this._sendJSON({ type: "user.text", text: text });
    return true;
  };

  /** hangup ends the call: {"type":"hangup"}, then call.ended and the close. */
  Call.prototype.hangup = function () {
    var self = this;
    if (this.state === "ended") return;
    if (!this._ws) {
      // Not connected yet: nothing to tell the server.
      this._session.hangingUp = true;
      this._session.handleClose(1000, "hung up");
      return;
    }
    if (this._ws.readyState !== 1) {
      // Still connecting: closing is the whole hang-up.
      this._session.hangingUp = true;
      this._ws.close(1000, "hung up");
      return;
    }
    this._session.hangup();
    // The server answers with call.ended and closes; if it does not, close.
    this._closeTimer = root.setTimeout(function () {
      if (self._ws) self._ws.close(1000, "hung up");
    }, HANGUP_GRACE_MS);
  };

  Call.prototype._fail = function (err) {
    this._emit("error", { code: err.code || "error", message: err.message, fatal: true });
    if (this._stats) this._stats.errors.push({ code: err.code, message: err.message });
    if (this.state !== "ended") {
      this._session._setState("error");
      this._session.hangingUp = true; // no second error from the close
      this._session._end({ outcome: "", endedReason: "client-error" });
    }
  };

  Call.prototype._teardown = function () {
    if (this._closeTimer) root.clearTimeout(this._closeTimer);
    if (this._meter) root.clearInterval(this._meter);
    if (this._ws) {
      try {
        this._ws.close(1000, "call ended");
      } catch (e) {
        /* already closing */
      }
    }
    if (this._stream) {
      var tracks = this._stream.getTracks();
      for (var i = 0; i < tracks.length; i++) tracks[i].stop();
    }
    if (this._source) this._source.disconnect();
    var ctx = this._ctx;
    // Let the last buffered audio (at most the 400 ms bound) out before closing the context.
    root.setTimeout(function () {
      if (ctx.state !== "closed") ctx.close().catch(function () {});
    }, 500);
  };

  function testMode(opts) {
    if (opts && opts.test) return true;
    try {
      return new URL(root.location.href).searchParams.get("switchboardTest") === "1";
    } catch (e) {
      return false;
    }
  }

  function withTest(opts) {
    var o = {};
    for (var k in opts || {}) o[k] = opts[k];
    o.test = testMode(opts);
    return o;
  }

  // startCall runs a call's setup, rejecting (and ending the call with an
  // error event) when a step fails. getGateway returns the gateway URL.
  function startCall(call, getGateway) {
    return call
      ._prepare()
      .then(getGateway)
      .then(function (url) {
        return call._connect(url);
      })
      .catch(function (err) {
        if (call.state !== "ended") call._fail(err);
        throw err;
      });
  }

  /**
   * start creates a web call with a publishable key and joins it.
   * @param {{assistantId: string, publicKey: string, baseUrl?: string}} opts
   * @returns {Promise<Call>}
   */
  function start(opts) {
    return startWith(opts, null);
  }

  // startWith is start(), telling onCall about the Call as soon as it
  // exists, before any of its events: mount() wires its button to it.
  function startWith(opts, onCall) {
    opts = withTest(opts);
    if (!opts.assistantId || !opts.publicKey) return Promise.reject(CallError("invalid_options", "start needs assistantId and publicKey"));
    var call;
    try {
      call = new Call(opts);
    } catch (e) {
      return Promise.reject(e);
    }
    if (onCall) onCall(call);
    var base = opts.baseUrl || defaultBase || root.location.origin;
    return startCall(call, function () {
      return root
        .fetch(base + "/v1/calls/initiate", {
          method: "POST",
          mode: "cors",
          credentials: "omit",
          headers: { "Content-Type": "application/json", "X-API-Key": opts.publicKey },
          body: JSON.stringify({ assistantId: opts.assistantId, type: "web" }),
        })
        .catch(function (e) {
          // A browser reports a CORS refusal (this page's origin is not
          // one the publishable key allows) like a network failure.
          var here = root.location && root.location.origin;
          throw CallError(
            "network",
            "could not reach " + base + " (" + e.message + "): is it up, and is " + here + " one of the publishable key's origins?",
          );
        })
        .then(function (r) {
          return r
            .json()
            .catch(function () {
              return null;
            })
            .then(function (body) {
              var gw = body && (body.gateway || (body.data && body.data.gateway));
              if (!r.ok || !body || body.status !== true || !gw || !gw.url) {
                var why = (body && body.message) || "HTTP " + r.status;
                throw CallError("call_refused", "the call was refused: " + why, { status: r.status, requestId: body && body.requestId });
              }
              call.id = body.callId || (body.data && body.data.callId) || null;
              return gw.url;
            });
        });
    });
  }

  /**
   * join joins a web call created elsewhere (by the integrator's server,
   * with its secret key): the browser holds no key, only the gateway URL.
   * @param {{gatewayUrl: string | (() => (string|Promise<string>)), baseUrl?: string}} opts
   * @returns {Promise<Call>}
   */
  function join(opts) {
    return joinWith(opts, null);
  }

  function joinWith(opts, onCall) {
    opts = withTest(opts);
    if (!opts.gatewayUrl) return Promise.reject(CallError("invalid_options", "join needs gatewayUrl"));
    var call;
    try {
      call = new Call(opts);
    } catch (e) {
      return Promise.reject(e);
    }
    if (onCall) onCall(call);
    return startCall(call, function () {
      return typeof opts.gatewayUrl === "function" ? opts.gatewayUrl() : opts.gatewayUrl;
    });
  }

  // ---------------------------------------------------------------------
  // The call button.
  // ---------------------------------------------------------------------

  var CSS =
    ":host{all:initial;display:inline-block;font:15px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1b1f24}" +
    ".sb{display:flex;flex-direction:column;gap:8px;max-width:360px}" +
    ".row{display:flex;gap:8px;align-items:center}" +
    "button{font:inherit;font-weight:600;border:0;border-radius:999px;padding:10px 18px;cursor:pointer;background:#0b6bcb;color:#fff}" +
    "button:hover{background:#0957a6}" +
    "button:focus-visible{outline:3px solid #f5a623;outline-offset:3px}" +
    "button[data-active]{background:#c62828}button[data-active]:hover{background:#a51f1f}" +
    "button.mute{background:#e8ecf1;color:#1b1f24;font-weight:500}button.mute[aria-pressed=true]{background:#ffe0b2}" +
    "button[disabled]{opacity:.6;cursor:default}" +
    ".status{font-size:13px;color:#4a5560;min-height:1.4em}.status[data-state=error]{color:#b00020}" +
    ".captions{font-size:14px;background:#f4f6f8;border-radius:8px;padding:8px 10px;max-height:9em;overflow:auto}" +
    ".captions:empty{display:none}.captions p{margin:2px 0}.captions .user{color:#0b6bcb}" +
    "[hidden]{display:none!important}" +
    "@media (prefers-color-scheme:dark){:host{color:#e8ecf1}.captions{background:#22272e}.status{color:#aab4be}button.mute{background:#2d333b;color:#e8ecf1}}";

  var STATUS = {
    idle: "",
    connecting: "Connecting…",
    listening: "Listening",
    speaking: "Assistant speaking",
    ended: "Call ended",
    error: "Call failed",
  };

  function applyCSS(shadow, doc) {
    try {
      // A constructed stylesheet is not inline style: it works under a host
      // page's strict style-src.
      var sheet = new root.CSSStyleSheet();
      sheet.replaceSync(CSS);
      shadow.adoptedStyleSheets = [sheet];
    } catch (e) {
      var st = doc.createElement("style");
      st.textContent = CSS;
      shadow.appendChild(st);
    }
  }

  /**
   * mount renders the call button into target (an element or a selector)
   * and returns a controller. opts are start()'s (assistantId, publicKey,
   * baseUrl) or join()'s (gatewayUrl, a string or a function returning one).
   */
  function mount(target, opts) {
    var doc = root.document;
    var el = typeof target === "string" ? doc.querySelector(target) : target;
    if (!el) throw CallError("invalid_options", "mount: no element " + target);
    opts = withTest(opts);
    var host = doc.createElement("div");
    host.setAttribute("data-switchboard-widget", "");
    el.appendChild(host);
    var shadow = host.attachShadow({ mode: "open" });
    applyCSS(shadow, doc);
    var wrap = doc.createElement("div");
    wrap.className = "sb";
    var row = doc.createElement("div");
    row.className = "row";
    var btn = doc.createElement("button");
    btn.type = "button";
    btn.setAttribute("data-switchboard-call", "");
    btn.textContent = opts.label || "Call assistant";
    var muteBtn = doc.createElement("button");
    muteBtn.type = "button";
    muteBtn.className = "mute";
    muteBtn.setAttribute("data-switchboard-mute", "");
    muteBtn.setAttribute("aria-pressed", "false");
    muteBtn.textContent = "Mute";
    muteBtn.hidden = true;
    var status = doc.createElement("div");
    status.className = "status";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    status.setAttribute("data-switchboard-status", "");
    var captions = doc.createElement("div");
    captions.className = "captions";
    captions.setAttribute("aria-live", "polite");
    captions.setAttribute("aria-label", "Captions");
    captions.setAttribute("data-switchboard-captions", "");
    row.appendChild(btn);
    row.appendChild(muteBtn);
    wrap.appendChild(row);
    wrap.appendChild(status);
    wrap.appendChild(captions);
    shadow.appendChild(wrap);

    var call = null;
    var lines = {}; // caption element per turn ("partial" for the user's utterance in progress)

    function setStatus(s, text) {
      status.setAttribute("data-state", s);
      status.textContent = text !== undefined ? text : STATUS[s] || s;
    }

    function caption(t) {
      var key = t.turnId || "partial";
      if (t.role === "user" && t.final) {
        // The final line replaces the partials of the utterance.
        if (lines.partial) {
          lines.partial.remove();
          delete lines.partial;
        }
      }
      var p = lines[key];
      if (!t.text) {
        if (p) {
          p.remove();
          delete lines[key];
        }
        return;
      }
      if (!p) {
        p = doc.createElement("p");
        p.className = t.role;
        p.setAttribute("data-role", t.role);
        captions.appendChild(p);
        lines[key] = p;
      }
      p.textContent = (t.role === "user" ? "You: " : "Assistant: ") + t.text;
      p.setAttribute("data-final", t.final ? "true" : "false");
      captions.scrollTop = captions.scrollHeight;
    }

    function idle() {
      call = null;
      btn.removeAttribute("data-active");
      btn.textContent = opts.label || "Call assistant";
      btn.disabled = false;
      muteBtn.hidden = true;
      muteBtn.setAttribute("aria-pressed", "false");
      muteBtn.textContent = "Mute";
    }

    function begin() {
      captions.textContent = "";
      lines = {};
      setStatus("connecting");
      btn.setAttribute("data-active", "");
      btn.textContent = "Hang up";
      var p = opts.gatewayUrl ? joinWith(opts, wire) : startWith(opts, wire);
      p.then(
        function () {
          muteBtn.hidden = false;
        },
        function (err) {
          // A hang-up before the call connected is no failure.
          if (err.code !== "ended") setStatus("error", "Call failed: " + err.message);
          idle();
        },
      );
    }

    function wire(c) {
      call = c;
      c.on("state", function (s) {
        setStatus(s);
      });
      c.on("transcript", caption);
      c.on("error", function (e) {
        if (e.fatal) setStatus("error", "Call failed: " + e.message);
      });
      c.on("ended", function (e) {
        if (status.getAttribute("data-state") !== "error") setStatus("ended", "Call ended" + (e.endedReason ? " (" + e.endedReason + ")" : ""));
        idle();
      });
      if (opts.onCall) opts.onCall(c);
    }

    btn.addEventListener("click", function () {
      if (call) {
        btn.disabled = true;
        call.hangup();
      } else begin();
    });
    muteBtn.addEventListener("click", function () {
      if (!call) return;
      var m = call.mute(!call.muted);
      muteBtn.setAttribute("aria-pressed", m ? "true" : "false");
      muteBtn.textContent = m ? "Unmute" : "Mute";
    });

    return {
      element: host,
      button: btn,
      get call() {
        return call;
      },
      start: function () {
        if (!call) btn.click();
      },
      hangup: function () {
        if (call) call.hangup();
      },
      unmount: function () {
        if (call) call.hangup();
        host.remove();
      },
    };
  }

  // The one-tag embed: <script src=".../widget.js" data-assistant-id data-public-key>.
  function autoMount(script) {
    var d = script.dataset;
    if (!d.assistantId || !d.publicKey) return;
    var opts = { assistantId: d.assistantId, publicKey: d.publicKey, test: d.test !== undefined };
    if (d.baseUrl) opts.baseUrl = d.baseUrl;
    if (d.label) opts.label = d.label;
    var place = function () {
      var target = d.target ? root.document.querySelector(d.target) : null;
      if (!target) {
        target = root.document.createElement("div");
        if (script.parentNode && script.parentNode !== root.document.head) script.parentNode.insertBefore(target, script.nextSibling);
        else root.document.body.appendChild(target);
      }
      mount(target, opts);
    };
    if (root.document.readyState === "loading") root.document.addEventListener("DOMContentLoaded", place);
    else place();
  }

  var api = {
    version: VERSION,
    // _setBase is for widget.mjs: a module has no document.currentScript,
    // so it says where it was loaded from (import.meta.url).
    _setBase: function (url) {
      try {
        defaultBase = new URL(url).origin;
      } catch (e) {
        /* keep the page's origin */
      }
    },
    start: start,
    join: join,
    mount: mount,
    CallSession: CallSession,
    WORKLET_VERSION: WORKLET_VERSION,
  };
  if (currentScript && currentScript.dataset) autoMount(currentScript);
  return api;
});
