// gpu-tracker dashboard: build, sort, filter and re-price the Now table in the page (no server
// round trip, no library). The server sends every offer as data (#offers-data, JSON); this
// makes the rows (text only: textContent, never HTML), then shows, hides and reorders them.
"use strict";

(function () {
  const table = document.getElementById("offers");
  if (!table) return;
  const body = table.tBodies[0];
  const FILTERED = ["gpu_model", "kind", "provider", "region"];
  const PRICES = ["h", "gh", "hu", "ghu"];

  function cell(row, text) {
    const td = row.insertCell();
    td.textContent = text;
    return td;
  }

  // One offer, as tracker/web/pages.py sends it (its order of fields).
  function offerRow(o) {
    const [classes, gpu, memory, kind, provider, place, region, history, type, gpus, currency,
           prices, price, usd, pflop, interruption, state, units] = o;
    const row = document.createElement("tr");
    row.className = classes;
    [gpu, kind, provider, region].forEach((v, i) => row.setAttribute("data-f-" + FILTERED[i], v));
    for (const text of [gpu, memory, kind, provider, place]) cell(row, text);
    const link = document.createElement("a");
    link.href = history;
    link.textContent = type;
    cell(row, "").appendChild(link);
    cell(row, gpus);
    const priced = cell(row, price);
    priced.className = "price";
    priced.dataset.currency = currency;
    prices.forEach((v, i) => { priced.dataset[PRICES[i]] = v; });
    cell(row, usd).className = "currency";
    for (const text of [pflop, interruption, state]) cell(row, text);
    const unit = cell(row, "");
    unit.className = "unit";
    units.forEach((v, i) => { unit.dataset["unit" + i] = v; });
    return row;
  }

  const data = document.getElementById("offers-data");
  if (data) {
    const made = document.createDocumentFragment();
    for (const offer of JSON.parse(data.textContent)) made.appendChild(offerRow(offer));
    body.appendChild(made);
  }
  const rows = Array.from(body.rows);
  const form = document.getElementById("filters");
  const shown = document.getElementById("shown");
  const heads = Array.from(table.tHead.rows[0].cells);
  const priceAt = heads.findIndex((th) => th.textContent === "price");
  const currencyAt = priceAt + 1;

  function priceKey() {
    const per = form.querySelector("[data-per]").value === "gpu" ? "gh" : "h";
    return form.querySelector("[data-money]").value === "usd" ? per + "u" : per;
  }

  function reprice() {
    const key = priceKey();
    const usd = key.endsWith("u");
    heads[priceAt].textContent = "price";
    heads[priceAt].title = (key.startsWith("g") ? "per GPU-hour" : "per instance-hour");
    for (const row of rows) {
      const cell = row.cells[priceAt];
      const value = cell.dataset[key];
      cell.textContent = value === "" ? "" : Number(value).toFixed(4);
      cell.dataset.sort = value;
      row.cells[currencyAt].textContent = usd ? (value === "" ? "" : "USD") : cell.dataset.currency;
    }
    // USD per unit of the chosen workload: its column shows only while one is chosen.
    const work = form.querySelector("[data-workload]");
    const at = work ? work.selectedIndex - 1 : -1;
    table.classList.toggle("work", at >= 0);
    for (const row of rows) {
      const unit = row.querySelector("td.unit");
      const value = at >= 0 ? (unit.dataset["unit" + at] || "") : "";
      unit.textContent = value === "" ? "" : Number(value).toFixed(4);
      unit.dataset.sort = value;
    }
  }

  function filter() {
    const wanted = {};
    for (const select of form.querySelectorAll("[data-filter]")) {
      if (select.value) wanted[select.dataset.filter] = select.value;
    }
    const text = form.querySelector("[data-search]").value.trim().toLowerCase();
    const hidden = Array.from(form.querySelectorAll("[data-hide]"))
      .filter((box) => box.checked).map((box) => box.dataset.hide);
    let count = 0;
    for (const row of rows) {
      let visible = Object.entries(wanted).every(
        ([key, value]) => row.getAttribute("data-f-" + key) === value);
      visible = visible && (!text || row.textContent.toLowerCase().includes(text));
      visible = visible && !hidden.some((name) => row.classList.contains(name));
      row.hidden = !visible;
      if (visible) count += 1;
    }
    shown.textContent = count + " of " + rows.length + " offers shown";
  }

  function sortBy(index) {
    const th = heads[index];
    const ascending = th.getAttribute("aria-sort") !== "ascending";
    heads.forEach((h) => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const numeric = th.dataset.type === "number";
    const value = (row) => {
      const cell = row.cells[index];
      const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent;
      return numeric ? (raw === "" ? NaN : Number(String(raw).replace(/,/g, ""))) : raw;
    };
    const sorted = rows.slice().sort((a, b) => {
      const x = value(a), y = value(b);
      if (numeric) {  // offers without the figure last, whichever the direction
        if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) - Number.isNaN(y);
        return ascending ? x - y : y - x;
      }
      return ascending ? String(x).localeCompare(String(y)) : String(y).localeCompare(String(x));
    });
    for (const row of sorted) body.appendChild(row);
  }

  // The filters live in the URL (/?gpu=H100&kind=spot), so a filtered table can be bookmarked,
  // shared and reloaded. The page itself is the same for every URL (the server keeps one).
  const PARAMS = { gpu: "gpu_model", gpu_model: "gpu_model", kind: "kind",
                   provider: "provider", region: "region" };
  const DEFAULTS = { per: "gpu", money: "usd" };

  function fold(text) {  // on_demand, On-Demand and on-demand name one kind
    return text.trim().toLowerCase().replace(/_/g, "-");
  }

  function fromUrl() {
    const params = new URLSearchParams(window.location.search);
    const unknown = [];
    for (const [name, value] of params) {
      let field = null;
      if (name in PARAMS) field = form.querySelector(`[data-filter="${PARAMS[name]}"]`);
      else if (name === "per") field = form.querySelector("[data-per]");
      else if (name === "money") field = form.querySelector("[data-money]");
      if (name === "q") {
        form.querySelector("[data-search]").value = value;
      } else if (name === "hide") {
        for (const part of value.split(",")) {
          const box = form.querySelector(`[data-hide="${CSS.escape(part.trim())}"]`);
          if (box) box.checked = true;
        }
      } else if (field) {
        const option = Array.from(field.options).find((o) => fold(o.value) === fold(value));
        if (option) field.value = option.value;
        else unknown.push(`${name}=${value}`);
      }
    }
    return unknown;
  }

  function toUrl() {
    const params = new URLSearchParams();
    for (const select of form.querySelectorAll("[data-filter]")) {
      if (select.value) params.set(select.dataset.filter === "gpu_model" ? "gpu" :
                                   select.dataset.filter, select.value);
    }
    const text = form.querySelector("[data-search]").value.trim();
    if (text) params.set("q", text);
    for (const [name, field] of [["per", "[data-per]"], ["money", "[data-money]"]]) {
      const value = form.querySelector(field).value;
      if (value !== DEFAULTS[name]) params.set(name, value);
    }
    const hidden = Array.from(form.querySelectorAll("[data-hide]"))
      .filter((box) => box.checked).map((box) => box.dataset.hide);
    if (hidden.length) params.set("hide", hidden.join(","));
    const query = params.toString();
    const url = window.location.pathname + (query ? "?" + query : "");
    if (url !== window.location.pathname + window.location.search) {
      window.history.replaceState(null, "", url);
    }
  }

  function update() {
    reprice();
    filter();
    toUrl();
  }

  heads.forEach((th, index) => th.addEventListener("click", () => sortBy(index)));
  form.addEventListener("input", update);
  form.addEventListener("change", update);
  const unknown = fromUrl();
  reprice();
  filter();
  if (unknown.length) {  // a bookmark naming a value no current offer has
    shown.textContent += " (no offer has " + unknown.join(", ") + ": that filter is off)";
  }
})();
