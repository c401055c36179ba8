// The demo page's script (/widget/demo): reads the assistant and the key
// from the page's URL and mounts the call button. A file of its own, not
// inline, so the page keeps its Content-Security-Policy script-src 'self'.
(function () {
  "use strict";
  var q = new URLSearchParams(location.search);
  var assistantId = q.get("assistantId") || "";
  var publicKey = q.get("publicKey") || "";
  var gatewayUrl = q.get("gatewayUrl") || "";
  document.getElementById("assistantId").value = assistantId;
  document.getElementById("publicKey").value = publicKey;
  document.getElementById("gatewayUrl").value = gatewayUrl;
  var origin = location.origin;
  var snippet = document.getElementById("demo-snippet");
  snippet.textContent =
    '<script src="' + origin + '/widget.js" data-assistant-id="' + (assistantId || "asst_…") +
    '" data-public-key="' + (publicKey || "pk_…") + '" async></script>';
  var target = document.getElementById("demo-call");
  if (!assistantId && !gatewayUrl) {
    target.textContent = "Enter an assistant id and a publishable key to try it.";
    return;
  }
  var opts = gatewayUrl ? { gatewayUrl: gatewayUrl } : { assistantId: assistantId, publicKey: publicKey, baseUrl: origin };
  if (!gatewayUrl && !publicKey) {
    target.textContent = "A publishable key (pk_…) is needed to start a call from the browser.";
    return;
  }
  window.Switchboard.mount(target, opts);
})();
