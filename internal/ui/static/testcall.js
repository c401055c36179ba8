// Switchboard dashboard: "Place a test call", the browser call. The widget
// (/widget.js, same origin) joins the web call the dashboard created for
// this session: its gateway URL is on the page (data-gateway), so the
// browser holds no key (the widget's keyless join). Once the call is
// connected the form sends typed text as the caller's turns. No inline
// script: the CSP allows only files of this origin.
"use strict";
(function () {
  var el = document.getElementById("talk-widget");
  var form = document.getElementById("talk-text");
  if (!el || !form || !window.Switchboard) return;
  var current = null;
  Switchboard.mount(el, {
    label: "Join with the microphone",
    gatewayUrl: function () {
      return el.dataset.gateway;
    },
    onCall: function (call) {
      current = call;
      call.on("state", function (s) {
        form.hidden = s === "connecting" || s === "ended" || s === "error";
      });
    },
  });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var input = form.elements.text;
    if (current && input.value.trim() !== "" && current.sendText(input.value)) input.value = "";
  });
})();
