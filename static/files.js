// Folders page: one release flow (path → the dry run → "Freigeben" / "Abbrechen"), then one
// card per folder whose progress is polled from its IndexRun (queued → counting → reading n / N).
(function () {
  "use strict";
  const section = document.getElementById("roots");
  const api = section.dataset.api || "/api/roots/";
  const sie = section.dataset.siezen === "1";
  const csrf = () => (document.querySelector("[name=csrfmiddlewaretoken]") || {}).value || "";
  const errorBox = document.getElementById("roots-error");
  const list = document.getElementById("roots-body");
  const form = document.getElementById("release-form");
  const gate = document.getElementById("gate");
  const $ = (id) => document.getElementById(id);

  // Why a file was skipped, in plain words (the reasons of files/watcher/scan.py).
  const SKIP = {
    verborgen: "verborgen (Name beginnt mit einem Punkt)",
    binaer: "keine Textdatei",
    zu_gross: "zu groß",
    format: "Dateiformat, das Nova nicht lesen kann",
    ausgeschlossen: "durch die Auswahl ausgeschlossen",
    link_nach_aussen: "Verknüpfung, die aus dem Ordner hinausführt",
    link_innen: "Verknüpfung auf eine Datei im selben Ordner (dort gelesen)",
    link_kaputt: "Verknüpfung ohne Ziel",
    link_schleife: "Verknüpfung, die im Kreis führt",
    nicht_lesbar: "keine Leseberechtigung",
    verschwunden: "beim Lesen verschwunden",
    pfad_unlesbar: "Name mit unlesbaren Zeichen",
    keine_datei: "keine gewöhnliche Datei",
  };
  const STATE = {
    angefragt: "wartet auf die Freigabe",
    aktiv: "freigegeben",
    stillgelegt: "stillgelegt",
    pfad_geaendert: "Pfad geändert",
  };

  function plural(n, one, many) {
    return `${n.toLocaleString("de-DE")} ${n === 1 ? one : many}`;
  }
  const files = (n) => plural(n, "Datei", "Dateien");

  function size(n) {
    if (n < 1024) return plural(n, "Byte", "Bytes");
    if (n < 1048576) return (n / 1024).toFixed(1).replace(".", ",") + " KB";
    return (n / 1048576).toFixed(1).replace(".", ",") + " MB";
  }

  function time(iso) {
    if (!iso) return "";
    return new Date(iso).toLocaleString("de-DE", {
      day: "2-digit", month: "2-digit", year: "numeric", hour: "2-digit", minute: "2-digit",
    });
  }

  function duration(seconds) {
    const s = Math.max(1, Math.round(seconds));
    if (s < 60) return plural(s, "Sekunde", "Sekunden");
    const m = Math.round(s / 60);
    if (m < 60) return plural(m, "Minute", "Minuten");
    return plural(Math.round(m / 6) / 10, "Stunde", "Stunden");
  }

  async function call(method, url, data) {
    let res;
    try {
      res = await fetch(url, {
        method,
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
        body: data === undefined ? undefined : JSON.stringify(data),
      });
    } catch (e) {
      throw new Error("Der Server ist gerade nicht erreichbar. Die Seite versucht es gleich wieder.");
    }
    const json = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(json.reason || json.detail || `Das hat nicht geklappt (Fehler ${res.status}).`);
    return json;
  }

  function skippedSummary(map) {
    const parts = Object.entries(map || {}).map(([k, n]) => `${files(n)}: ${SKIP[k] || k}`);
    return parts.length ? parts.join("; ") : "nichts";
  }

  function fillSkippedList(ul, items, counts) {
    ul.replaceChildren();
    for (const item of items || []) {
      const li = document.createElement("li");
      const code = document.createElement("code");
      code.textContent = item.path;
      li.append(code, " – " + (SKIP[item.reason] || item.reason));
      ul.appendChild(li);
    }
    const total = Object.values(counts || {}).reduce((a, b) => a + b, 0);
    const listed = (items || []).length;
    if (total > listed) {
      const li = document.createElement("li");
      li.className = "more";
      li.textContent = `… und ${files(total - listed)} mehr`;
      ul.appendChild(li);
    }
  }

  // ---- the release flow: path → dry run → Freigeben / Abbrechen ---------------------------

  let pending = null;

  function showGate(preview) {
    pending = preview.id;
    $("gate-path").textContent = preview.resolved_path;
    $("gate-count").textContent = `${files(preview.file_count)} (${size(preview.total_bytes || 0)})`;
    $("gate-skipped").textContent = skippedSummary(preview.skipped);
    $("gate-owner").textContent = preview.eigentum === "figur" ? "Nova (ihr eigenes Material)" : (sie ? "Ihnen" : "dir");
    fillSkippedList($("gate-skipped-list"), preview.skipped_files, preview.skipped);
    $("gate-skipped-list").hidden = !(preview.skipped_files || []).length;
    $("gate-text").textContent = preview.file_count
      ? `Soll Nova diesen Ordner lesen dürfen? Sie liest ${files(preview.file_count)} und schreibt nie hinein.`
      : "In diesem Ordner ist keine Datei, die Nova lesen kann. Trotzdem freigeben?";
    form.hidden = true;
    gate.hidden = false;
    gate.focus();
  }

  function closeGate() {
    gate.hidden = true;
    form.hidden = false;
    pending = null;
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    errorBox.textContent = "";
    const data = new FormData(form);
    const path = String(data.get("path") || "").trim();
    if (!path) {
      errorBox.textContent = "Bitte einen Pfad eingeben.";
      $("release-path").focus();
      return;
    }
    // Optional patterns, comma-separated ("*.md, archive/**").
    const globs = (name) => String(data.get(name) || "").split(/[\n,]/).map((g) => g.trim()).filter(Boolean);
    const button = $("release-check");
    button.disabled = true;
    button.textContent = "Prüfe …";
    try {
      const preview = await call("POST", api, {
        path,
        eigentum: data.get("eigentum"),
        include_globs: globs("include_globs"),
        exclude_globs: globs("exclude_globs"),
      });
      showGate(preview);
      refresh();
    } catch (e) {
      errorBox.textContent = e.message;
    } finally {
      button.disabled = false;
      button.textContent = "Prüfen";
    }
  });

  $("gate-confirm").addEventListener("click", async () => {
    if (pending === null) return;
    const id = pending;
    try {
      await call("POST", api + id + "/confirm/");
      closeGate();
      // Released: the offered sample path is not offered again.
      $("release-path").defaultValue = "";
      form.reset();
      $("release-path-hint").textContent = "Ein ganzer Pfad, z. B. ~/Notizen.";
      await refresh();
      const card = cards.get(id);
      if (card) card.el.querySelector("h3").focus();
    } catch (e) { errorBox.textContent = e.message; }
  });

  $("gate-cancel").addEventListener("click", async () => {
    // Not released: the requested (never confirmed) folder is dropped; nothing was read.
    const id = pending;
    closeGate();
    if (id !== null) await call("POST", api + id + "/forget/", { confirm: true }).catch(() => {});
    $("release-path").focus();
    refresh();
  });

  // ---- one card per folder, updated in place (focus and open questions survive a poll) ----

  const cards = new Map();
  const OPEN = new Set(["wartend", "laufend"]);

  function phase(root) {
    // What the person sees move from the first second: queued → counting → reading n / N.
    const run = root.run;
    const p = root.progress;
    if (!run || !OPEN.has(run.state)) return null;
    if (run.state === "wartend") return { text: "In der Warteschlange: Nova fängt gleich an zu lesen …", value: null };
    if (!p.total) return { text: "Nova zählt die Dateien …", value: null };
    let text = `Nova liest: ${p.done.toLocaleString("de-DE")} von ${files(p.total)}`;
    if (run.started_at && run.heartbeat_at && p.done > 0 && p.done < p.total) {
      // Both times are the server's: no clock of this device is compared with them.
      const elapsed = (new Date(run.heartbeat_at) - new Date(run.started_at)) / 1000;
      if (elapsed >= 1) text += ` – noch etwa ${duration((elapsed / p.done) * (p.total - p.done))}`;
    }
    return { text, value: p.done / p.total };
  }

  function countsText(c) {
    const parts = [];
    if (c.new) parts.push(`${c.new} neu`);
    if (c.changed) parts.push(`${c.changed} geändert`);
    if (c.unchanged) parts.push(`${c.unchanged} unverändert`);
    if (c.gone) parts.push(`${c.gone} nicht mehr da`);
    return parts.join(", ");
  }

  function lastRunText(root) {
    const run = root.run;
    const c = root.counts;
    if (!run) return root.state === "aktiv" ? "Noch nicht gelesen." : "";
    if (OPEN.has(run.state)) return "";
    const when = time(run.finished_at || root.last_run_finished_at);
    const took = run.started_at && run.finished_at
      ? ` (Dauer ${duration((new Date(run.finished_at) - new Date(run.started_at)) / 1000)})` : "";
    if (run.state === "fertig") {
      const read = c.new + c.changed + c.unchanged;
      const detail = countsText(c);
      return `Zuletzt gelesen am ${when}${took}: ${files(read)}${detail ? " – " + detail : ""}.`;
    }
    if (run.state === "verzeichnis_fehlt") return `Beim letzten Lauf am ${when} fehlte der Ordner.`;
    if (run.state === "entfallen") return "";
    return `Letzter Lauf am ${when}: ${run.note || "abgebrochen"}`;
  }

  function badge(root) {
    if (root.missing || root.counts.root_missing && !OPEN.has((root.run || {}).state)) return ["Ordner fehlt", "bad"];
    if (root.problem) return [root.problem.step === "pfad_geaendert" ? "Pfad geändert" : "nicht mehr erlaubt", "bad"];
    const run = root.run;
    if (root.state === "aktiv" && run && OPEN.has(run.state)) return ["wird gelesen", "busy"];
    return [STATE[root.state] || root.state, root.state === "aktiv" ? "ok" : "idle"];
  }

  function problemText(root) {
    if (root.missing) {
      return `Der Ordner ist nicht mehr da. Was Nova schon gelesen hat, bleibt, bis ${sie ? "Sie" : "du"} den Ordner ${sie ? "vergessen" : "vergisst"}; ` +
        "taucht er wieder auf, liest sie ihn beim nächsten Lauf.";
    }
    if (root.problem) return root.problem.reason;
    if (root.counts.root_missing) return root.last_error;
    return "";
  }

  function makeCard(root) {
    const li = document.createElement("li");
    li.className = "folder";
    li.dataset.root = root.id;
    li.innerHTML = `
      <div class="folder-head">
        <h3 class="folder-path" tabindex="-1"><code></code></h3>
        <span class="badge"></span>
      </div>
      <p class="owner"></p>
      <div class="progress" role="status" aria-live="polite">
        <p class="progress-text"></p>
        <progress class="bar" max="1" hidden></progress>
      </div>
      <p class="last-run"></p>
      <p class="problem" role="alert"></p>
      <p class="errors"></p>
      <details class="skipped"><summary></summary><ul class="skipped-list"></ul></details>
      <div class="actions"></div>
      <div class="ask" hidden>
        <p class="question"></p>
        <div class="buttons"><button type="button" class="primary yes"></button>
          <button type="button" class="no">Abbrechen</button></div>
      </div>`;
    li.querySelector("code").textContent = root.path;
    const card = { el: li, root, asking: false };
    li.querySelector(".ask .no").addEventListener("click", () => closeAsk(card));
    cards.set(root.id, card);
    return card;
  }

  function closeAsk(card) {
    card.asking = false;
    card.el.querySelector(".ask").hidden = true;
    card.el.querySelector(".actions").hidden = false;
    const first = card.el.querySelector(".actions button");
    if (first) first.focus();
  }

  // Suspend / reactivate / forget ask first: the API's own question (without confirm: true),
  // shown in the card word for word; only "Ja" sends the confirmed request.
  async function ask(card, label, path) {
    errorBox.textContent = "";
    try {
      const asked = await call("POST", api + card.root.id + "/" + path, {});
      const box = card.el.querySelector(".ask");
      box.querySelector(".question").textContent = asked.question;
      const yes = box.querySelector(".yes");
      yes.textContent = "Ja, " + label.toLowerCase();
      yes.onclick = async () => {
        try {
          await call("POST", api + card.root.id + "/" + path, { confirm: true });
          card.asking = false;
          box.hidden = true;
          card.el.querySelector(".actions").hidden = false;
          refresh();
        } catch (e) { errorBox.textContent = e.message; }
      };
      card.asking = true;
      card.el.querySelector(".actions").hidden = true;
      box.hidden = false;
      yes.focus();
    } catch (e) { errorBox.textContent = e.message; }
  }

  function renderActions(card) {
    const root = card.root;
    const cell = card.el.querySelector(".actions");
    const key = [root.state, Boolean(root.run && OPEN.has(root.run.state))].join("/");
    if (cell.dataset.key === key) return;
    cell.dataset.key = key;
    cell.replaceChildren();
    const add = (label, onClick, cls) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      if (cls) b.className = cls;
      b.setAttribute("aria-label", `${label}: ${root.path}`);
      b.addEventListener("click", onClick);
      cell.appendChild(b);
    };
    if (root.state === "aktiv") {
      if (!(root.run && OPEN.has(root.run.state))) {
        add("Jetzt neu lesen", async () => {
          try { await call("POST", api + root.id + "/index/"); refresh(); } catch (e) { errorBox.textContent = e.message; }
        });
      }
      add("Stilllegen", () => ask(card, "Stilllegen", "suspend/"));
    } else if (root.state === "stillgelegt") {
      add("Wieder aufnehmen", () => ask(card, "Wieder aufnehmen", "reactivate/"));
    } else if (root.state === "angefragt" && root.id !== pending) {
      // A dry run from an earlier visit: shown again in the one release flow above.
      add("Prüfung ansehen", () => showGate({
        id: root.id, resolved_path: root.path, file_count: root.dry_run.files || 0,
        total_bytes: root.dry_run.total_bytes || 0, skipped: root.dry_run.skipped || {},
        skipped_files: root.dry_run.skipped_files || [], eigentum: root.eigentum,
      }), "primary");
    }
    add("Vergessen", () => ask(card, "Vergessen", "forget/"), "danger");
  }

  function update(card, root) {
    card.root = root;
    const el = card.el;
    const [label, kind] = badge(root);
    const b = el.querySelector(".badge");
    b.textContent = label;
    b.className = "badge " + kind;
    el.querySelector(".owner").textContent = root.eigentum === "figur"
      ? "Novas eigenes Material" : (sie ? "Ihre Dateien" : "Deine Dateien");
    const ph = root.state === "aktiv" ? phase(root) : null;
    el.querySelector(".progress-text").textContent = ph ? ph.text : root.state === "angefragt" ? "Noch nicht freigegeben: nichts gelesen." : "";
    const bar = el.querySelector(".bar");
    bar.hidden = !ph;
    if (ph && ph.value !== null) bar.value = ph.value; else bar.removeAttribute("value");
    el.querySelector(".last-run").textContent = lastRunText(root);
    const problem = problemText(root);
    const p = el.querySelector(".problem");
    p.textContent = problem;
    p.hidden = !problem;
    const errors = el.querySelector(".errors");
    errors.textContent = root.counts.errors ? `${files(root.counts.errors)} ließen sich nicht lesen.` : "";
    errors.hidden = !root.counts.errors;
    // The skipped files of the last run (by name), else those of the dry run before release.
    const fromRun = root.run && root.run.state === "fertig";
    const counts = fromRun ? root.counts.skipped : (root.dry_run || {}).skipped;
    const items = fromRun ? root.counts.skipped_files : (root.dry_run || {}).skipped_files;
    const n = Object.values(counts || {}).reduce((a, c) => a + c, 0);
    const det = el.querySelector(".skipped");
    det.hidden = n === 0;
    det.querySelector("summary").textContent = `${files(n)} übersprungen – warum?`;
    fillSkippedList(det.querySelector("ul"), items, counts);
    if (!card.asking) renderActions(card);
    el.classList.toggle("is-problem", kind === "bad");
  }

  let timer = null;
  let first = true;
  async function refresh() {
    clearTimeout(timer);
    let open = false;
    try {
      // The folder whose dry run is open above has its one flow there, not a second card.
      const roots = (await call("GET", api)).filter((r) => r.id !== pending);
      if (first) { list.replaceChildren(); first = false; }
      const seen = new Set();
      roots.forEach((r, index) => {
        seen.add(r.id);
        const card = cards.get(r.id) || makeCard(r);
        update(card, r);
        // Moved only when out of place: moving a node would take the focus from its buttons.
        if (list.children[index] !== card.el) list.insertBefore(card.el, list.children[index] || null);
        open = open || Boolean(r.run && OPEN.has(r.run.state));
      });
      for (const [id, card] of cards) {
        if (!seen.has(id)) { card.el.remove(); cards.delete(id); }
      }
      let empty = list.querySelector(".empty");
      if (!roots.length && !empty) {
        empty = document.createElement("li");
        empty.className = "empty";
        empty.textContent = "Noch kein Ordner freigegeben.";
        list.appendChild(empty);
      } else if (roots.length && empty) empty.remove();
      if (errorBox.dataset.offline) { errorBox.textContent = ""; delete errorBox.dataset.offline; }
    } catch (e) {
      errorBox.textContent = e.message;
      errorBox.dataset.offline = "1";
    }
    // While a run is open the page polls every second; else every 5 s (a folder that
    // disappears changes its state without a reload).
    timer = setTimeout(refresh, open ? 1000 : 5000);
  }
  refresh();
})();
