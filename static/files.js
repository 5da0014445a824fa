// Roots page: release with the dry run shown before the confirm, progress polling per root.
(function () {
  "use strict";
  const api = "/api/roots/";
  const csrf = () => (document.querySelector("[name=csrfmiddlewaretoken]") || {}).value || "";
  const errorBox = document.getElementById("roots-error");
  const body = document.getElementById("roots-body");
  const SKIP = {
    verborgen: "verborgen", binaer: "binär", zu_gross: "zu groß", link_nach_aussen: "Verknüpfung nach außen",
    link_innen: "Verknüpfung nach innen", link_kaputt: "Verknüpfung ohne Ziel", link_schleife: "Verknüpfungsschleife",
    format: "Format nicht lesbar", ausgeschlossen: "ausgeschlossen", nicht_lesbar: "nicht lesbar",
    verschwunden: "verschwunden", pfad_unlesbar: "Name nicht lesbar",
  };
  let pending = null;

  async function call(method, url, data) {
    const res = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: data === undefined ? undefined : JSON.stringify(data),
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(json.reason || json.detail || "Fehler " + res.status);
    return json;
  }

  function skips(map) {
    const parts = Object.entries(map || {}).map(([k, n]) => n + " " + (SKIP[k] || k));
    return parts.length ? parts.join(", ") : "keine";
  }

  function size(n) {
    if (n < 1024) return n + " Bytes";
    if (n < 1048576) return (n / 1024).toFixed(1).replace(".", ",") + " KB";
    return (n / 1048576).toFixed(1).replace(".", ",") + " MB";
  }

  function countsText(c) {
    if (c.root_missing) return "Verzeichnis fehlt – Zeilen bleiben erhalten";
    return `neu ${c.new}, geändert ${c.changed}, unverändert ${c.unchanged}, fort ${c.gone}, ` +
      `übersprungen: ${skips(c.skipped)}, Fehler ${c.errors}`;
  }

  // One run per row of IndexRun: its state, times and note; progress and counts of the root
  // are published together with it, so they always belong to this run (never the last one's).
  const RUN_STATE = {
    wartend: "wartet auf den Worker", laufend: "läuft", fertig: "fertig", abgebrochen: "abgebrochen",
    neu_eingereiht: "neu eingereiht", verzeichnis_fehlt: "Verzeichnis fehlt", nicht_aktiv: "nicht aktiv",
    entfallen: "entfallen",
  };
  const OPEN = new Set(["wartend", "laufend"]);

  function time(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    return d.toLocaleString("de-DE", { day: "2-digit", month: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function runText(root) {
    const run = root.run;
    if (!run) return root.last_error || countsText(root.counts);
    let head = `Lauf ${run.id}: ${RUN_STATE[run.state] || run.state}`;
    if (run.started_at) head += `, ${time(run.started_at)}` + (run.finished_at ? ` – ${time(run.finished_at)}` : "");
    const lines = [head];
    if (run.state === "laufend") lines.push("bisher: " + countsText(root.counts));
    else if (run.state !== "wartend" && run.state !== "entfallen") lines.push(countsText(root.counts));
    if (run.note) lines.push(run.note);
    if (root.last_error && root.last_error !== run.note) lines.push(root.last_error);
    return lines.join("\n");
  }

  function actions(root) {
    const cell = document.createElement("td");
    cell.className = "actions";
    const add = (label, path, question) => {
      const b = document.createElement("button");
      b.textContent = label;
      b.addEventListener("click", async () => {
        if (question && !window.confirm(question)) return;
        try {
          await call("POST", api + root.id + "/" + path, path === "index/" ? undefined : { confirm: true });
          refresh();
        } catch (e) { errorBox.textContent = e.message; }
      });
      cell.appendChild(b);
    };
    if (root.state === "aktiv") {
      add("Jetzt lesen", "index/");
      add("Stilllegen", "suspend/", `${root.path} stilllegen? Die Indexzeilen bleiben, werden aber nicht durchsucht.`);
    } else if (root.state === "stillgelegt") {
      add("Wieder aufnehmen", "reactivate/", `${root.path} wieder aufnehmen?`);
    } else if (root.state === "angefragt") {
      add("Bestätigen", "confirm/", `${root.path} freigeben?`);
    }
    add("Vergessen", "forget/", `${root.path} vergessen? Alle Indexzeilen mit Zusammenfassungen und Einbettungen werden gelöscht; die Dateien bleiben unberührt.`);
    return cell;
  }

  function row(root) {
    const tr = document.createElement("tr");
    tr.dataset.root = root.id;
    const p = root.progress;
    const open = p.running || Boolean(root.run && OPEN.has(root.run.state));
    const waiting = Boolean(root.run && root.run.state === "wartend");
    const cells = [
      `<td><code></code></td>`,
      `<td>${root.eigentum === "figur" ? "Novas eigenes Material" : "Material der Person"}</td>`,
      `<td class="state">${root.state}</td>`,
      `<td><progress class="bar" max="${p.total || 1}" value="${p.done}"></progress> ` +
        `<span class="progress-text">${p.running ? p.done + " / " + p.total : waiting ? "wartet" : ""}</span></td>`,
      `<td class="counts"></td>`,
    ];
    tr.innerHTML = cells.join("");
    tr.querySelector("code").textContent = root.path;
    const counts = tr.querySelector(".counts");
    counts.textContent = runText(root);
    counts.style.whiteSpace = "pre-line";
    tr.appendChild(actions(root));
    return { tr, running: open };
  }

  let timer = null;
  async function refresh() {
    try {
      const roots = await call("GET", api);
      body.innerHTML = "";
      let running = false;
      if (!roots.length) body.innerHTML = '<tr class="empty"><td colspan="6">Noch kein Ordner freigegeben.</td></tr>';
      for (const r of roots) {
        const built = row(r);
        running = running || built.running;
        body.appendChild(built.tr);
      }
      clearTimeout(timer);
      timer = setTimeout(refresh, running ? 1000 : 5000);
    } catch (e) { errorBox.textContent = e.message; }
  }

  document.getElementById("release-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    errorBox.textContent = "";
    const form = new FormData(ev.target);
    try {
      // Optional globs, one per line or comma-separated ("*.md", "archive/**").
      const globs = (name) => String(form.get(name) || "").split(/[\n,]/).map((g) => g.trim()).filter(Boolean);
      const res = await call("POST", api, {
        path: form.get("path"),
        eigentum: form.get("eigentum"),
        include_globs: globs("include_globs"),
        exclude_globs: globs("exclude_globs"),
      });
      pending = res.id;
      document.getElementById("gate-text").textContent =
        `Ordner ${res.resolved_path}: ${res.file_count} Dateien würde Nova lesen (${size(res.total_bytes)}); ` +
        `übersprungen: ${skips(res.skipped)}. Freigeben als ` +
        (res.eigentum === "figur" ? "Novas eigenes Material" : "dein Material") + "?";
      document.getElementById("gate").hidden = false;
      refresh();
    } catch (e) { errorBox.textContent = e.message; }
  });
  document.getElementById("gate-confirm").addEventListener("click", async () => {
    if (pending === null) return;
    try {
      await call("POST", api + pending + "/confirm/");
      document.getElementById("gate").hidden = true;
      pending = null;
      refresh();
    } catch (e) { errorBox.textContent = e.message; }
  });
  document.getElementById("gate-cancel").addEventListener("click", async () => {
    // Refused: the requested (never confirmed) root is dropped, nothing was indexed.
    document.getElementById("gate").hidden = true;
    if (pending !== null) await call("POST", api + pending + "/forget/", { confirm: true }).catch(() => {});
    pending = null;
    refresh();
  });
  refresh();
})();
