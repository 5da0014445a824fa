// The header badge shows the model's real state (erreichbar / langsam / nicht erreichbar):
// asked from GET /api/llm/status/ on load and every 20 seconds (novaberg/health.py::badge).
(function () {
  "use strict";
  var badge = document.getElementById("backend-label");
  if (!badge) return;
  var PERIOD_MS = 20000;

  function show(status) {
    if (!status || typeof status.label !== "string") return;
    badge.textContent = status.label;
    if (status.address) {
      var address = document.createElement("span");
      address.className = "dev-only";
      address.textContent = ": " + status.address;
      badge.appendChild(address);
    }
    badge.className = "backend state-" + status.state + (status.offline ? " offline" : "");
    badge.dataset.state = status.state;
    badge.title = status.sentence || "";
  }

  function ask() {
    fetch("/api/llm/status/", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (answer) { return answer.ok ? answer.json() : null; })
      .then(show)
      .catch(function () { /* the server itself is away: the chat's own banner says so */ });
  }

  ask();
  window.setInterval(ask, PERIOD_MS);
})();
