// Switchboard dashboard: the assistant form. The system prompt is read
// only by a language model: while the model provider is "flow" the
// control is disabled (a disabled control is not posted, so a stored
// prompt is kept) and its note says why. The page is rendered in that
// state; this only follows the model provider select. No inline script:
// the CSP allows only files of this origin.
"use strict";
(function () {
  var form = document.getElementById("assistant-form");
  if (!form) return;
  var select = form.querySelector('select[name="model.provider"]');
  var prompt = document.getElementById("system-prompt");
  var note = document.getElementById("system-prompt-note");
  if (!select || !prompt || prompt.dataset.noModel) return; // no model on this server: always off
  select.addEventListener("change", function () {
    var off = select.value === "flow";
    prompt.disabled = off;
    if (note) note.hidden = !off;
  });
})();
