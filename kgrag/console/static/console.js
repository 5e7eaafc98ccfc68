/* kgrag console: ask the agent and watch its steps stream (POST agent/stream, NDJSON), see the answer's evidence
 * drawn as a graph (cytoscape, vendored), look at a source's schema and try the retrieval services.
 * Stable hooks for tests and scripts: [data-step=<node>] per finished step, [data-role=answer],
 * [data-step=query_graph] (the plan, [data-role=query-graph] its line), [data-role=evidence] (data-nodes,
 * data-edges), [data-role=error]. Every string from the server is set as text. */
"use strict";

const PAGE = {
  source: null,            // {kind: "kn"|"kg", id}
  sources: {networks: [], kgs: []},
  history: [],             // the thread's turns, as the last answer returned them
  sessionId: null,         // a KG session the thread reuses
  key: sessionStorage.getItem("kgrag-api-key") || "",
  retry: null,             // what to do again once a key is given
  tab: "ask",
};
window.kgragConsole = PAGE;  // for scripts: the page's state

const $ = (selector, root = document) => root.querySelector(selector);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const short = (value, limit = 160) => {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text && text.length > limit ? text.slice(0, limit - 1) + "…" : (text || "");
};
const fmtMs = (ms) => (typeof ms === "number" ? (ms < 10 ? ms.toFixed(1) : Math.round(ms)) + " ms" : "");

/* ---------------------------------------------------------------- HTTP */

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function headers(json = true) {
  const h = json ? {"content-type": "application/json"} : {};
  if (PAGE.key) h.authorization = "Bearer " + PAGE.key;
  return h;
}

async function failure(response) {
  let message = response.statusText || "request failed";
  try {
    const body = await response.json();
    const said = body.detail ?? body.error ?? body.message;
    if (typeof said === "string") message = said;
    else if (Array.isArray(said)) message = said.map((d) => `${(d.loc || []).slice(1).join(".")}: ${d.msg}`).join("; ");
  } catch (_) { /* not JSON */ }
  return new ApiError(response.status, `${response.status}: ${message}`);
}

async function request(path, options = {}) {
  let response;
  try {
    response = await fetch(path, {...options, headers: headers(options.body !== undefined)});
  } catch (err) {
    throw new ApiError(0, `the server did not answer (${err.message}); is kgrag serve running?`);
  }
  if (!response.ok) throw await failure(response);
  return response;
}

const getJSON = async (path) => (await request(path)).json();
const postJSON = async (path, body) => (await request(path, {method: "POST", body: JSON.stringify(body)})).json();

/* When the server says 401: ask for the key, then run `again`. */
function needKey(again) {
  PAGE.retry = again;
  const form = $("#key-form");
  form.hidden = false;
  $("[data-role=api-key]", form).focus();
}

/* `work`'s result, or undefined with the error shown in `where` (the banner when null); on a 401 the page asks
 * for the key and then calls `again`. */
async function guarded(work, where, again) {
  try {
    return await work();
  } catch (err) {
    if (err.status === 401) {
      needKey(again || (() => {}));
      showError(where, PAGE.key ? "the API key was refused: enter the right one" : "this server needs an API key");
    } else {
      showError(where, err.message);
    }
    return undefined;
  }
}

function showError(where, message) {
  const box = el("div", {class: "error", "data-role": "error", role: "alert"}, message);
  (where || $("#banner")).append(box);
  if (!where) $("#banner").hidden = false;
  return box;
}

/* ---------------------------------------------------------------- sources */

function sourceParam(source = PAGE.source) {
  return source ? `${source.kind}=${encodeURIComponent(source.id)}` : "";
}

async function loadSources(wanted, then) {
  const select = $("#source");
  const found = await guarded(() => getJSON("console/api/sources"), null,
    () => loadSources(wanted, then));
  if (!found) return;
  PAGE.sources = found;
  select.replaceChildren();
  const group = (label, kind, items) => {
    const g = el("optgroup", {label});
    for (const item of items) {
      const note = item.prepared === false ? " (not prepared)" : "";
      g.append(el("option", {value: `${kind}:${item.id}`}, `${item.name && item.name !== item.id ? `${item.id} — ${item.name}` : item.id}${note}`));
    }
    if (items.length) select.append(g);
  };
  group("Knowledge networks", "kn", PAGE.sources.networks || []);
  group("Triple KGs", "kg", PAGE.sources.kgs || []);
  if (wanted && !select.querySelector(`option[value="${CSS.escape(`${wanted.kind}:${wanted.id}`)}"]`)) {
    select.append(el("option", {value: `${wanted.kind}:${wanted.id}`}, `${wanted.id} (not listed)`));
  }
  const first = (PAGE.sources.kgs || []).find((k) => k.prepared) || (PAGE.sources.networks || [])[0];
  const pick = wanted || (first && {kind: PAGE.sources.kgs.includes(first) ? "kg" : "kn", id: first.id});
  if (pick) {
    select.value = `${pick.kind}:${pick.id}`;
    PAGE.source = pick;
  }
  if (then) await then();
}

function onSourceChange() {
  const [kind, ...rest] = $("#source").value.split(":");
  PAGE.source = {kind, id: rest.join(":")};
  newConversation();
  if (PAGE.tab === "schema") showSchema();
  if (PAGE.tab === "playground") preparePlayground();
}

/* ---------------------------------------------------------------- ask */

function newConversation() {
  PAGE.history = [];
  PAGE.sessionId = null;
  $("#conversation").replaceChildren();
  $("#ask-hint").hidden = false;
}

const STEP_TITLES = {
  extract_keywords: "extract keywords", schema_recall: "schema recall", contextual_recall: "contextual recall",
  plan: "plan", query_graph: "query graph", tools: "tools", answer: "answer",
};

function hopsText(path) {
  return (path || []).map((h) => h.direction === "in" ? `<-[${h.label || h.relation}]-` : `-[${h.label || h.relation}]->`)
    .join(" ?m ");
}

function queryGraphView(d) {
  const q = d.query_graph || {};
  const rows = [];
  const topics = (q.topics || []).map((t) => t.name).join(", ");
  rows.push(["topic", topics]);
  rows.push(["path", `${(q.topics || [{}])[0].name || "?"} ${hopsText(q.path)} ?answer`]);
  if (q.answer_type) rows.push(["answer type", q.answer_type_label || q.answer_type]);
  if (q.entity_constraint) {
    rows.push(["and", `${q.entity_constraint.topic.name} ${hopsText(q.entity_constraint.path)} ?answer`]);
  }
  if (q.literal_constraint) {
    const c = q.literal_constraint;
    const bound = c.op === "between" ? `${c.value} .. ${c.value2}` : `${c.op} ${c.value}`;
    rows.push(["filter", `${c.label || c.relation} ${bound}` + (c.text ? ` ("${c.text}")` : "")]);
  }
  if (q.aggregation) {
    const a = q.aggregation;
    rows.push(["aggregate", a.op === "count" ? "count" : `${a.op} ${a.label || a.relation}`]);
  }
  rows.push(["confidence", Number(d.confidence ?? q.confidence ?? 0).toFixed(2)]);
  for (const part of d.unused || []) rows.push(["not used", part]);
  const parts = [el("div", {class: "plan-line", "data-role": "query-graph"}, d.line || ""),
    table(rows, [["part", (r) => r[0]], ["", (r) => r[1]]], {class: "forms"})];
  if ((d.candidates || []).length) {
    parts.push(table(d.candidates, [["next plans", (c) => c.line], ["score", (c) => Number(c.score ?? 0).toFixed(2)]],
      {class: "scores"}));
  }
  return el("div", {}, parts);
}

function table(rows, columns, attrs = {}) {
  const head = el("tr", {}, columns.map(([title]) => el("th", {}, title)));
  const body = rows.map((row) => el("tr", {}, columns.map(([, get]) => {
    const value = get(row);
    return el("td", {}, value instanceof Node ? value : short(value ?? "", 240));
  })));
  return el("table", attrs, el("thead", {}, head), el("tbody", {}, body));
}

function callView(call, planned = false) {
  if (planned) {
    return el("div", {class: "call", "data-call": call.name}, el("b", {}, call.name || "?"), " ",
      el("span", {class: "why"}, call.why || ""));
  }
  const head = el("div", {class: "call-head"}, el("b", {}, call.name || "?"), " ",
    el("code", {}, short(call.args, 300)), call.ms ? el("span", {class: "ms"}, fmtMs(call.ms)) : null);
  const why = call.why ? el("div", {class: "why"}, call.why) : null;
  const result = call.error ? el("div", {class: "call-error"}, "error: " + call.error)
    : call.result ? el("div", {class: "result"}, call.result) : null;
  return el("div", {class: "call", "data-call": call.name}, head, why, result);
}

function stepDetail(node, detail) {
  const d = detail || {};
  if (node === "extract_keywords") {
    return el("div", {class: "chips"}, (d.keywords || []).map((k) => el("span", {class: `chip ${k.type || ""}`},
      k.text || k.keyword || k.name, k.type ? el("small", {}, " " + k.type) : null,
      k.name && k.name !== (k.text || k.keyword) ? el("small", {}, " → " + k.name) : null)));
  }
  if (node === "schema_recall") {
    const s = d.schema || {};
    const parts = [];
    if (s.intents && s.intents.length) {
      parts.push(table(s.intents, [["intent", (r) => r[0]], ["p", (r) => Number(r[1]).toFixed(2)]], {class: "scores"}));
    }
    if (s.chains && s.chains.length) {
      parts.push(table(s.chains, [["chain", (r) => r.chain], ["p", (r) => Number(r.p ?? r.score ?? 0).toFixed(2)]], {class: "scores"}));
    }
    for (const key of ["relations", "object_types", "relation_types"]) {
      if (s[key] && s[key].length) {
        parts.push(el("div", {class: "chips"}, el("small", {}, key.replace("_", " ") + ": "),
          s[key].map((r) => el("span", {class: "chip"}, typeof r === "string" ? r : JSON.stringify(r)))));
      }
    }
    if (s.ranker) parts.push(el("div", {class: "why"}, "ranked by " + s.ranker));
    return el("div", {}, parts);
  }
  if (node === "contextual_recall") {
    const forms = d.storage_forms || [];
    if (!forms.length) return el("div", {class: "why"}, "no storage form found");
    return table(forms, [["keyword", (f) => f.keyword], ["stored as", (f) => f.name],
      ["where", (f) => f.object_type || f.entity_id || ""], ["match", (f) => f.match_type],
      ["similarity", (f) => (f.similarity ?? "") === "" ? "" : Number(f.similarity).toFixed(2)]], {class: "forms"});
  }
  if (node === "query_graph") return queryGraphView(d);
  if (node === "plan" || node === "tools") {
    const calls = d.calls || [];
    if (!calls.length) return null;
    return el("div", {}, calls.map((call) => callView(call, node === "plan")));
  }
  return null;
}

function addStep(steps, event) {
  const detail = stepDetail(event.node, event.detail);
  const head = el("div", {class: "step-head"}, el("span", {class: "node"}, STEP_TITLES[event.node] || event.node),
    el("span", {class: "ms"}, fmtMs(event.ms)), el("span", {class: "summary"}, event.summary || ""));
  const item = el("li", {class: "step", "data-step": event.node, "data-ms": event.ms ?? ""}, head,
    detail ? el("div", {class: "step-detail"}, detail) : null);
  steps.append(item);
  return item;
}

function turnCard(question) {
  const steps = el("ol", {class: "steps", "data-role": "steps"});
  const result = el("div", {class: "result-pane"});
  const card = el("article", {class: "turn", "data-role": "turn"},
    el("h2", {class: "question", "data-role": "asked"}, question),
    el("div", {class: "turn-body"}, el("div", {class: "steps-pane"}, el("h3", {}, "Steps"), steps), result));
  $("#conversation").append(card);
  $("#ask-hint").hidden = true;
  card.scrollIntoView({block: "nearest"});
  return {card, steps, result};
}

async function ask(question) {
  const text = (question ?? $("#question").value).trim();
  if (!PAGE.source) {
    showError(turnCard(text || "(no question)").result, "pick a knowledge network or a triple KG first");
    return;
  }
  if (!text) {
    showError(turnCard("(empty question)").result, "the question is empty: type a question first");
    return;
  }
  $("#question").value = "";
  const turn = turnCard(text);
  const submitted = performance.now();
  turn.card.dataset.state = "running";
  const body = {question: text, history: PAGE.history.slice(-20)};
  body[PAGE.source.kind === "kg" ? "kg" : "kn_id"] = PAGE.source.id;
  if (PAGE.sessionId) body.session_id = PAGE.sessionId;
  let response;
  try {
    response = await request("agent/stream", {method: "POST", body: JSON.stringify(body)});
  } catch (err) {
    turn.card.dataset.state = "failed";
    if (err.status === 401) {
      showError(turn.result, PAGE.key ? "the API key was refused: enter the right one" : "this server needs an API key");
      turn.card.remove();
      needKey(() => ask(text));
      return;
    }
    showError(turn.result, err.message);
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;
  const handle = (event) => {
    if (event.event === "step") {
      addStep(turn.steps, event);
      if (!turn.card.dataset.firstStepMs) turn.card.dataset.firstStepMs = (performance.now() - submitted).toFixed(1);
    } else if (event.event === "end") {
      ended = true;
      showEnd(turn, event);
      turn.card.dataset.totalMs = (performance.now() - submitted).toFixed(1);
    } else if (event.event === "error") {
      ended = true;
      showError(turn.result, event.message);
    }
  };
  try {
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let cut;
      while ((cut = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, cut).trim();
        buffer = buffer.slice(cut + 1);
        if (line) handle(JSON.parse(line));
      }
    }
  } catch (err) {
    showError(turn.result, `the answer stream broke: ${err.message}`);
    ended = true;
  }
  if (!ended) showError(turn.result, "the server closed the stream before the answer");
  turn.card.dataset.state = "done";
}

function showEnd(turn, end) {
  PAGE.history = end.history || PAGE.history;
  if (end.session_id) PAGE.sessionId = end.session_id;
  const answers = end.answers || [];
  const refused = !answers.length && (end.errors || []).length;
  if (refused) {
    showError(turn.result, (end.errors || []).join("; "));
  }
  turn.result.append(el("h3", {}, "Answer"),
    el("div", {class: refused ? "answer refused" : "answer", "data-role": "answer",
      "data-answers": answers.length}, end.answer || "(no answer)"));
  if (!refused) {
    for (const note of end.errors || []) turn.result.append(el("div", {class: "note", "data-role": "note"}, note));
  }
  const meta = [`planner ${end.planner || "rules"}`, end.intents ? `intents ${end.intents}` : null,
    end.query_graph ? `confidence ${Number(end.confidence ?? 0).toFixed(2)}` : null,
    `${fmtMs(end.ms)} in all`].filter(Boolean).join(" · ");
  turn.result.append(el("div", {class: "why"}, meta));
  drawEvidence(turn.result, end.evidence_graph || {nodes: [], edges: []}, end);
}

/* ---------------------------------------------------------------- evidence graph */

const ROLE_COLOURS = {topic: "#e8590c", answer: "#2f9e44", node: "#4c6ef5"};

function drawEvidence(into, graph, end) {
  const nodes = graph.nodes || [];
  const edges = graph.edges || [];
  const info = el("div", {class: "node-info", "data-role": "node-info"}, nodes.length ? "Click a node to see its "
    + (PAGE.source.kind === "kg" ? "triples." : "properties.") : "");
  const canvas = el("div", {class: "evidence-canvas"});
  const legend = el("div", {class: "legend"},
    Object.entries(ROLE_COLOURS).map(([role, colour]) => el("span", {}, el("i", {style: `background:${colour}`}), role)),
    graph.truncated ? el("span", {class: "why"}, ` (${graph.truncated} more nodes not drawn)`) : null);
  const box = el("div", {class: "evidence", "data-role": "evidence", "data-nodes": nodes.length,
    "data-edges": edges.length}, el("h3", {}, `Evidence (${nodes.length} nodes, ${edges.length} edges)`));
  const drawnAnswers = nodes.filter((n) => n.role === "answer").length;
  const allAnswers = (end.answers || []).length;
  if (allAnswers > drawnAnswers) {
    box.append(el("div", {class: "why"}, `the evidence holds the paths of ${drawnAnswers} of the ${allAnswers} answers`));
  }
  into.append(box);
  if (!nodes.length) {
    box.append(el("div", {class: "why"}, "no evidence graph for this answer"));
    return;
  }
  box.append(legend, canvas, info);
  box.dataset.labels = nodes.map((n) => n.label).join("\u241f");
  if (typeof window.cytoscape !== "function") {
    box.append(el("div", {class: "error", "data-role": "error"}, "the graph library did not load"));
    return;
  }
  const many = nodes.length > 60;  // node labels on hover / tap only
  const star = nodes.length > 12;   // rings around the topic instead of rows
  const edgeLabels = edges.length <= 12;  // beyond that, the relations are listed once in the legend
  if (!edgeLabels) {
    const relations = [...new Set(edges.map((e) => e.label))];
    legend.append(el("span", {class: "why"}, "edges: " + relations.slice(0, 6).join(", ")
      + (relations.length > 6 ? ` (+${relations.length - 6})` : "")));
  }
  const cy = window.cytoscape({
    container: canvas,
    elements: [
      ...nodes.map((n) => ({data: {...n, short: short(n.label, 28)}})),
      ...edges.map((e) => ({data: e})),
    ],
    style: [
      {selector: "node", style: {"background-color": (n) => ROLE_COLOURS[n.data("role")] || "#868e96",
        label: many ? "" : "data(short)", "font-size": 11, "text-valign": "bottom", "text-margin-y": 3,
        width: 18, height: 18, color: "#212529", "text-wrap": "ellipsis", "text-max-width": "140px"}},
      {selector: "node[role = 'topic']", style: {width: 30, height: 30, label: "data(short)", "font-weight": "bold"}},
      {selector: "node[type = 'value']", style: {shape: "round-rectangle"}},
      {selector: "node:selected", style: {"border-width": 3, "border-color": "#212529", label: "data(short)"}},
      {selector: "edge", style: {width: 1.5, "line-color": "#adb5bd", "target-arrow-color": "#adb5bd",
        "target-arrow-shape": "triangle", "curve-style": "bezier", label: edgeLabels ? "data(label)" : "",
        "font-size": 9, color: "#495057", "text-rotation": "autorotate", "text-background-color": "#fff",
        "text-background-opacity": 0.8}},
    ],
    layout: star
      ? {name: "concentric", concentric: (n) => ({topic: 3, node: 2, answer: 1})[n.data("role")] || 1,
        levelWidth: () => 1, minNodeSpacing: many ? 4 : 40, animate: false}
      : {name: "breadthfirst", directed: false, spacingFactor: 1.15, animate: false,
        roots: nodes.filter((n) => n.role === "topic").map((n) => n.id)},
  });
  if (cy.zoom() > 1.3) { cy.zoom(1.3); cy.center(); }  // a small graph is not blown up to the whole box
  cy.on("tap", "node", (evt) => showNode(info, evt.target.data()));
  box.cy = cy;
}

async function showNode(info, node) {
  info.replaceChildren(el("h4", {}, node.label), el("div", {class: "why"}, `${node.role} · ${node.type || ""} · ${node.id}`));
  if (node.type === "value") return;
  if (node.properties && PAGE.source.kind === "kn") {
    info.append(table(Object.entries(node.properties), [["property", (r) => r[0]], ["value", (r) => r[1]]],
      {"data-table": "properties"}));
    return;
  }
  const detail = await guarded(() => getJSON(`console/api/node?${sourceParam()}&id=${encodeURIComponent(node.id)}`),
    info, () => showNode(info, node));
  if (!detail) return;
  if (detail.properties) {
    info.append(table(Object.entries(detail.properties), [["property", (r) => r[0]], ["value", (r) => r[1]]],
      {"data-table": "properties"}));
  }
  if (detail.triples) {
    info.append(table(detail.triples, [["subject", (t) => t[0]], ["relation", (t) => t[1]], ["object", (t) => t[2]]],
      {"data-table": "triples"}));
    if (detail.more) info.append(el("div", {class: "why"}, "more triples on the store"));
  }
}

/* ---------------------------------------------------------------- schema */

async function showSchema() {
  const box = $("#schema");
  box.replaceChildren(el("div", {class: "why"}, "loading…"));
  if (!PAGE.source) { box.replaceChildren(); showError(box, "pick a source first"); return; }
  const schema = await guarded(() => getJSON(`console/api/schema?${sourceParam()}`), box, showSchema);
  box.querySelector(".why")?.remove();
  if (!schema) return;
  if (schema.kind === "kg") {
    box.append(el("h2", {}, `${schema.id}: ${schema.entities ?? "?"} entities, ${schema.triples ?? "?"} triples`),
      table(schema.relations || [], [["relation", (r) => (r.label && r.label !== r.id ? `${r.id} (${r.label})` : r.id)], ["triples", (r) => r.triples]], {"data-table": "relations"}));
    return;
  }
  box.append(el("h2", {}, `${schema.name || schema.id} (${schema.id})`), el("h3", {}, "Object types"),
    table(schema.object_types || [], [["id", (t) => t.id], ["name", (t) => t.name], ["instances", (t) => t.instances],
      ["display", (t) => t.display_key || ""],
      ["properties (non-empty values)", (t) => (t.properties || []).map((p) => `${p.name} ${p.count}`).join(", ")]],
    {"data-table": "object_types"}),
    el("h3", {}, "Relation types"),
    table(schema.relation_types || [], [["id", (r) => r.id], ["name", (r) => r.name],
      ["from → to", (r) => `${r.source} → ${r.target}`], ["links", (r) => r.links]], {"data-table": "relation_types"}));
  const recent = await guarded(() => getJSON(`console/api/changes?kn=${encodeURIComponent(schema.id)}`), box, showSchema);
  if (!recent) return;
  const changes = recent.changes || [];
  box.append(el("h3", {}, "Recent changes"), changes.length
    ? table(changes, [["when", (c) => new Date(c.at * 1000).toLocaleString()], ["who", (c) => c.actor],
      ["what", (c) => c.action], ["version", (c) => `${(c.version_before || "—").slice(0, 12)} → ${(c.version_after || "—").slice(0, 12)}`],
      ["counts", (c) => Object.entries(c.counts || {}).map(([k, v]) => `${k} ${v}`).join(", ")]], {"data-table": "changes"})
    : el("div", {class: "why", "data-role": "no-changes"}, "no change recorded (kgrag audit lists every one)"));
}

/* ---------------------------------------------------------------- playground */

function preparePlayground() {
  const form = $("#play-form");
  const tool = form.tool.value;
  for (const span of form.querySelectorAll(".controls")) span.hidden = !span.dataset.for.split(" ").includes(tool);
  const result = $("#play-result");
  result.replaceChildren();
  if (PAGE.source && PAGE.source.kind !== "kn") {
    result.append(el("div", {class: "note", "data-role": "note"},
      "kn_search, context_search and the query modes work on knowledge networks: pick one above."));
  }
}

async function runPlayground() {
  const form = $("#play-form");
  const result = $("#play-result");
  result.replaceChildren();
  const query = form.query.value.trim();
  if (!PAGE.source || PAGE.source.kind !== "kn") { showError(result, "pick a knowledge network above"); return; }
  if (!query) { showError(result, "the query is empty"); return; }
  const tool = form.tool.value;
  let path;
  let body;
  if (tool === "query") {
    path = "api/query";
    body = {query, kn_id: PAGE.source.id, param: {mode: form.mode.value, top_k: Number(form.q_top_k.value),
      chunk_top_k: Number(form.chunk_top_k.value), max_total_tokens: Number(form.max_total_tokens.value),
      only_need_context: form.only_need_context.checked}};
  } else {
    path = `api/agent-retrieval/in/v1/kn/${tool}`;
    body = {query, kn_id: PAGE.source.id, only_schema: form.only_schema.checked,
      retrieval_config: {concept_retrieval: {top_k: Number(form.top_k.value)},
        semantic_instance_retrieval: {per_type_instance_limit: Number(form.per_type.value)}}};
  }
  const started = performance.now();
  const data = await guarded(() => postJSON(path, body), result, runPlayground);
  if (!data) return;
  result.append(el("div", {class: "why"}, `${tool} answered in ${fmtMs(performance.now() - started)}`));
  if (tool === "query") {
    const raw = data.raw_data || {};
    if (data.response) result.append(el("h3", {}, "Response"), el("div", {class: "answer"}, data.response));
    for (const key of ["entities", "relations", "chunks"]) {
      const rows = raw[key] || [];
      if (!rows.length) continue;
      const columns = Object.keys(rows[0]).slice(0, 5).map((c) => [c, (r) => r[c]]);
      result.append(el("h3", {}, `${key} (${rows.length})`), table(rows, columns, {"data-table": key}));
    }
    if (data.context) result.append(el("h3", {}, "Context"), el("pre", {class: "context"}, short(data.context, 6000)));
  } else {
    const concepts = [...(data.object_types || []), ...(data.relation_types || []), ...(data.action_types || [])];
    result.append(el("h3", {}, `Concepts (${concepts.length})`), table(concepts, [["type", (c) => c.concept_type],
      ["id", (c) => c.concept_id], ["name", (c) => c.concept_name], ["comment", (c) => c.comment]], {"data-table": "concepts"}));
    const nodes = data.nodes || [];
    result.append(el("h3", {}, `Instances (${nodes.length})`), table(nodes, [["type", (n) => n.object_type_id],
      ["name", (n) => n.instance_name], ["score", (n) => n.score ?? n.final_score ?? ""],
      ["properties", (n) => Object.entries(n.properties || {}).map(([k, v]) => `${k}: ${short(v, 40)}`).join("; ")]],
    {"data-table": "instances"}));
    const mappings = (data.contextual_knowledge || {}).keyword_mappings || [];
    if (mappings.length) {
      const rows = mappings.flatMap((m) => (m.storage_forms || []).map((f) => ({...f, keyword: m.keyword, type: m.object_type_id})));
      result.append(el("h3", {}, "Storage forms"), table(rows, [["keyword", (r) => r.keyword], ["type", (r) => r.type],
        ["stored as", (r) => r.form], ["match", (r) => r.match_type], ["similarity", (r) => r.similarity]],
      {"data-table": "storage_forms"}));
    }
  }
  result.append(el("details", {}, el("summary", {}, "raw JSON"),
    el("pre", {class: "raw", "data-role": "raw-json"}, JSON.stringify(data, null, 2))));
}

/* ---------------------------------------------------------------- tabs, wiring */

function showTab(tab) {
  PAGE.tab = tab;
  for (const button of document.querySelectorAll("[data-tab]")) button.setAttribute("aria-selected", String(button.dataset.tab === tab));
  for (const view of document.querySelectorAll("[data-view]")) view.hidden = view.dataset.view !== tab;
  if (tab === "schema") showSchema();
  if (tab === "playground") preparePlayground();
}

async function start() {
  const params = new URLSearchParams(location.search);
  const wanted = params.get("kg") ? {kind: "kg", id: params.get("kg")}
    : params.get("kn") ? {kind: "kn", id: params.get("kn")} : null;
  $("#ask-form").addEventListener("submit", (e) => { e.preventDefault(); ask(); });
  $("#new-conversation").addEventListener("click", newConversation);
  $("#source").addEventListener("change", onSourceChange);
  $("#play-form").addEventListener("submit", (e) => { e.preventDefault(); runPlayground(); });
  $("#play-form").tool.addEventListener("change", preparePlayground);
  for (const button of document.querySelectorAll("[data-tab]")) button.addEventListener("click", () => showTab(button.dataset.tab));
  $("#key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    PAGE.key = $("[data-role=api-key]").value.trim();
    sessionStorage.setItem("kgrag-api-key", PAGE.key);
    $("#key-form").hidden = true;
    $("#banner").replaceChildren();
    $("#banner").hidden = true;
    const again = PAGE.retry;
    PAGE.retry = null;
    if (again) again();
  });
  const q = params.get("q");
  if (wanted) {  // the source the address names, shown and used before the list arrives: a question asked
    PAGE.source = wanted;  // meanwhile goes to it (loadSources selects the same one)
    const value = `${wanted.kind}:${wanted.id}`;
    $("#source").replaceChildren(el("option", {value}, wanted.id));
    $("#source").value = value;
  }
  document.body.dataset.ready = "true";
  await loadSources(wanted, async () => {
    if (params.get("tab")) showTab(params.get("tab"));
    if (q !== null) await ask(q);
  });
}

document.addEventListener("DOMContentLoaded", start);
