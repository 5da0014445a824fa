// The chat: sends the person's words over the WebSocket and shows Nova's reply as it streams.
// Every text from the server is set with textContent: nothing is ever parsed as HTML, except
// the finished reply's `reply_html`, which the server rendered from Markdown and sanitised
// (conversation/rendering.py: markdown-it-py without raw HTML, then nh3's allow-list).
(function () {
  "use strict";
  const chat = document.querySelector(".chat");
  if (!chat) return;
  const sessionId = chat.dataset.session;
  const list = document.getElementById("messages");
  const form = document.getElementById("composer");
  const input = document.getElementById("text");
  const statusLine = document.getElementById("status");
  const viewer = document.getElementById("viewer");
  const sendButton = document.getElementById("send");
  const stopButton = document.getElementById("stop");
  const isStaff = chat.dataset.staff === "1";
  let current = null;
  let busy = false;
  let socket = null;
  let retry = 0;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function scroll() { list.scrollTop = list.scrollHeight; }

  function add(role, text) {
    const li = el("li", "msg " + role);
    li.appendChild(el(role === "user" ? "span" : "div", "text", text));
    list.appendChild(li);
    scroll();
    return li;
  }

  function textOf(li) { return li.querySelector(".text"); }

  // While a reply runs, nothing else is sent: Send is disabled until "done" or "error".
  function setBusy(on) {
    busy = on;
    if (sendButton) sendButton.disabled = on;
    // Stop is there only while a reply runs (conversation/consumers.py: the "stop" frame).
    if (stopButton) { stopButton.hidden = !on; stopButton.disabled = false; }
    if (on && / gestoppt/.test(statusLine.textContent)) statusLine.textContent = "";
    chat.classList.toggle("busy", on);
  }
  if (stopButton) {
    stopButton.addEventListener("click", function () {
      if (!busy || !socket || socket.readyState !== WebSocket.OPEN) return;
      socket.send(JSON.stringify({ type: "stop" }));
      stopButton.disabled = true; // once is enough; "done" (abgebrochen) ends the turn
      statusLine.textContent = "Die Antwort wird gestoppt …";
    });
  }

  function send(text) {
    if (busy || !text.trim() || !socket || socket.readyState !== WebSocket.OPEN) return false;
    const welcome = document.getElementById("welcome");
    if (welcome) welcome.remove();
    add("user", text);
    socket.send(JSON.stringify({ text: text }));
    setBusy(true);
    return true;
  }

  // Confirmation questions are Nova's message; the person answers in words. The buttons only
  // send words as text, through the same consent reader: "Ja" / "Nein" for a yes/no question,
  // the two named choices for a choice question ("Antworte mit „meine“ oder „Novas“.").
  function answerWords(li) {
    const text = li.textContent || "";
    const named = text.match(/Antworte(?:n Sie)? mit „([^“]{1,40})“ oder „([^“]{1,40})“/);
    return named ? [named[1], named[2]] : ["Ja", "Nein"];
  }

  function addQuickButtons(li) {
    if (li.querySelector(".quick")) return;
    const box = el("div", "quick");
    answerWords(li).forEach(function (word) {
      const b = el("button", "quick-" + word.toLowerCase(), word);
      b.type = "button";
      b.addEventListener("click", function () {
        if (send(word)) box.remove();
      });
      box.appendChild(b);
    });
    li.appendChild(box);
  }

  function openCitation(rec) {
    const title = document.getElementById("viewer-title");
    const pre = document.getElementById("viewer-text");
    title.textContent = rec.citation;
    pre.textContent = "lädt …";
    if (viewer.showModal) viewer.showModal(); else viewer.setAttribute("open", "");
    const url = "/api/roots/" + encodeURIComponent(rec.root_id) + "/file/?path=" +
      encodeURIComponent(rec.path) + "&lines=" + encodeURIComponent(rec.lines);
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (data) { pre.textContent = data.text; })
      .catch(function (code) {
        pre.textContent = code === 404
          ? "Diese Stelle gibt es nicht (mehr) in den freigegebenen Unterlagen."
          : "Die Stelle konnte nicht geladen werden (" + code + ").";
      });
  }

  function addRecords(li, records) {
    if (!records || !records.length || li.querySelector(".records")) return;
    const box = el("div", "records");
    box.appendChild(el("span", "records-label", "Quellen"));
    records.forEach(function (rec) {
      const a = el("a", "citation chip", rec.citation);
      a.href = "#";
      a.title = "Stelle öffnen: " + rec.citation;
      a.addEventListener("click", function (ev) { ev.preventDefault(); openCitation(rec); });
      if (rec.archived) a.appendChild(el("span", "archived", " (archiviert)"));
      box.appendChild(a);
    });
    li.appendChild(box);
  }

  // Developer details (staff only, shown with the toggle): the inspector link and the timings.
  function addInspectorLink(li, turnId, ttft, total) {
    if (!isStaff || !turnId || li.querySelector(".meta")) return;
    const meta = el("div", "meta dev-only");
    const a = el("a", "inspect", "Ablauf");
    a.href = "/turns/" + turnId + "/";
    meta.appendChild(a);
    if (ttft !== null && ttft !== undefined) {
      meta.appendChild(document.createTextNode(" · erstes Wort nach " + ttft + " ms, fertig nach " + total + " ms"));
    }
    li.appendChild(meta);
  }

  function finish(li, msg) {
    li.dataset.turn = msg.turn_id;
    li.dataset.status = msg.status;
    const text = textOf(li);
    if (typeof msg.reply_html === "string") {
      text.innerHTML = msg.reply_html; // sanitised by the server, see the top of this file
      text.classList.add("md");
    } else {
      text.textContent = msg.reply;
    }
    if (msg.status === "rueckfrage") { li.classList.add("question"); addQuickButtons(li); }
    if (msg.status === "fehler") li.classList.add("failed");
    if (msg.status === "abgebrochen" && !li.querySelector(".stopped-note")) {
      // What had been said stays, marked as stopped.
      li.classList.add("stopped");
      text.insertAdjacentElement("afterend", el("p", "stopped-note", "abgebrochen"));
      statusLine.textContent = "Die Antwort wurde gestoppt.";
    }
    addRecords(li, msg.records);
    addInspectorLink(li, msg.turn_id, msg.ttft_ms, msg.total_ms);
    scroll();
  }

  // Replies rendered by the server: records, buttons for the last open question, links.
  const rendered = list.querySelectorAll(".msg.assistant");
  rendered.forEach(function (li, i) {
    if (li.dataset.records) addRecords(li, JSON.parse(li.dataset.records));
    if (li.dataset.status === "rueckfrage" && i === rendered.length - 1) addQuickButtons(li);
  });
  scroll();

  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(proto + "://" + location.host + "/ws/sessions/" + sessionId + "/");
    socket.onopen = function () { retry = 0; statusLine.textContent = ""; chat.classList.add("online"); };
    socket.onmessage = function (ev) {
      const msg = JSON.parse(ev.data);
      if (msg.type === "start") {
        list.querySelectorAll(".quick").forEach(function (q) { q.remove(); });
        current = add("assistant streaming", "");
      } else if (msg.type === "token" && current) {
        textOf(current).textContent += msg.text;
        scroll();
      } else if (msg.type === "done") {
        if (!current) current = add("assistant", "");
        current.classList.remove("streaming");
        finish(current, msg);
        current = null;
        setBusy(false);
        loadSide(); // a confirmed directive or root shows up at once
      } else if (msg.type === "note") {
        // The tribunal's note under the reply it judged (a broken rule, an unbelegte Quelle).
        const judged = list.querySelector('.msg.assistant[data-turn="' + msg.turn_id + '"]');
        if (judged && !judged.querySelector(".note")) {
          const note = el("p", "note", msg.text);
          note.setAttribute("role", "note");
          const text = textOf(judged);
          if (text && text.nextSibling) judged.insertBefore(note, text.nextSibling); else judged.appendChild(note);
        }
      } else if (msg.type === "error") {
        add("assistant failed", msg.text);
        current = null;
        setBusy(false);
      }
    };
    socket.onclose = function (ev) {
      chat.classList.remove("online");
      if (current) { current.classList.remove("streaming"); current = null; }
      setBusy(false);
      if (ev.code === 4401) { statusLine.textContent = "Bitte melde dich an."; return; }
      statusLine.textContent = "Verbindung unterbrochen – ich verbinde neu …";
      retry = Math.min(retry + 1, 5);
      setTimeout(connect, 500 * retry);
    };
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (send(input.value)) input.value = "";
  });
  input.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
  });

  // The example prompts of a new chat fill the input; the person sends them herself.
  document.querySelectorAll(".welcome .example").forEach(function (button) {
    button.addEventListener("click", function () {
      input.value = button.dataset.prompt || "";
      input.focus();
    });
  });

  // Developer details for staff: one switch, kept in localStorage across reloads.
  const devToggle = document.getElementById("dev-toggle");
  const DEV_KEY = "novaberg.entwicklerdetails";
  function showDev(on) {
    document.documentElement.classList.toggle("dev-on", on);
    if (devToggle) devToggle.checked = on;
  }
  if (devToggle) {
    let stored = false;
    try { stored = localStorage.getItem(DEV_KEY) === "1"; } catch (e) { stored = false; }
    showDev(stored);
    devToggle.addEventListener("change", function () {
      showDev(devToggle.checked);
      try { localStorage.setItem(DEV_KEY, devToggle.checked ? "1" : "0"); } catch (e) { /* private mode: for this page only */ }
    });
  }

  // Side panel: active directives and released roots with their index progress.
  function fillList(id, items, render, empty) {
    const ul = document.getElementById(id);
    ul.textContent = "";
    if (!items.length) { ul.appendChild(el("li", "muted", empty)); return; }
    items.forEach(function (item) { ul.appendChild(render(item)); });
  }

  function getJson(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); });
  }

  function listOf(data) { return Array.isArray(data) ? data : (data && data.results) || []; }

  function loadSide() {
    getJson("/api/directives/?active=true").then(function (data) {
      fillList("directives", listOf(data), function (d) {
        const li = el("li", "directive", d.text);
        if (d.context) li.appendChild(el("small", "muted", " (" + d.context + ")"));
        return li;
      }, "Keine aktiven Direktiven.");
    }).catch(function () {
      fillList("directives", [], null, "Direktiven sind gerade nicht abrufbar.");
    });
    getJson("/api/roots/").then(function (data) {
      fillList("roots", listOf(data), function (r) {
        const li = el("li", "root");
        li.appendChild(el("span", "path", r.path || r.resolved_path || ("#" + r.id)));
        li.appendChild(el("small", "state", " " + (r.state || "")));
        const p = r.progress || {};
        if (p.total) {
          const bar = el("progress");
          bar.max = p.total; bar.value = p.done || 0;
          bar.title = (p.done || 0) + " von " + p.total + " Dateien indexiert";
          li.appendChild(bar);
        }
        return li;
      }, "Noch kein Ordner freigegeben.");
    }).catch(function () {
      fillList("roots", [], null, "Die freigegebenen Ordner sind gerade nicht abrufbar.");
    });
  }

  // Without a session (no conversation yet) the page offers to start one; nothing to connect.
  if (sessionId) connect();
  loadSide();
  setInterval(loadSide, 15000);
})();
