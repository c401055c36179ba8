// Switchboard dashboard: "Talk to this assistant". The widget (/widget.js,
// same origin) joins a web call the dashboard creates for the signed-in
// operator: POST /ui/assistants/{id}/talk with the page's CSRF token
// answers the call's gateway URL. No inline script: the CSP allows only
// files of this origin.
"use strict";
(function () {
  var el = document.getElementById("talk");
  if (!el || !window.Switchboard) return;
  Switchboard.mount(el, {
    label: "Talk to this assistant",
    gatewayUrl: function () {
      var body = new URLSearchParams();
      body.set("csrf", el.dataset.csrf);
      return fetch(el.dataset.talk, { method: "POST", body: body, credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error("the dashboard could not start the call (HTTP " + r.status + ")");
        return r.text();
      });
    },
  });
})();
