// orchestra run report: draws the run's data (the JSON above) into the page.
// Plain DOM code, no library; text goes in with textContent only.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("orchestra-data").textContent);
  const run = data.run;
  const tasks = data.tasks;
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function ms(value) {
    if (value >= 1000) return (value / 1000).toFixed(2) + " s";
    if (value >= 1) return value.toFixed(1) + " ms";
    return Math.round(value * 1000) + " µs";
  }

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  // One fact is a list of [text, role] segments; see orchestra/cli/_tracefile.py.
  function factNode(fact) {
    const node = el("span", "fact");
    for (const [text, role] of fact) node.appendChild(el("span", role ? "r-" + role : "", text));
    return node;
  }

  function factsNode(facts, tag) {
    const node = el(tag || "div", "facts");
    for (const fact of facts) node.appendChild(factNode(fact));
    return node;
  }

  function factText(fact) {
    return fact.map((segment) => segment[0]).join("");
  }

  const TELLING = new Set(["decision", "decision-bad", "error", "bad"]);
  const BAD = new Set(["decision-bad", "error", "bad"]);

  // --- who needs whom ------------------------------------------------------------------
  const needs = tasks.map(() => []);
  tasks.forEach((task, i) => task.deps.forEach((d) => needs[d].push(i)));
  const byId = new Map(tasks.map((task, i) => [task.id, i]));

  function why(task) {
    if (!task.attempts.length) {
      if (task.cause && task.cause.length) {
        return "upstream " + task.cause.map((c) => tasks[c].id).join(", ") + " failed";
      }
      return "never ran: " + task.state + (task.inferred ? " (inferred)" : "");
    }
    const seen = new Set();
    const said = [];
    const tell = (fact) => {
      const text = factText(fact);
      if (!seen.has(text)) {
        seen.add(text);
        said.push(text);
      }
    };
    for (const attempt of task.attempts) {
      for (const fact of attempt.facts) if (TELLING.has(fact[0][1])) tell(fact);
      for (const call of attempt.calls) {
        const roles = call[4] ? BAD : TELLING; // a hook's news is a refusal or an error
        for (const fact of call[5]) if (roles.has(fact[0][1])) tell(fact);
      }
    }
    if (task.attempts.length > 1) said.unshift(plural(task.attempts.length, "attempt"));
    return said.join(" · ");
  }

  // --- header --------------------------------------------------------------------------
  $("run-title").textContent = "run " + run.dag;
  const badge = $("run-badge");
  badge.textContent = run.ok === true ? "ok" : run.ok === false ? "failed" : "unfinished";
  badge.classList.add(run.ok === true ? "ok" : "failed");
  $("run-sub").textContent = [
    "run id " + run.id,
    ms(run.duration),
    plural(tasks.length, "task"),
    "from " + run.source,
    ...(run.budget ? [run.budget] : []),
  ].join("  ·  ");
  const counts = $("run-counts");
  const chips = [];
  for (const [state, count] of Object.entries(run.counts)) {
    // a button: each click selects the next task that ended so (found in a big graph)
    const chip = el("button", "chip st-" + state, count + " " + state.replace("_", " "));
    chip.type = "button";
    chip.title = "show the next " + state.replace("_", " ") + " task";
    chip.setAttribute("data-state", state);
    chips.push([chip, state]);
    counts.appendChild(chip);
  }
  const notes = []; // run.graphNote is said once, where the graph would be
  if (!run.graph) {
    notes.push("The trace does not carry the DAG's shape (orchestra.dag.deps): no arrows.");
  }
  if (run.dropped) {
    notes.push(
      "The SDK dropped " + run.dropped + " event(s) of the run span (its span limits): " +
        "the state of a task that never ran may be inferred from its deps."
    );
  }
  if (run.fatal) notes.push("The run itself failed: " + run.fatal);
  $("run-notes").textContent = notes.join(" ");

  // --- the graph -----------------------------------------------------------------------
  const graph = $("graph");
  const svg = graph.querySelector("svg");
  const nodes = tasks.map((task, i) => {
    const g = document.getElementById("n" + i);
    if (!g) return null;
    g.classList.add("st-" + task.state);
    if (!task.attempts.length) g.classList.add("notrun");
    g.setAttribute("data-task", task.id);
    g.setAttribute("data-state", task.state);
    g.addEventListener("click", () => select(i, "graph"));
    return g;
  });
  const edgesOf = tasks.map(() => []);
  if (svg) {
    for (const g of svg.querySelectorAll("g.edge")) {
      const m = /^e(\d+)_(\d+)$/.exec(g.id);
      if (!m) continue;
      edgesOf[Number(m[1])].push(g);
      edgesOf[Number(m[2])].push(g);
    }
  } else {
    graph.appendChild(el("p", "note", (run.graphNote || "No graph in this report") + "."));
    // nothing to zoom, and a search acts on the timeline: it goes there
    $("graph-tools").hidden = true;
    $("graph-hint").hidden = true;
    $("timeline-tools").prepend($("find"), $("task-ids"));
  }
  const fit = $("zoom-fit");
  const real = $("zoom-real");
  const natural = svg ? (svg.viewBox.baseVal.width * 4) / 3 : 0; // pt to px
  function zoom(fitted) {
    if (svg) {
      const room = graph.clientWidth - 4;
      svg.style.width = (fitted ? Math.min(room, natural * 1.5) : natural) + "px";
      svg.style.height = "auto";
    }
    fit.classList.toggle("on", fitted);
    real.classList.toggle("on", !fitted);
  }
  fit.addEventListener("click", () => zoom(true));
  real.addEventListener("click", () => zoom(false));
  // Fit a graph that stays legible when fitted; show a big one at full size, scrolled.
  zoom(natural <= graph.clientWidth * 2);

  // --- the timeline --------------------------------------------------------------------
  const span = Math.max(run.duration, 1e-3);
  const pct = (value) => Math.min(100, Math.max(0, (value / span) * 100)) + "%";
  const axis = $("axis");
  const marks = Math.max(1, Math.min(4, Math.floor(axis.clientWidth / 90))); // none overlap
  for (let k = 0; k <= marks; k++) {
    const mark = el("span", "", ms((span * k) / marks));
    mark.style.left = (k * 100) / marks + "%";
    if (k === marks) mark.style.transform = "translateX(-100%)";
    axis.appendChild(mark);
  }
  const order = tasks
    .map((task, i) => i)
    .sort((a, b) => {
      const ta = tasks[a].attempts;
      const tb = tasks[b].attempts;
      if (ta.length && tb.length) return ta[0].s - tb[0].s || a - b;
      if (ta.length !== tb.length) return ta.length ? -1 : 1;
      return a - b;
    });
  const rows = new Array(tasks.length);
  const waterfall = $("waterfall");
  const frag = document.createDocumentFragment();
  for (const i of order) {
    const task = tasks[i];
    const row = el("div", "row st-" + task.state + (task.attempts.length ? "" : " notrun"));
    row.setAttribute("data-task", task.id);
    row.setAttribute("data-state", task.state);
    const label = el("div", "label");
    label.appendChild(el("span", "swatch"));
    label.appendChild(el("span", "tid", task.id));
    label.appendChild(el("span", "state", task.state.replace("_", " ")));
    label.title = task.id;
    row.appendChild(label);
    const track = el("div", "track");
    task.attempts.forEach((attempt, k) => {
      if (k > 0) {
        const before = task.attempts[k - 1];
        const wait = el("div", "wait");
        wait.style.left = pct(before.s + before.d);
        wait.style.width = pct(attempt.s - before.s - before.d);
        wait.title = "waiting to retry: " + ms(attempt.s - before.s - before.d);
        track.appendChild(wait);
      }
      const bar = el("div", "bar st-" + attempt.state + " " + attempt.state);
      bar.style.left = pct(attempt.s);
      bar.style.width = pct(attempt.d);
      bar.title = ["attempt " + attempt.n, attempt.state, ms(attempt.d)]
        .concat(attempt.facts.filter((f) => TELLING.has(f[0][1])).map(factText))
        .join(" · ");
      track.appendChild(bar);
      for (const call of attempt.calls) {
        if (!call[4]) continue;
        const bad = call[5].some((f) => BAD.has(f[0][1]));
        const tick = el("div", bad ? "tick bad" : "tick");
        tick.style.left = pct(call[2]);
        tick.title = call[1] + " · " + ms(call[3]) + (call[5].length ? " · " : "") +
          call[5].map(factText).join(" · ");
        track.appendChild(tick);
      }
    });
    row.appendChild(track);
    const text = why(task);
    const reason = el("div", "why", text);
    reason.title = text;
    row.appendChild(reason);
    row.addEventListener("click", () => select(i, "timeline"));
    rows[i] = row;
    frag.appendChild(row);
  }
  waterfall.appendChild(frag);
  const onlyBad = $("only-bad");
  function filter() {
    tasks.forEach((task, i) => {
      rows[i].hidden = onlyBad.checked && task.state === "succeeded" && i !== selected;
    });
  }
  onlyBad.addEventListener("change", filter);

  // --- details -------------------------------------------------------------------------
  function taskLinks(indices) {
    const node = el("dd");
    if (!indices.length) node.textContent = "none";
    indices.forEach((j, k) => {
      if (k) node.appendChild(document.createTextNode(", "));
      const link = el("a", "task", tasks[j].id);
      link.addEventListener("click", () => select(j, "details"));
      node.appendChild(link);
    });
    return node;
  }

  function details(i) {
    const task = tasks[i];
    const body = $("details-body");
    body.replaceChildren();
    body.appendChild(el("h3", "", task.id));
    body.appendChild(el("span", "chip st-" + task.state, task.state.replace("_", " ")));
    const dl = el("dl");
    const add = (term, value) => {
      dl.appendChild(el("dt", "", term));
      dl.appendChild(typeof value === "string" ? el("dd", "", value) : value);
    };
    add("attempts", String(task.attempts.length));
    if (task.attempts.length) {
      const first = task.attempts[0];
      const last = task.attempts[task.attempts.length - 1];
      add("ran", "from +" + ms(first.s) + ", for " + ms(last.s + last.d - first.s));
    }
    if (task.cause && task.cause.length) add("failed upstream", taskLinks(task.cause));
    add("depends on", taskLinks(task.deps));
    add("needed by", taskLinks(needs[i]));
    if (task.inferred) add("note", "state inferred from its deps");
    body.appendChild(dl);
    for (const attempt of task.attempts) {
      const box = el("div", "attempt st-" + attempt.state);
      box.appendChild(
        el("h4", "", "Attempt " + attempt.n + "  ·  +" + ms(attempt.s) + "  ·  " + ms(attempt.d))
      );
      box.appendChild(factsNode(attempt.facts));
      if (attempt.tb) box.appendChild(el("pre", "tb", attempt.tb)); // the failing frames
      if (attempt.calls.length) {
        const list = el("ul", "calls");
        for (const [depth, name, start, dur, , facts] of attempt.calls) {
          const item = el("li");
          item.style.paddingLeft = depth * 14 + "px";
          item.appendChild(el("span", "name", name));
          item.appendChild(el("span", "dur", "  " + ms(dur) + "  "));
          item.appendChild(factsNode(facts, "span"));
          item.title = "+" + ms(start);
          list.appendChild(item);
        }
        box.appendChild(list);
      }
      body.appendChild(box);
    }
  }

  let selected = -1;
  function select(i, from) {
    if (selected >= 0) {
      rows[selected].classList.remove("sel");
      if (nodes[selected]) nodes[selected].classList.remove("sel");
      for (const g of edgesOf[selected]) g.classList.remove("near");
    }
    selected = i;
    rows[i].classList.add("sel");
    rows[i].hidden = false;
    const node = nodes[i];
    if (node) {
      node.classList.add("sel");
      for (const g of edgesOf[i]) g.classList.add("near");
      if (from !== "graph") {
        const box = node.getBoundingClientRect();
        const view = graph.getBoundingClientRect();
        graph.scrollLeft += box.left - view.left - view.width / 2 + box.width / 2;
        graph.scrollTop += box.top - view.top - view.height / 2 + box.height / 2;
      }
    }
    if (from !== "timeline" && from !== "load") rows[i].scrollIntoView({ block: "nearest" });
    details(i);
  }

  // --- find ----------------------------------------------------------------------------
  const ids = $("task-ids");
  for (const task of tasks) ids.appendChild(el("option", "", null)).value = task.id;
  $("find").addEventListener("change", (event) => {
    const i = byId.get(event.target.value.trim());
    if (i !== undefined) select(i, "find");
  });

  for (const [chip, state] of chips) {
    chip.addEventListener("click", () => {
      const those = order.filter((i) => tasks[i].state === state);
      const next = those.find((i) => order.indexOf(i) > order.indexOf(selected));
      select(next === undefined ? those[0] : next, "chip");
    });
  }

  // Open on the first task that did not succeed, else on the first one with a story.
  const bad = order.filter((i) => tasks[i].state !== "succeeded");
  const first = bad.length ? bad[0] : order.find((i) => why(tasks[i]));
  if (tasks.length > 200 && bad.length) onlyBad.checked = true; // the rest is a long list
  if (first !== undefined) select(first, "load");
  filter();
  document.body.setAttribute("data-ready", "1");
})();
