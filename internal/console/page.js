"use strict";
(() => {
  const API = "/api/v1";
  const store = window.sessionStorage;
  const $ = (id) => document.getElementById(id);
  const fmt = new Intl.NumberFormat("en-US");
  // Ended jobs still move: to harvested once their output is copied.
  const RUNNING = ["accepted", "held", "submitted"];
  const PALETTE = ["#2b6cb0", "#dd6b20", "#2f855a", "#b83280", "#6b46c1", "#c53030", "#319795", "#975a16"];
  let timer = null;

  // The function key travels in the page's address (?code=, as the
  // Functions host takes it) or is typed in; the offpath key is typed in.
  const fromURL = new URLSearchParams(location.search).get("code");
  if (fromURL) store.setItem("offpath.fnkey", fromURL);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k.startsWith("data-") || k === "title" || k === "type") e.setAttribute(k, v); else e[k] = v;
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
    return e;
  }

  async function call(method, path, body) {
    const headers = { Authorization: "Bearer " + store.getItem("offpath.key") };
    const fn = store.getItem("offpath.fnkey");
    if (fn) headers["x-functions-key"] = fn;
    const init = { method, headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) { headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    const res = await fetch(API + path, init);
    if (!res.ok) {
      let msg = res.status + " " + res.statusText;
      try { const e = await res.json(); if (e.error) msg = e.error.code + ": " + e.error.message; } catch (_) { /* not JSON */ }
      const err = new Error(msg); err.status = res.status; throw err;
    }
    return res;
  }
  const getJSON = async (path) => (await call("GET", path)).json();
  const showError = (e) => { $("error").textContent = e ? String(e.message || e) : ""; };

  function saveBlob(blob, name) {
    const a = el("a", { href: URL.createObjectURL(blob), download: name });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }

  function until(t) {
    const ms = new Date(t) - Date.now();
    if (ms <= 0) return "passed";
    const h = Math.floor(ms / 3600000), m = Math.floor((ms % 3600000) / 60000);
    return "in " + (h ? h + " h " : "") + m + " min";
  }
  const when = (t) => t ? new Date(t).toISOString().replace("T", " ").slice(0, 16) + " UTC" : "";
  const thisMonth = () => new Date().toISOString().slice(0, 7);
  function monthsBack(month, n) {
    const [y, m] = month.split("-").map(Number);
    const out = [];
    for (let i = n - 1; i >= 0; i--) { const d = new Date(Date.UTC(y, m - 1 - i, 1)); out.push(d.toISOString().slice(0, 7)); }
    return out;
  }

  // barChart draws stacked bars as inline SVG: one bar per category, one
  // colour per series; returns the sum of everything drawn.
  function barChart(box, categories, series, label) {
    const NS = "http://www.w3.org/2000/svg";
    const W = 760, H = 230, L = 64, B = 40, T = 10, R = 150;
    const svg = document.createElementNS(NS, "svg");
    const s = (tag, attrs, text) => { const e = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text != null) e.textContent = text; svg.append(e); return e; };
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
    const totals = categories.map((_, i) => series.reduce((a, x) => a + (x.values[i] || 0), 0));
    const max = Math.max(1, ...totals);
    const plotW = W - L - R, plotH = H - T - B;
    s("line", { x1: L, y1: T + plotH, x2: L + plotW, y2: T + plotH, class: "axis" });
    s("line", { x1: L, y1: T, x2: L, y2: T + plotH, class: "axis" });
    for (const f of categories.length ? [0, 0.5, 1] : [0]) s("text", { x: L - 6, y: T + plotH - f * plotH + 4, "text-anchor": "end" }, fmt.format(Math.round(max * f)));
    const slot = plotW / Math.max(1, categories.length), bw = Math.max(2, Math.min(40, slot * 0.7));
    categories.forEach((c, i) => {
      let y = T + plotH;
      series.forEach((x, k) => {
        const v = x.values[i] || 0;
        if (!v) return;
        const h = (v / max) * plotH;
        y -= h;
        const r = s("rect", { x: L + i * slot + (slot - bw) / 2, y, width: bw, height: Math.max(h, 0.5), fill: PALETTE[k % PALETTE.length], "data-value": v });
        const t = document.createElementNS(NS, "title"); t.textContent = `${c} · ${x.name}: ${fmt.format(v)} tokens`; r.append(t);
      });
      if (categories.length <= 16 || i % Math.ceil(categories.length / 16) === 0)
        s("text", { x: L + i * slot + slot / 2, y: T + plotH + 14, "text-anchor": "middle" }, c.length > 7 ? c.slice(5) : c);
    });
    series.forEach((x, k) => {
      s("rect", { x: W - R + 12, y: T + k * 18, width: 10, height: 10, fill: PALETTE[k % PALETTE.length] });
      s("text", { x: W - R + 28, y: T + k * 18 + 9 }, x.name);
    });
    if (!categories.length) s("text", { x: L + plotW / 2, y: T + plotH / 2, "text-anchor": "middle" }, "no spend");
    box.replaceChildren(svg);
    return totals.reduce((a, b) => a + b, 0);
  }

  // stack turns rows of {key, lines} into categories and one series per
  // group value (path, alias or deployment), in total tokens.
  function stack(rows, group) {
    const names = [...new Set(rows.flatMap((r) => r.lines.map((l) => l[group] || "(none)")))].sort();
    const series = names.map((n) => ({ name: n, values: rows.map((r) => r.lines.filter((l) => (l[group] || "(none)") === n).reduce((a, l) => a + l.total_tokens, 0)) }));
    return { categories: rows.map((r) => r.key), series };
  }

  function setTotal(node, tokens, cost) {
    node.dataset.totalTokens = String(tokens);
    node.textContent = fmt.format(tokens) + " tokens" + (cost != null ? " · $" + Number(cost).toFixed(6) : "");
  }

  // ---- tenant view
  async function loadJobs() {
    const page = await getJSON("/batches?limit=20");
    const body = $("jobs").tBodies[0];
    const jobs = page.data;
    $("jobs-empty").hidden = jobs.length > 0;
    body.replaceChildren(...jobs.map(jobRow));
    return jobs.some((j) => j.state !== "harvested");
  }

  function jobRow(j) {
    const rc = j.request_counts || {};
    const total = rc.total ?? rc.Total ?? j.items, done = (rc.completed ?? rc.Completed ?? 0) + (rc.failed ?? rc.Failed ?? 0);
    const harvested = j.state === "harvested";
    const bar = el("progress", { max: total || 1, value: harvested ? total || 1 : Math.min(done, total) });
    const o = j.outcomes || {};
    const outcomes = harvested || Object.values(o).some((v) => v) ? `ok ${o.ok || 0} · refused ${o.refused || 0} · failed ${o.failed || 0} · expired ${o.expired || 0} · cancelled ${o.cancelled || 0}` : "";
    const actions = el("td");
    if (harvested || (j.parts || []).some((p) => p.status === "harvested")) {
      actions.append(el("button", { type: "button", class: "secondary results", onclick: () => download(j.id) }, "Results"));
    }
    if (RUNNING.includes(j.state) && !j.cancel_requested) {
      actions.append(el("button", { type: "button", class: "secondary cancel", onclick: () => cancel(j.id) }, "Cancel"));
    }
    const state = el("span", { class: "state", "data-state": j.state }, j.state + (j.final ? " (" + j.final + ")" : "") + (j.cancel_requested && !harvested ? ", cancelling" : ""));
    return el("tr", { "data-job": j.id, "data-state": j.state, "data-final": j.final || "" },
      el("td", { class: "id", title: j.id }, j.id.slice(0, 14) + "…"), el("td", {}, j.alias), el("td", {}, state),
      el("td", { class: "parts" }, (j.parts || []).map((p) => `#${p.index} ${p.azure_status || p.status}${p.held_reason ? " (held: " + p.held_reason + ")" : ""}`).join(", ")),
      el("td", { class: "num counts" }, `${fmt.format(done)} / ${fmt.format(total)}`), el("td", {}, bar),
      el("td", { class: "deadline" }, j.expected_by ? until(j.expected_by) : ""), el("td", { class: "outcomes" }, outcomes), actions);
  }

  async function download(id) {
    try {
      const res = await call("GET", "/batches/" + encodeURIComponent(id) + "/results");
      saveBlob(await res.blob(), id + "-results.jsonl");
    } catch (e) { showError(e); }
  }
  async function cancel(id) {
    try { await call("POST", "/batches/" + encodeURIComponent(id) + "/cancel"); await loadJobs(); } catch (e) { showError(e); }
  }

  async function loadSpend() {
    const month = $("month").value || thisMonth(), group = $("group").value;
    const daily = await getJSON("/usage/daily?month=" + month);
    const d = stack(daily.days.map((x) => ({ key: x.day, lines: x.lines })), group);
    setTotal($("daily-total"), barChart($("chart-daily"), d.categories, d.series, "tokens per day, " + month), daily.total.estimated_cost_usd);
    const months = monthsBack(month, 6);
    const reports = await Promise.all(months.map((m) => getJSON("/usage?month=" + m)));
    const m = stack(reports.map((r, i) => ({ key: months[i], lines: r.lines })), group);
    setTotal($("monthly-total"), barChart($("chart-monthly"), m.categories, m.series, "tokens per month"), reports.reduce((a, r) => a + r.total.estimated_cost_usd, 0));
  }

  async function submit(ev) {
    ev.preventDefault();
    const prompts = $("items").value.split("\n").map((s) => s.trim()).filter(Boolean);
    const body = { alias: $("alias").value, system_prompt: $("system-prompt").value, max_tokens: Number($("max-tokens").value),
      items: prompts.map((p, i) => ({ id: "item-" + (i + 1), prompt: p })) };
    try {
      const j = await (await call("POST", "/batches", body)).json();
      $("submit-result").textContent = "Submitted " + j.id + " (" + j.items + " items).";
      $("submit-result").dataset.job = j.id;
      await loadJobs();
      schedule(tenantTick);
    } catch (e) { $("submit-result").textContent = String(e.message); }
  }

  // The tenant's documents on the queue path and where each stands.
  async function loadDocs() {
    const { data } = await getJSON("/documents?limit=100");
    $("docs-empty").hidden = data.length > 0;
    $("docs").tBodies[0].replaceChildren(...data.map((d) => el("tr", { "data-document": d.name, "data-state": d.state },
      el("td", { class: "id" }, d.name), el("td", {}, d.state), el("td", { class: "num" }, d.deliveries || 0),
      el("td", {}, when(d.updated)), el("td", {}, d.reason || ""))));
  }

  async function tenantTick() {
    await loadDocs();
    const active = await loadJobs();
    if (!active) await loadSpend();
    return active;
  }

  // ---- operator view
  async function loadTenantsSpend() {
    const month = $("op-month").value || thisMonth();
    const list = (await getJSON("/tenants")).tenants;
    const box = $("tenants-spend");
    const sections = await Promise.all(list.map(async (t) => {
      const daily = await getJSON("/usage/daily?month=" + month + "&tenant=" + encodeURIComponent(t.id));
      const chart = el("div", { class: "chart" }), total = el("span", { class: "total" });
      const sec = el("section", { class: "tenant-spend", "data-tenant": t.id }, el("h3", {}, t.id + " ", total), chart);
      const d = stack(daily.days.map((x) => ({ key: x.day, lines: x.lines })), "path");
      setTotal(total, barChart(chart, d.categories, d.series, t.id + ": tokens per day, " + month), daily.total.estimated_cost_usd);
      return sec;
    }));
    box.replaceChildren(...sections);
  }

  async function loadAlerts() {
    const { alerts } = await getJSON("/alerts?limit=100");
    $("alerts-empty").hidden = alerts.length > 0;
    $("alerts").replaceChildren(...alerts.map((a) => el("li", { "data-alert": a.alert, "data-id": a.id },
      el("span", { class: "name" }, a.alert), " ", el("span", { class: "muted" }, when(a.at)), " ",
      [a.tenant, a.job].filter(Boolean).join(" / "), a.tenant || a.job ? " — " : "", a.message)));
  }

  // Dead-lettered documents, each with a button that reprocesses it: the
  // admin route writes its blob again, and the queue path takes it anew.
  async function loadDead() {
    const { data } = await getJSON("/admin/documents?state=dead_lettered&limit=100");
    $("dead-empty").hidden = data.length > 0;
    $("dead").tBodies[0].replaceChildren(...data.map((d) => {
      const button = el("button", { type: "button", class: "reprocess" }, "Reprocess");
      button.onclick = async () => {
        button.disabled = true;
        try { await call("POST", "/admin/documents/reprocess", { name: d.name }); showError(null); await loadDead(); } catch (e) { button.disabled = false; showError(e); }
      };
      return el("tr", { "data-document": d.name },
        el("td", { class: "id" }, d.name), el("td", {}, d.tenant), el("td", { class: "num" }, d.deliveries || 0),
        el("td", {}, when(d.updated)), el("td", {}, d.reason || ""), el("td", {}, button));
    }));
  }

  async function loadHeld() {
    const { jobs } = await getJSON("/held-jobs");
    $("held-empty").hidden = jobs.length > 0;
    $("held").tBodies[0].replaceChildren(...jobs.map((j) => el("tr", { "data-job": j.id },
      el("td", {}, j.tenant), el("td", { class: "id" }, j.id), el("td", {}, j.alias), el("td", {}, when(j.created)),
      el("td", {}, j.held_parts.map((p) => `#${p.index} ${p.held_reason} (attempt ${p.attempt})`).join(", ")),
      el("td", {}, j.held_parts.map((p) => when(p.next_attempt_at)).filter(Boolean).join(", ")),
      el("td", { class: "num" }, fmt.format(j.estimated_tokens)))));
  }

  async function loadFindings() {
    const { findings } = await getJSON("/audit");
    $("findings-empty").hidden = findings.length > 0;
    $("findings").tBodies[0].replaceChildren(...findings.map((f) => el("tr", { "data-finding": f.id },
      el("td", {}, f.kind + (f.job ? " (orphan of " + f.job + ")" : "")), el("td", { class: "id" }, f.id), el("td", {}, when(f.alerted_at)),
      el("td", {}, f.status || f.purpose || ""), el("td", {}, f.booked_at ? (f.tenant || "unattributed") + ", " + when(f.booked_at) : "not yet"),
      el("td", { class: "num" }, fmt.format(f.usage.total_tokens)), el("td", {}, f.note || f.filename || ""))));
  }

  let reportDays = [];
  async function loadReports() {
    reportDays = (await getJSON("/reports")).days;
    $("reports-empty").hidden = reportDays.length > 0;
    $("report-view").hidden = reportDays.length === 0;
    const sel = $("report-day"), keep = sel.value;
    sel.replaceChildren(...reportDays.map((d) => el("option", { value: d }, d)));
    if (reportDays.length) await showReport(reportDays.includes(keep) ? keep : reportDays[0]);
  }
  async function showReport(day) {
    const r = await getJSON("/reports/" + day);
    $("report-day").value = day;
    $("report-view").textContent = r.markdown;
    $("report-view").dataset.day = day;
    const prev = $("report-prev"), next = $("report-next");
    prev.disabled = !r.prev; prev.dataset.day = r.prev || "";
    next.disabled = !r.next; next.dataset.day = r.next || "";
    $("report-html").disabled = false;
  }

  async function operatorTick() {
    await Promise.all([loadAlerts(), loadDead(), loadHeld(), loadFindings()]);
    return true;
  }

  // ---- sign-in and refresh
  function schedule(tick) {
    clearTimeout(timer);
    const run = async () => {
      let again = true;
      try { again = await tick(); showError(null); } catch (e) { showError(e); if (e.status === 401) return signOut(); }
      document.body.dataset.refreshed = String(Date.now());
      if (again) timer = setTimeout(run, 1500);
    };
    timer = setTimeout(run, 1500);
  }

  async function start() {
    $("signin-error").textContent = "";
    let me;
    try { me = await getJSON("/whoami"); } catch (e) {
      store.removeItem("offpath.key");
      $("signin").hidden = false;
      $("signin-error").textContent = e.status === 401 ? "This key is not valid here." : String(e.message);
      return;
    }
    $("signin").hidden = true;
    $("who").hidden = false; $("signout").hidden = false;
    $("who").textContent = me.admin ? "operator (admin key)" : "tenant " + me.tenant;
    document.body.dataset.view = me.admin ? "operator" : "tenant";
    if (me.admin) {
      $("operator").hidden = false;
      $("op-month").value = thisMonth();
      await Promise.all([loadTenantsSpend(), loadReports(), operatorTick()]).catch(showError);
      schedule(operatorTick);
    } else {
      $("tenant").hidden = false;
      $("alias").replaceChildren(...me.aliases.map((a) => el("option", { value: a }, a)));
      $("month").value = thisMonth();
      await Promise.all([loadJobs(), loadSpend(), loadDocs()]).catch(showError);
      schedule(tenantTick);
    }
    document.body.dataset.ready = "true";
  }

  function signOut() {
    clearTimeout(timer);
    store.removeItem("offpath.key");
    location.reload();
  }

  $("fnkey-label").hidden = !!store.getItem("offpath.fnkey");
  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    store.setItem("offpath.key", $("key").value.trim());
    if ($("fnkey").value.trim()) store.setItem("offpath.fnkey", $("fnkey").value.trim());
    $("key").value = "";
    start();
  });
  $("signout").addEventListener("click", signOut);
  $("submit-form").addEventListener("submit", submit);
  $("month").addEventListener("change", () => loadSpend().catch(showError));
  $("group").addEventListener("change", () => loadSpend().catch(showError));
  $("op-month").addEventListener("change", () => loadTenantsSpend().catch(showError));
  $("report-prev").addEventListener("click", (ev) => showReport(ev.target.dataset.day).catch(showError));
  $("report-next").addEventListener("click", (ev) => showReport(ev.target.dataset.day).catch(showError));
  $("report-day").addEventListener("change", (ev) => showReport(ev.target.value).catch(showError));
  $("report-html").addEventListener("click", async () => {
    const day = $("report-view").dataset.day;
    try { saveBlob(await (await call("GET", "/reports/" + day + "?format=html")).blob(), "morning-report-" + day + ".html"); } catch (e) { showError(e); }
  });
  if (store.getItem("offpath.key")) start();
})();
