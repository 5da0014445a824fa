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
  const siezen = chat.dataset.siezen === "1";
  const banner = document.getElementById("conn-banner");
  const bannerText = document.getElementById("conn-text");
  const countdown = document.getElementById("conn-countdown");
  const announcer = document.getElementById("announce");
  let current = null;
  let busy = false;
  let socket = null;
  let retry = 0;
  let reconnectTimer = null;
  let countdownTimer = null;
  let unsent = false; // a message could not be sent: it waits in the input for "Erneut senden"
  let sendOnOpen = false;

  // The person's form of address: "Sie" when she asked for it, "du" otherwise.
  function t(du, sie) { return siezen ? sie : du; }

  // The unsent text survives a reconnect and a reload: kept per chat in localStorage.
  const DRAFT_KEY = "novaberg.entwurf." + (sessionId || "neu");
  function saveDraft() {
    try {
      if (input.value) localStorage.setItem(DRAFT_KEY, input.value);
      else localStorage.removeItem(DRAFT_KEY);
    } catch (e) { /* private mode: the draft lives as long as the page */ }
  }
  function loadDraft() {
    try { return localStorage.getItem(DRAFT_KEY) || ""; } catch (e) { return ""; }
  }

  // Nova's finished reply is announced once to screen readers (never token by token).
  function announce(text) {
    if (!announcer) return;
    announcer.textContent = "";
    setTimeout(function () { announcer.textContent = text; }, 50);
  }

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

  function online() { return !!socket && socket.readyState === WebSocket.OPEN; }

  // Without a connection nothing is sent and nothing is lost: the text stays in the input,
  // the banner says so and offers "Erneut senden" (sent by itself once the socket is back).
  function send(text) {
    if (busy || !text.trim()) return false;
    if (!online()) {
      // A quick answer or "Noch einmal fragen" puts its words into the input, to be sent later.
      if (!input.value.trim()) { input.value = text; saveDraft(); }
      unsent = true;
      showBanner();
      return false;
    }
    const welcome = document.getElementById("welcome");
    if (welcome) welcome.remove();
    list.querySelectorAll(".regenerate").forEach(function (b) { b.remove(); });
    add("user", text);
    socket.send(JSON.stringify({ text: text }));
    setBusy(true);
    return true;
  }

  // Copy and "Noch einmal fragen" under a finished reply. Asking again sends the same words
  // of the person once more, as a new turn (the earlier answer stays in the chat).
  function questionOf(li) {
    let prev = li.previousElementSibling;
    while (prev && !prev.classList.contains("user")) prev = prev.previousElementSibling;
    return prev ? (prev.querySelector(".text") || prev).textContent : "";
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const area = el("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "visually-hidden";
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copy"));
  }

  function addReplyActions(li, isLast) {
    if (li.querySelector(".reply-actions")) return;
    const box = el("div", "reply-actions");
    // A turn whose server died has no reply to copy (conversation/reaper.py); it was never
    // answered, so asking again is offered wherever it stands.
    const interrupted = li.dataset.status === "unterbrochen";
    const copy = el("button", "copy", "Kopieren");
    copy.type = "button";
    copy.setAttribute("aria-label", "Antwort kopieren");
    copy.addEventListener("click", function () {
      copyText(textOf(li).innerText || textOf(li).textContent).then(function () {
        copy.textContent = "Kopiert";
        statusLine.textContent = "Die Antwort ist in der Zwischenablage.";
        setTimeout(function () { copy.textContent = "Kopieren"; }, 2000);
      }, function () {
        statusLine.textContent = "Kopieren hat nicht geklappt – bitte den Text markieren und kopieren.";
      });
    });
    if (!interrupted) box.appendChild(copy);
    const asked = questionOf(li);
    // Not under an open confirmation question: asking again would not answer it.
    if ((isLast || interrupted) && asked && li.dataset.status !== "rueckfrage") {
      const again = el("button", "regenerate", "Noch einmal fragen");
      again.type = "button";
      again.setAttribute("aria-label", "Dieselbe Nachricht noch einmal an Nova senden");
      again.addEventListener("click", function () { send(asked); });
      box.appendChild(again);
    }
    li.appendChild(box);
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

  // The citation viewer: the cited lines with a few lines around them (marked), line numbers,
  // the file's path inside its folder, and "Ganze Datei öffnen" (bounded by the read API).
  const CONTEXT_LINES = 3;
  const rootsById = {};
  const viewerLines = document.getElementById("viewer-lines");
  const viewerNote = document.getElementById("viewer-note");
  const viewerWhole = document.getElementById("viewer-whole");
  let viewerRec = null;

  function rangeOf(lines) {
    const m = String(lines || "").match(/^(\d+)(?:\s*-\s*(\d+))?$/);
    if (!m) return null;
    const a = parseInt(m[1], 10);
    return { start: a, end: m[2] ? parseInt(m[2], 10) : a };
  }

  function showLines(data, cited) {
    viewerLines.textContent = "";
    const first = parseInt(String(data.lines).split("-")[0], 10) || 1;
    const rows = String(data.text).split("\n");
    let firstCited = null;
    rows.forEach(function (line, k) {
      const n = first + k;
      const li = el("li", "line");
      li.value = n;
      const isCited = cited && n >= cited.start && n <= cited.end;
      if (isCited) { li.classList.add("cited"); if (!firstCited) firstCited = li; }
      li.appendChild(el("span", "line-no", String(n)));
      li.appendChild(el(isCited ? "mark" : "span", "line-text", line || " "));
      viewerLines.appendChild(li);
    });
    viewerLines.setAttribute("start", String(first));
    if (firstCited) firstCited.scrollIntoView({ block: "center" });
  }

  function loadLines(rec, whole) {
    const cited = rangeOf(rec.lines);
    let url = "/api/roots/" + encodeURIComponent(rec.root_id) + "/file/?path=" + encodeURIComponent(rec.path);
    if (!whole && cited) {
      url += "&lines=" + Math.max(1, cited.start - CONTEXT_LINES) + "-" + (cited.end + CONTEXT_LINES);
    }
    viewerLines.textContent = "";
    viewerNote.textContent = "lädt …";
    viewerWhole.hidden = !!whole;
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (body) {
          return r.ok ? body : Promise.reject({ code: r.status, body: body });
        });
      })
      .then(function (data) {
        showLines(data, cited);
        let note = cited ? "Markiert: " + (cited.start === cited.end ? "Zeile " + cited.start : "Zeilen " + cited.start + "–" + cited.end) + "." : "";
        if (whole && data.cut) note += " Die Datei ist länger: Gezeigt werden die Zeilen " + String(data.lines).replace("-", "–") + ".";
        if (data.changed) note += " Die Datei hat sich seit dem Einlesen geändert; die Zeilen können verschoben sein.";
        viewerNote.textContent = note.trim();
      })
      .catch(function (err) {
        const code = err && err.code;
        const reason = err && err.body && (err.body.reason || err.body.detail);
        viewerNote.textContent = code === 404
          ? "Diese Stelle gibt es nicht (mehr) in den freigegebenen Ordnern."
          : reason || ("Die Stelle konnte nicht geladen werden" + (code ? " (Fehler " + code + ")." : ": keine Verbindung zum Server."));
      });
  }

  function openCitation(rec) {
    viewerRec = rec;
    const cited = rangeOf(rec.lines);
    const name = String(rec.path || "").split("/").pop();
    document.getElementById("viewer-title").textContent = name + (cited ? (cited.start === cited.end ? ", Zeile " + cited.start : ", Zeilen " + cited.start + "–" + cited.end) : "");
    const root = rootsById[rec.root_id];
    const where = document.getElementById("viewer-path");
    where.textContent = "";
    where.appendChild(el("span", "label", "Datei: "));
    where.appendChild(el("code", "rel-path", rec.path));
    if (root) {
      where.appendChild(document.createTextNode(" im Ordner "));
      where.appendChild(el("code", "root-path", root));
    }
    if (viewer.showModal) viewer.showModal(); else viewer.setAttribute("open", "");
    loadLines(rec, false);
  }
  if (viewerWhole) viewerWhole.addEventListener("click", function () { if (viewerRec) loadLines(viewerRec, true); });

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
    if (records.some(function (rec) { return rec.folder_still_indexing; })) {
      box.appendChild(el("span", "records-partial", "Ordner wird noch gelesen – die Antwort kann unvollständig sein."));
    }
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
    addReplyActions(li, true);
    announce("Nova antwortet: " + (text.innerText || text.textContent));
    scroll();
  }

  // Replies rendered by the server: records, buttons for the last open question, links.
  const rendered = list.querySelectorAll(".msg.assistant");
  rendered.forEach(function (li, i) {
    if (li.dataset.records) addRecords(li, JSON.parse(li.dataset.records));
    if (li.dataset.status === "rueckfrage" && i === rendered.length - 1) addQuickButtons(li);
    addReplyActions(li, i === rendered.length - 1 && li === list.lastElementChild);
  });
  scroll();

  // Connection banner: what happened, when the next try comes, a button to try now.
  const BACKOFF_S = [1, 2, 4, 8, 15, 30];
  function showBanner(seconds) {
    if (!banner) return;
    let text = "Keine Verbindung zum Server.";
    if (unsent) {
      text += t(" Deine Nachricht wurde nicht gesendet – sie bleibt im Eingabefeld.",
        " Ihre Nachricht wurde nicht gesendet – sie bleibt im Eingabefeld.");
    }
    if (bannerText.textContent !== text) bannerText.textContent = text;
    if (seconds !== undefined) {
      let left = seconds;
      clearInterval(countdownTimer);
      countdown.textContent = "Neuer Versuch in " + left + " s …";
      countdownTimer = setInterval(function () {
        left -= 1;
        countdown.textContent = left > 0 ? "Neuer Versuch in " + left + " s …" : "Verbinde …";
        if (left <= 0) clearInterval(countdownTimer);
      }, 1000);
    }
    banner.hidden = false;
    chat.classList.add("offline");
  }

  function hideBanner() {
    if (!banner) return;
    banner.hidden = true;
    clearInterval(countdownTimer);
    chat.classList.remove("offline");
  }

  function reconnectNow() {
    if (!sessionId) return;
    clearTimeout(reconnectTimer);
    clearInterval(countdownTimer);
    if (countdown) countdown.textContent = "Verbinde …";
    if (!socket || socket.readyState === WebSocket.CLOSED) connect();
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(proto + "://" + location.host + "/ws/sessions/" + sessionId + "/");
    socket.onopen = function () {
      retry = 0;
      statusLine.textContent = "";
      chat.classList.add("online");
      const wasDown = banner && !banner.hidden;
      hideBanner();
      if (wasDown) statusLine.textContent = "Wieder verbunden.";
      if (unsent && sendOnOpen) { sendOnOpen = false; form.requestSubmit(); }
      updateRetry();
    };
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
        refreshTitle(); // the first message names a new chat
      } else if (msg.type === "note") {
        // The tribunal's note under the reply it judged (a broken rule, an unbelegte Quelle).
        const judged = list.querySelector('.msg.assistant[data-turn="' + msg.turn_id + '"]');
        if (judged && !judged.querySelector(".note")) {
          const note = el("p", "note", msg.text);
          note.setAttribute("role", "note");
          const text = textOf(judged);
          if (text && text.nextSibling) judged.insertBefore(note, text.nextSibling); else judged.appendChild(note);
          announce(msg.text);
        }
      } else if (msg.type === "error") {
        add("assistant failed", msg.text);
        current = null;
        setBusy(false);
      }
    };
    socket.onclose = function (ev) {
      chat.classList.remove("online");
      if (current) {
        // The reply broke off with the connection: said under it, and it can be asked again.
        current.classList.remove("streaming");
        current.classList.add("failed");
        current.appendChild(el("p", "interrupted", "Die Antwort wurde unterbrochen, weil die Verbindung weg war."));
        addReplyActions(current, true);
        current = null;
      }
      setBusy(false);
      if (ev.code === 4401) {
        bannerText.textContent = t("Du bist nicht mehr angemeldet. Bitte melde dich neu an.",
          "Sie sind nicht mehr angemeldet. Bitte melden Sie sich neu an.");
        banner.hidden = false;
        document.getElementById("reconnect-now").hidden = true;
        return;
      }
      if (ev.code === 4404) {
        bannerText.textContent = "Dieses Gespräch gibt es nicht mehr.";
        banner.hidden = false;
        document.getElementById("reconnect-now").hidden = true;
        return;
      }
      const wait = BACKOFF_S[Math.min(retry, BACKOFF_S.length - 1)];
      retry += 1;
      showBanner(wait);
      updateRetry();
      clearTimeout(reconnectTimer);
      reconnectTimer = setTimeout(connect, wait * 1000);
    };
  }

  // "Erneut senden": at once when connected, else as soon as the connection is back.
  const retryButton = document.getElementById("retry-send");
  function updateRetry() {
    if (!retryButton) return;
    retryButton.hidden = !unsent || !input.value.trim();
  }
  if (retryButton) {
    retryButton.addEventListener("click", function () {
      if (online()) { form.requestSubmit(); return; }
      sendOnOpen = true;
      reconnectNow();
    });
  }
  const reconnectButton = document.getElementById("reconnect-now");
  if (reconnectButton) reconnectButton.addEventListener("click", reconnectNow);
  window.addEventListener("online", reconnectNow);

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (send(input.value)) {
      input.value = "";
      unsent = false;
      saveDraft();
    }
    updateRetry();
  });
  input.addEventListener("input", function () { saveDraft(); updateRetry(); });
  if (!input.value) input.value = loadDraft();
  input.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
  });

  // The example prompts of a new chat fill the input; the person sends them herself.
  document.querySelectorAll(".welcome .example").forEach(function (button) {
    button.addEventListener("click", function () {
      input.value = button.dataset.prompt || "";
      saveDraft();
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
      }, "Keine aktiven Regeln.");
    }).catch(function () {
      fillList("directives", [], null, "Die Regeln sind gerade nicht abrufbar.");
    });
    getJson("/api/roots/").then(function (data) {
      fillList("roots", listOf(data), function (r) {
        rootsById[r.id] = r.path || r.resolved_path || "";
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

  // ---- Chat management: the list as a drawer on a phone, search, rename, delete. ----------
  const drawer = document.getElementById("drawer");
  const drawerOpen = document.getElementById("drawer-open");
  const drawerClose = document.getElementById("drawer-close");
  const backdrop = document.getElementById("drawer-backdrop");
  const phone = window.matchMedia("(max-width: 900px)");
  let drawerReturn = null;

  // Tab and Shift+Tab wrap inside an open drawer or dialog: focus never leaves it.
  function trapFocus(box, active) {
    box.addEventListener("keydown", function (ev) {
      if (ev.key !== "Tab" || !active()) return;
      const items = Array.prototype.filter.call(
        box.querySelectorAll("a[href], button, input, textarea, select, [tabindex]:not([tabindex='-1'])"),
        function (n) { return !n.disabled && !n.hidden && n.offsetParent !== null; });
      if (!items.length) return;
      const first = items[0];
      const last = items[items.length - 1];
      if (ev.shiftKey && document.activeElement === first) { ev.preventDefault(); last.focus(); }
      else if (!ev.shiftKey && document.activeElement === last) { ev.preventDefault(); first.focus(); }
    });
  }
  document.querySelectorAll("dialog").forEach(function (d) { trapFocus(d, function () { return d.open; }); });

  function drawerIsOpen() { return document.body.classList.contains("drawer-open"); }
  // On a phone the drawer is modal: the rest of the page is inert (focus stays inside) and
  // Escape closes it; on a wide screen the list is always there and never inert.
  function setDrawer(open) {
    const layoutParts = document.querySelectorAll(".chat, .side, header.top");
    document.body.classList.toggle("drawer-open", open);
    if (backdrop) backdrop.hidden = !open;
    if (drawerOpen) drawerOpen.setAttribute("aria-expanded", open ? "true" : "false");
    layoutParts.forEach(function (part) { part.inert = open; });
    if (drawer) {
      if (phone.matches && !open) drawer.setAttribute("inert", ""); else drawer.removeAttribute("inert");
    }
    if (open) {
      drawerReturn = document.activeElement;
      const first = drawer.querySelector(".new-chat button");
      if (first) first.focus();
    } else if (drawerReturn && drawerReturn.focus) {
      drawerReturn.focus();
      drawerReturn = null;
    }
  }
  if (drawer) {
    if (phone.matches) drawer.setAttribute("inert", "");
    trapFocus(drawer, function () { return drawerIsOpen(); });
    phone.addEventListener("change", function () { setDrawer(false); });
    if (drawerOpen) drawerOpen.addEventListener("click", function () { setDrawer(true); });
    if (drawerClose) drawerClose.addEventListener("click", function () { setDrawer(false); });
    if (backdrop) backdrop.addEventListener("click", function () { setDrawer(false); });
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape" && drawerIsOpen()) { ev.preventDefault(); setDrawer(false); }
    });
  }

  function csrfToken() {
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function api(method, url, body) {
    const headers = { Accept: "application/json", "X-CSRFToken": csrfToken() };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(url, {
      method: method, credentials: "same-origin", headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(function (r) {
      if (r.status === 204) return null;
      return r.json().catch(function () { return {}; }).then(function (data) {
        return r.ok ? data : Promise.reject(data.reason || data.detail ||
          "Das hat nicht geklappt (Fehler " + r.status + ").");
      });
    }, function () { return Promise.reject("Keine Verbindung zum Server. Bitte gleich noch einmal versuchen."); });
  }

  // Search: title and text of her own chats (GET /api/sessions/?q=), as she types.
  const chatList = document.getElementById("chat-list");
  const searchInput = document.getElementById("chat-q");
  const searchNote = document.getElementById("search-note");
  let initialList = null; // the list as the page drew it, kept while a search is shown
  let searchTimer = null;
  let searchSeq = 0;

  function dateText(iso) {
    const d = new Date(iso);
    const two = function (n) { return (n < 10 ? "0" : "") + n; };
    return two(d.getDate()) + "." + two(d.getMonth() + 1) + ". " + two(d.getHours()) + ":" + two(d.getMinutes());
  }

  function showResults(rows, query) {
    chatList.textContent = "";
    rows.forEach(function (row) {
      const li = el("li", String(row.id) === String(sessionId) ? "active" : "");
      const a = el("a");
      a.href = "/chat/" + row.id + "/";
      a.appendChild(el("span", "chat-name", row.title));
      if (row.match) a.appendChild(el("span", "chat-match", row.match));
      a.appendChild(el("small", "", dateText(row.updated_at)));
      li.appendChild(a);
      chatList.appendChild(li);
    });
    searchNote.textContent = rows.length === 1 ? "1 Gespräch gefunden."
      : rows.length ? rows.length + " Gespräche gefunden." : "Kein Gespräch enthält „" + query + "“.";
  }

  function runSearch() {
    const query = searchInput.value.trim();
    const seq = ++searchSeq;
    if (!query) {
      if (initialList !== null) chatList.innerHTML = initialList;
      initialList = null;
      searchNote.textContent = "";
      return;
    }
    if (initialList === null) initialList = chatList.innerHTML;
    api("GET", "/api/sessions/?q=" + encodeURIComponent(query)).then(function (rows) {
      if (seq === searchSeq) showResults(rows || [], query);
    }, function (reason) {
      if (seq === searchSeq) searchNote.textContent = "Die Suche ging nicht: " + reason;
    });
  }
  if (searchInput && chatList) {
    searchInput.addEventListener("input", function () {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(runSearch, 250);
    });
    searchInput.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") { ev.preventDefault(); clearTimeout(searchTimer); runSearch(); }
    });
  }

  // The title as the server has it (her own, else the automatic one from the first message).
  function refreshTitle() {
    if (!sessionId) return;
    api("GET", "/api/sessions/" + sessionId + "/").then(function (row) {
      setTitle(row.title);
    }, function () { /* the old title stays; nothing else depends on it */ });
  }

  function setTitle(title) {
    const heading = document.getElementById("chat-title");
    if (heading) heading.textContent = title;
    const name = document.getElementById("delete-name");
    if (name) name.textContent = title;
    document.querySelectorAll("#chat-list li.active .chat-name").forEach(function (n) { n.textContent = title; });
  }

  // Rename and delete the open chat: each in a modal dialog (focus inside, Escape closes).
  const titleEl = document.getElementById("chat-title");
  const renameDialog = document.getElementById("rename-dialog");
  const renameInput = document.getElementById("rename-input");
  const renameError = document.getElementById("rename-error");
  const renameOpen = document.getElementById("rename-open");
  if (renameDialog && renameOpen) {
    renameOpen.addEventListener("click", function () {
      renameInput.value = titleEl.textContent;
      renameError.textContent = "";
      renameDialog.showModal();
      renameInput.select();
    });
    document.getElementById("rename-form").addEventListener("submit", function (ev) {
      if (!ev.submitter || ev.submitter.value !== "save") return; // "Abbrechen" just closes
      ev.preventDefault();
      api("PATCH", "/api/sessions/" + sessionId + "/", { title: renameInput.value }).then(function (row) {
        setTitle(row.title);
        renameDialog.close();
        statusLine.textContent = "Umbenannt in „" + row.title + "“.";
        renameOpen.focus();
      }, function (reason) { renameError.textContent = reason; });
    });
  }

  const deleteDialog = document.getElementById("delete-dialog");
  const deleteOpen = document.getElementById("delete-open");
  if (deleteDialog && deleteOpen) {
    deleteOpen.addEventListener("click", function () {
      document.getElementById("delete-error").textContent = "";
      deleteDialog.showModal();
    });
    document.getElementById("delete-form").addEventListener("submit", function (ev) {
      if (!ev.submitter || ev.submitter.value !== "delete") return;
      ev.preventDefault();
      api("DELETE", "/api/sessions/" + sessionId + "/").then(function () {
        try { localStorage.removeItem(DRAFT_KEY); } catch (e) { /* nothing kept */ }
        location.assign("/");
      }, function (reason) { document.getElementById("delete-error").textContent = reason; });
    });
  }

  // The composer stays above the on-screen keyboard: the page is as tall as what is visible.
  if (window.visualViewport) {
    const fit = function () {
      // Only the keyboard shrinks the page; a pinch zoom (scale > 1) leaves the layout alone.
      if (Math.abs(window.visualViewport.scale - 1) > 0.01) return;
      document.documentElement.style.setProperty("--vvh", window.visualViewport.height + "px");
    };
    window.visualViewport.addEventListener("resize", fit);
    fit();
  }

  // Without a session (no conversation yet) the page offers to start one; nothing to connect.
  if (sessionId) connect();
  loadSide();
  setInterval(loadSide, 15000);
})();
