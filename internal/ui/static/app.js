// Switchboard dashboard: live updates of calls in progress. The pages work
// without it; with it, a page whose <body> names a stream (data-events)
// follows it: the calls listing updates its rows (and adds new calls on its
// first unfiltered page), a call's page its status and transcript, and
// reloads when the call has ended (to show its analysis and recording).
// No inline script: the CSP allows only this file.
"use strict";
(function () {
  var url = document.body.dataset.events;
  if (!url || !window.EventSource) return;
  var source = new EventSource(url);

  function setField(root, name, value) {
    var el = root.querySelector('[data-field="' + name + '"]');
    if (!el) return;
    el.textContent = value || (root.tagName === "TR" ? "" : "—");
    if (name === "statusText") el.className = "status status-" + value;
  }

  function cell(label, text, field, cls) {
    var td = document.createElement("td");
    td.dataset.label = label;
    td.textContent = text || "";
    if (field) td.dataset.field = field;
    if (cls) td.className = cls;
    return td;
  }

  // withSub adds a cell's second line (templates/calls.html: span.sub).
  function withSub(td, text) {
    if (!text) return td;
    var sub = document.createElement("span");
    sub.className = "sub";
    sub.textContent = text;
    td.appendChild(document.createTextNode(" "));
    td.appendChild(sub);
    return td;
  }

  // newRow is a listing row, as templates/calls.html writes one.
  function newRow(c) {
    var tr = document.createElement("tr");
    tr.dataset.callId = c.id;
    tr.className = "fresh";
    var link = document.createElement("a");
    link.href = "/ui/calls/" + encodeURIComponent(c.id);
    link.title = c.id;
    link.textContent = c.id;
    var first = cell("Call", "", "", "id");
    first.appendChild(link);
    tr.appendChild(first);
    tr.appendChild(cell("Assistant", c.assistant || "\u2014", "", "name"));
    tr.appendChild(withSub(cell("Type", c.type), c.direction));
    var parties = cell("From \u2192 To", c.from || c.to ? c.from || "\u2014" : "\u2014", "", "parties");
    tr.appendChild(c.from || c.to ? withSub(parties, "\u2192 " + (c.to || "\u2014")) : parties);
    var st = cell("Status", "");
    var badge = document.createElement("span");
    badge.dataset.field = "statusText";
    st.appendChild(badge);
    tr.appendChild(st);
    tr.appendChild(cell("Outcome", "", "outcome"));
    tr.appendChild(cell("Ended reason", "", "endedReason", "reason"));
    tr.appendChild(cell("Created", c.created, "", "created"));
    tr.appendChild(cell("Duration", "", "duration"));
    return tr;
  }

  source.addEventListener("call", function (e) {
    var c = JSON.parse(e.data);
    var root = document.querySelector('[data-call-id="' + CSS.escape(c.id) + '"]');
    if (!root) {
      var table = document.getElementById("calls");
      if (!table) return;
      if (table.dataset.insert === "true") {
        root = newRow(c);
        table.tBodies[0].insertBefore(root, table.tBodies[0].firstChild);
      } else {
        var note = document.getElementById("new-calls");
        if (note) note.hidden = false;
        return;
      }
    }
    setField(root, "statusText", c.statusText);
    setField(root, "outcome", c.outcome);
    setField(root, "endedReason", c.endedReason);
    setField(root, "duration", c.duration);
  });

  source.addEventListener("turn", function (e) {
    var t = JSON.parse(e.data);
    var list = document.getElementById("transcript");
    if (!list || list.querySelector('[data-seq="' + t.seq + '"]')) return;
    var li = document.createElement("li");
    li.className = "turn turn-" + t.role + (t.interrupted ? " interrupted" : "");
    li.dataset.seq = t.seq;
    var who = document.createElement("span");
    who.className = "who";
    who.textContent = t.role;
    var text = document.createElement("span");
    text.className = "text";
    text.textContent = t.text;
    var at = document.createElement("span");
    at.className = "at";
    at.textContent = t.clock;
    li.appendChild(who);
    li.appendChild(text);
    if (t.interrupted) {
      var flag = document.createElement("span");
      flag.className = "flag";
      flag.textContent = "interrupted";
      li.appendChild(flag);
    }
    li.appendChild(at);
    list.appendChild(li);
    var empty = document.getElementById("no-turns");
    if (empty) empty.remove();
  });

  // The call ended, or the session did: the page reloads (a signed-out
  // reload lands on the sign-in page).
  source.addEventListener("end", function () {
    source.close();
    window.location.reload();
  });
})();
