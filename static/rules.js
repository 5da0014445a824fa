// The rules page: every change asks first, with the chat's own question (POST
// /api/directives/proposals/), shows it word for word and answers it only on the click on
// "Ja, so machen" (POST …/proposals/{id}/answer/ {confirm: true}); "Abbrechen" answers
// {confirm: false}. Nothing here changes a rule by itself.
(function () {
  "use strict";
  const root = document.getElementById("regeln");
  if (!root) return;
  const api = root.dataset.api;
  const panel = document.getElementById("regeln-frage");
  const questionText = document.getElementById("frage-text");
  const statusLine = document.getElementById("regeln-status");
  const errorLine = document.getElementById("regeln-fehler");
  const newForm = document.getElementById("neu-form");
  let busy = false;
  let returnFocus = null;

  const csrf = () => (root.querySelector("[name=csrfmiddlewaretoken]") || {}).value || "";

  function say(text) {
    errorLine.textContent = "";
    statusLine.textContent = text || "";
  }

  function fail(text) {
    statusLine.textContent = "";
    errorLine.textContent = text || "Das hat nicht geklappt.";
  }

  async function post(url, body) {
    let res;
    try {
      res = await fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
        body: JSON.stringify(body),
      });
    } catch (err) {
      return { ok: false, data: { reason: "Der Server ist nicht erreichbar. Bitte gleich noch einmal versuchen." } };
    }
    let data = {};
    try {
      data = await res.json();
    } catch (err) {
      data = { reason: "Die Antwort des Servers ließ sich nicht lesen." };
    }
    return { ok: res.ok, status: res.status, data: data };
  }

  function setBusy(value) {
    busy = value;
    root.querySelectorAll("button").forEach((b) => { b.disabled = value; });
  }

  function showQuestion(pendingId, question) {
    panel.dataset.pending = String(pendingId);
    questionText.textContent = question; // word for word, as the gate stored it
    panel.hidden = false;
    panel.focus();
  }

  function hideQuestion() {
    panel.hidden = true;
    panel.dataset.pending = "";
    questionText.textContent = "";
  }

  async function refreshLists() {
    // The lists as the server renders them now (history included), swapped in place.
    try {
      const res = await fetch(window.location.pathname, { credentials: "same-origin" });
      const html = await res.text();
      const doc = new DOMParser().parseFromString(html, "text/html");
      const fresh = doc.getElementById("regeln-listen");
      if (fresh) document.getElementById("regeln-listen").replaceWith(fresh);
    } catch (err) {
      fail("Die Liste ließ sich nicht neu laden; bitte die Seite neu laden.");
    }
  }

  async function propose(order, origin) {
    if (busy) return;
    setBusy(true);
    say("Nova prüft den Auftrag …");
    const answer = await post(api, order);
    setBusy(false);
    const data = answer.data || {};
    if (!answer.ok) {
      fail(data.reason || data.detail || firstFieldError(data));
      return;
    }
    if (data.status === "rueckfrage" && data.pending_id) {
      returnFocus = origin || null;
      say("");
      showQuestion(data.pending_id, data.question || data.text);
      return;
    }
    // Nothing to ask (the rule reads so already, nothing to undo): Nova's sentence.
    say(data.text);
  }

  function firstFieldError(data) {
    for (const key of Object.keys(data || {})) {
      const value = data[key];
      if (Array.isArray(value) && value.length) return String(value[0]);
    }
    return "";
  }

  async function answerQuestion(consent) {
    const pendingId = panel.dataset.pending;
    if (!pendingId || busy) return;
    setBusy(true);
    const answer = await post(`${api}${pendingId}/answer/`, { confirm: consent });
    setBusy(false);
    const data = answer.data || {};
    if (!answer.ok) {
      fail(data.reason || data.detail || "Die Antwort ließ sich nicht senden.");
      return;
    }
    if (data.status === "rueckfrage" && data.pending_id) {
      showQuestion(data.pending_id, data.question || data.text);
      return;
    }
    hideQuestion();
    if (data.status === "fehler") fail(data.text);
    else say(data.text);
    if (consent && data.status === "abgeschlossen") {
      newForm.reset();
      await refreshLists();
    }
    const target = returnFocus && document.contains(returnFocus) ? returnFocus : document.querySelector("h1");
    returnFocus = null;
    if (target) {
      if (!target.hasAttribute("tabindex") && target.tagName === "H1") target.setAttribute("tabindex", "-1");
      target.focus();
    }
  }

  function cardOf(el) {
    return el.closest(".card");
  }

  root.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button || !root.contains(button)) return;
    if (button.dataset.answer) {
      answerQuestion(button.dataset.answer === "ja");
      return;
    }
    const action = button.dataset.action;
    if (!action) return;
    const card = cardOf(button);
    if (action === "edit" || action === "edit-cancel") {
      const form = card.querySelector(".edit-form");
      const open = action === "edit" && form.hidden;
      form.hidden = !open;
      const toggle = card.querySelector("[data-action=edit]");
      toggle.setAttribute("aria-expanded", String(open));
      if (open) form.querySelector("textarea").focus();
      else toggle.focus();
      return;
    }
    if (action === "undo") {
      propose({ action: "undo" }, button);
      return;
    }
    if (action === "delete" || action === "reactivate") {
      propose({ action: action, directive_id: Number(card.dataset.id) }, button);
    }
  });

  root.addEventListener("submit", (event) => {
    const form = event.target.closest("form.rule-form");
    if (!form) return;
    event.preventDefault();
    const text = form.querySelector("[name=text]").value.trim();
    if (!text) {
      fail("Bitte den Wortlaut der Regel eintragen.");
      form.querySelector("[name=text]").focus();
      return;
    }
    if (form.dataset.action === "create") {
      const context = (form.querySelector("[name=context]") || {}).value || "";
      propose({ action: "create", text: text, context: context.trim() }, form.querySelector("[name=text]"));
      return;
    }
    const card = cardOf(form);
    propose({ action: "update", directive_id: Number(card.dataset.id), text: text }, card.querySelector("[data-action=edit]"));
  });

  panel.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !panel.hidden) answerQuestion(false);
  });
})();
