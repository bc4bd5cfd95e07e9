"""The meter's browser side: the ES module that draws `ContextMeter` from its synced
traits, its stylesheet, and the level colours. Every colour is one of JupyterLab's
`--jp-*` theme variables (so light and dark themes both read well) with a fallback for
pages without them; text always uses the theme's font colours, never a level colour.
"""

from __future__ import annotations

MARK = "●"  # the level's colour, beside its name in words

_COLOURS = {  # one per meter level (`METER_LEVELS`; a test checks)
    "ok": "var(--jp-success-color1, #388e3c)",
    "warning": "var(--jp-warn-color1, #f57c00)",
    "error": "var(--jp-warn-color0, #e65100)",
    "compact": "var(--jp-brand-color1, #1976d2)",
    "blocking": "var(--jp-error-color1, #d32f2f)",
}


def level_colour(level: str) -> str:
    """A level's colour; one the table lacks draws as a warning, as the drawing code does
    (tests/notebook/test_meter_assets.py checks every meter level has its own)."""
    return _COLOURS.get(level, _COLOURS["warning"])


def _js_colours() -> str:
    return "{" + ", ".join(f'{level}: "{colour}"' for level, colour in _COLOURS.items()) + "}"


METER_ESM = """
const COLOURS = __COLOURS__;
const WIDTH = 160, HEIGHT = 28;
const SVG = "http://www.w3.org/2000/svg";

function part(parent, tag, className, text) {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  parent.appendChild(node);
  return node;
}

function sparkline(svg, usage, marks, threshold) {
  svg.replaceChildren();
  if (usage.length < 2) { svg.style.display = "none"; return; }
  svg.style.display = "";
  const top = Math.max(...usage, threshold, 1);
  const step = WIDTH / (usage.length - 1);
  const y = (value) => (HEIGHT - (value / top) * HEIGHT).toFixed(1);
  const line = (x1, y1, x2, y2, className) => {
    const node = document.createElementNS(SVG, "line");
    for (const [k, v] of Object.entries({ x1, y1, x2, y2 })) node.setAttribute(k, v);
    node.setAttribute("class", className);
    svg.appendChild(node);
  };
  line(0, y(threshold), WIDTH, y(threshold), "nbagent-spark-limit");
  for (const mark of marks) {
    const x = (Math.min(mark, usage.length - 1) * step).toFixed(1);
    line(x, 0, x, HEIGHT, "nbagent-spark-mark");
  }
  const poly = document.createElementNS(SVG, "polyline");
  poly.setAttribute("points", usage.map((v, i) => `${(i * step).toFixed(1)},${y(v)}`).join(" "));
  poly.setAttribute("class", "nbagent-spark-line");
  svg.appendChild(poly);
}

function render({ model, el }) {
  el.classList.add("nbagent-meter");
  const body = part(el, "div", "nbagent-meter-body");
  const row = part(body, "div", "nbagent-meter-row");
  const track = part(row, "span", "nbagent-meter-track");
  const bar = part(track, "span", "nbagent-meter-bar");
  const headline = part(row, "b", "nbagent-meter-text");
  const level = part(row, "span", "nbagent-meter-level");
  const mark = part(level, "span", "nbagent-meter-mark", "__MARK__ ");
  const status = part(level, "span", "nbagent-meter-status");
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "nbagent-spark");
  svg.setAttribute("width", WIDTH);
  svg.setAttribute("height", HEIGHT);
  row.appendChild(svg);
  const detail = part(body, "div", "nbagent-meter-detail");

  function draw() {
    const percent = model.get("percent_left");
    const colour = COLOURS[model.get("level")] || COLOURS.warning;
    body.dataset.level = model.get("level");
    bar.style.width = `${Math.max(0, Math.min(100, percent)).toFixed(1)}%`;  // what is left
    bar.style.background = colour;
    mark.style.color = colour;
    headline.textContent = model.get("headline");  // the percent and what it is of
    status.textContent = model.get("status");
    detail.textContent = model.get("detail");
    sparkline(svg, model.get("usage"), model.get("compaction_marks"), model.get("threshold"));
  }
  const names = ["percent_left", "headline", "level", "status", "detail", "threshold", "usage",
                 "compaction_marks"];
  for (const name of names) model.on(`change:${name}`, draw);
  draw();
  return () => { for (const name of names) model.off(`change:${name}`, draw); };
}

export default { render };
""".replace("__COLOURS__", _js_colours()).replace("__MARK__", MARK)

METER_CSS = """
.nbagent-meter-row { display: flex; align-items: center; flex-wrap: wrap; gap: 2px 8px; }
.nbagent-meter-body {
  line-height: 1.6;
  font-family: var(--jp-ui-font-family, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  color: var(--jp-content-font-color1, #1a1a1a);
}
.nbagent-meter-track {
  display: inline-block; width: 120px; height: 10px; box-sizing: border-box;
  border-radius: 5px; overflow: hidden;
  background: var(--jp-layout-color3, #d0d0d0);
  border: 1px solid var(--jp-border-color1, #8a8a8a);
}
.nbagent-meter-bar { display: block; height: 100%; }
.nbagent-meter-detail { color: var(--jp-content-font-color2, #555555); }
.nbagent-spark-line { fill: none; stroke: var(--jp-brand-color1, #1976d2); stroke-width: 1.5; }
.nbagent-spark-limit { stroke: var(--jp-border-color1, #8a8a8a); }
.nbagent-spark-mark { stroke: var(--jp-warn-color0, #e65100); stroke-dasharray: 2 2; }
/* Where the widget draws, hide the plain-HTML copy shown just before it. */
.jp-OutputArea-child:has(.nbagent-meter-fallback):has(+ .jp-OutputArea-child .nbagent-meter) {
  display: none;
}
"""
