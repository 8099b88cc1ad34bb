// Rialto's dashboard: polls /api/status and redraws. Every element is built with
// createElement and textContent (never from markup), because store names and prefixes are
// user input.
"use strict";

const POLL_MS = 1000;
const WINDOW_US = 60e6;
const LANES = [
  ["journal_write", "journal writes"],
  ["journal_sync", "journal syncs"],
  ["flush", "flushes"],
  ["compaction", "compactions"],
  ["ingest", "ingestions"],
];
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? String(v) : v.toFixed(1)) + " " + units[i];
}

function count(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

function micros(us) {
  if (us < 1000) return us + " µs";
  if (us < 1e6) return (us / 1000).toFixed(1) + " ms";
  return (us / 1e6).toFixed(2) + " s";
}

function seconds(s) {
  if (s < 60) return s.toFixed(1) + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + Math.floor(s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

function ago(ms, now) {
  return seconds(Math.max(0, (now - ms) / 1000)) + " ago";
}

function replaceRows(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function versionCell(v, now, cls) {
  if (!v) return el("td", { class: cls }, "–");
  const detail = v.records === null ? "streamed writes only" : count(v.records) + " records, " + bytes(v.bytes);
  return el(
    "td",
    {},
    el("span", { class: cls + " version" }, v.version),
    el("div", { class: "muted" }, detail),
    el("div", { class: "muted" }, "made " + ago(v.created_ms, now)),
  );
}

function pushingCell(p) {
  if (!p) return el("td", { class: "pushing" }, el("span", { class: "muted" }, "–"));
  const bar = el("span", { class: "progress", title: "share of the added records written into tables" });
  const fill = el("span");
  fill.style.width = Math.round(Math.min(1, Math.max(0, p.progress_ratio)) * 100) + "%";
  bar.appendChild(fill);
  return el(
    "td",
    { class: "pushing" },
    el("div", {}, "version ", el("span", { class: "pushing-version" }, p.version), " · ", el("span", { class: "phase pushing-phase" }, p.phase)),
    el("div", {}, bar, " ", el("span", { class: "pushing-progress" }, Math.round(p.progress_ratio * 100) + "%")),
    el("div", { class: "muted" }, el("span", { class: "pushing-records" }, count(p.records)), " records, " + bytes(p.bytes) + ", " + count(p.written_records) + " written"),
    el("div", { class: "muted" }, seconds(p.elapsed_seconds) + (p.owner === null ? ", in-process" : ", client " + p.owner)),
    stepWork(p),
  );
}

// The work of the sort's last step or of the replay, while the push is in it.
function stepWork(p) {
  if (p.phase === "sorting" && p.sort_records > 0) {
    const eta = p.sort_eta_seconds === null ? "no estimate (in memory)" : "ETA " + seconds(p.sort_eta_seconds);
    return el("div", { class: "muted pushing-step" }, "sort " + count(p.sort_done_records) + " of " + count(p.sort_records) + " records, " + eta);
  }
  if (p.phase === "replaying" && p.replay_entries > 0) {
    return el("div", { class: "muted pushing-step" }, "replay " + count(p.replay_done_entries) + " of " + count(p.replay_entries) + " entries");
  }
  return el("span", {});
}

function renderStores(s) {
  const now = s.server.now_ms;
  const rows = s.stores.map((st) => {
    const tr = el(
      "tr",
      { "data-store": st.name },
      el("td", { class: "name" }, st.name),
      el("td", { class: "mono prefix" }, st.prefix),
      versionCell(st.current, now, "current-version"),
      versionCell(st.previous, now, "previous-version"),
      pushingCell(st.pushing),
    );
    return tr;
  });
  replaceRows(document.querySelector("#stores tbody"), rows);
  document.getElementById("no-stores").hidden = s.stores.length > 0;
  const t = s.pushes;
  document.getElementById("push-totals").textContent =
    "Pushes since start: " + count(t.begun) + " begun, " + count(t.committed) + " committed, " +
    count(t.aborted) + " aborted, " + count(t.refused) + " refused by the push guard.";
}

function renderTimeline(io) {
  const box = document.getElementById("io-timeline");
  const width = 1000;
  const laneH = 30;
  const left = 110;
  const end = io.now_micros;
  const start = end - WINDOW_US;
  const x = (us) => left + ((us - start) / WINDOW_US) * (width - left);
  const nodes = [];
  LANES.forEach(([kind, label], i) => {
    const y = 5 + i * 33;
    nodes.push(svg("line", { x1: left, x2: width, y1: y + laneH, y2: y + laneH, stroke: "#d9d9d4" }));
    const t = svg("text", { x: 4, y: y + laneH / 2 + 4, class: "lane-label" });
    t.textContent = label;
    nodes.push(t);
    for (const e of io.events) {
      if (e.kind !== kind || e.start_micros + e.duration_micros < start) continue;
      const x0 = Math.max(left, x(e.start_micros));
      const w = Math.max(1.5, x(e.start_micros + e.duration_micros) - x0);
      const r = svg("rect", { x: x0.toFixed(1), y, width: w.toFixed(1), height: laneH, class: "k-" + kind });
      const tip = svg("title");
      let text = label.replace(/s$/, "") + ": " + micros(e.duration_micros) + ", " + bytes(e.bytes);
      if (e.files > 0) text += ", " + e.files + " tables, " + count(e.entries) + " entries, L" + e.level;
      tip.textContent = text;
      r.appendChild(tip);
      nodes.push(r);
    }
  });
  box.replaceChildren(...nodes);
}

function renderIo(io) {
  const legend = document.getElementById("io-legend");
  if (!legend.firstChild) {
    for (const [kind, label] of LANES) {
      legend.appendChild(el("span", {}, el("i", { class: "k-" + kind }), label));
    }
  }
  renderTimeline(io);
  const rows = LANES.map(([kind, label]) => {
    const t = io.totals[kind];
    return el(
      "tr",
      { "data-kind": kind },
      el("td", {}, label),
      el("td", {}, count(t.count)),
      el("td", {}, bytes(t.bytes)),
      el("td", {}, micros(t.micros)),
      el("td", {}, micros(t.max_micros)),
      el("td", {}, count(t.files)),
      el("td", {}, count(t.entries)),
    );
  });
  replaceRows(document.querySelector("#io-totals tbody"), rows);
  const pace = io.background_rate_limit === null ? "unpaced" : bytes(io.background_rate_limit) + "/s";
  document.getElementById("io-notes").textContent =
    "Journal sync p50 " + micros(io.journal_sync_p50_micros) + ", p99 " + micros(io.journal_sync_p99_micros) +
    " (recent syncs). Flushes and compactions: " + pace + ", throttled " + micros(io.background_throttled_micros) +
    " in total for the journal's sake. The timeline shows the newest " + io.events.length + " events.";
  const list = io.flushes.map((f) => {
    const when = seconds(Math.max(0, (io.now_micros - f.start_micros) / 1e6)) + " ago";
    return el(
      "li",
      {},
      "flush " + when + ": " + f.files + (f.files === 1 ? " table" : " tables") + ", " + count(f.entries) + " entries, " +
        (f.bytes / 1024).toFixed(0) + " KiB written in " + micros(f.duration_micros),
    );
  });
  const ol = document.getElementById("flushes");
  if (list.length === 0) list.push(el("li", { class: "muted" }, "no flush since start"));
  ol.replaceChildren(...list);
}

function renderMerger(m) {
  const avg = m.groups === 0 ? 0 : m.transactions / m.groups;
  document.getElementById("merger-summary").textContent =
    "Durability " + m.durability + ": " + count(m.transactions) + " transactions in " + count(m.groups) +
    " groups (" + avg.toFixed(2) + " per group), " + count(m.syncs) + " syncs, " + count(m.queued) +
    " queued, " + bytes(m.unsynced_bytes) + " not yet durable; commit p50 " + micros(m.commit_p50_micros) +
    ", p99 " + micros(m.commit_p99_micros) + ".";
  const max = Math.max(1, ...m.group_sizes.map((b) => b.groups));
  let prev = 0;
  const bars = m.group_sizes.map((b) => {
    const label = b.le === null ? ">" + prev : b.le === prev + 1 || b.le === 1 ? String(b.le) : prev + 1 + "–" + b.le;
    if (b.le !== null) prev = b.le;
    const fill = el("span", { class: "fill", title: count(b.groups) + " groups" });
    fill.style.height = Math.round((b.groups / max) * 90) + "%";
    return el("div", { class: "bar" }, fill, el("span", { class: "label" }, label));
  });
  document.getElementById("group-sizes").replaceChildren(...bars);
}

function renderCluster(c) {
  const section = document.getElementById("cluster-section");
  section.hidden = c === null;
  if (c === null) return;
  document.getElementById("cluster-summary").textContent =
    "Node " + c.node_id + ", " + c.partitions.length + " partitions" + (c.apply_failed ? "; applying failed: " + c.apply_failed : ".");
  const rows = c.partitions.map((p) =>
    el(
      "tr",
      { "data-partition": p.partition },
      el("td", {}, p.partition),
      el("td", {}, p.role),
      el("td", {}, p.master_node === null ? "unknown" : "node " + p.master_node),
      el(
        "td",
        {},
        ...p.members.map((m) =>
          el(
            "div",
            { class: "mono" },
            (m.master ? "master " : "replica ") + "node " + m.node + " " + m.host + ":" + m.port + " at " + count(m.offset) +
              (m.lagging ? " (lagging)" : "") + (m.local ? " (this node)" : ""),
          ),
        ),
      ),
      el("td", {}, count(p.applied_offset) + " / " + count(p.log_end)),
      el("td", {}, count(p.lag_records)),
    ),
  );
  replaceRows(document.querySelector("#partitions tbody"), rows);
}

// What each part of the page was last drawn from: a part whose inputs did not change since
// the last poll is left alone, so an idle page costs the browser one fetch a second and no
// layout (the browser often shares its machine with a server under load).
const drawn = new Map();

function redraw(part, inputs, draw) {
  const key = JSON.stringify(inputs);
  if (drawn.get(part) === key) return;
  drawn.set(part, key);
  draw();
}

// The parts of the page that show times relative to now change with the clock: their
// inputs include the texts those times render as, so they redraw only when a text changes.
function render(s) {
  const read = s.server.read_only ? " · READ-ONLY: " + s.server.read_only : "";
  const info =
    "v" + s.server.version + " · " + s.server.mode + " · up " + seconds(s.server.uptime_seconds) + " · " +
    count(s.server.connected_clients) + " clients" + read;
  redraw("info", info, () => {
    document.getElementById("server-info").textContent = info;
  });
  const now = s.server.now_ms;
  const made = s.stores.map((st) => [st.current, st.previous].map((v) => (v ? ago(v.created_ms, now) : null)));
  redraw("stores", [s.stores, s.pushes, made], () => renderStores(s));
  const io = s.io;
  const moving = io.events.some((e) => e.start_micros + e.duration_micros >= io.now_micros - WINDOW_US);
  const flushed = io.flushes.map((f) => seconds(Math.max(0, (io.now_micros - f.start_micros) / 1e6)));
  const { now_micros, ...still } = io;
  redraw("io", [still, flushed, moving ? now_micros : null], () => renderIo(io));
  redraw("merger", s.merger, () => renderMerger(s.merger));
  redraw("cluster", s.cluster, () => renderCluster(s.cluster));
}

let polls = 0;

async function poll() {
  const badge = document.getElementById("poll-state");
  try {
    const resp = await fetch("/api/status", { cache: "no-store" });
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    render(await resp.json());
    polls++;
    badge.textContent = "live";
    badge.className = "badge ok";
    badge.setAttribute("data-polls", String(polls));
  } catch (e) {
    badge.textContent = "unreachable: " + e.message;
    badge.className = "badge error";
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

document.addEventListener("DOMContentLoaded", poll);
