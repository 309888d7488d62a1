// Element builders shared by the page's views. Attributes only (the page's CSP forbids inline styles; geometry goes
// through CSSOM); `on<event>` attributes become listeners; undefined children are skipped.
const SVG_NS = "http://www.w3.org/2000/svg";

export const h = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c);
  return el;
};

export const svg = (tag, attrs = {}, text) => {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
};

/** `<defs>` with one arrowhead marker (`marker-end: url(#id)`); the head takes its line's colour (context-stroke),
 * so a highlighted arrow is highlighted to its tip. */
export const arrowDefs = (id) => {
  const marker = svg("marker", {
    id,
    viewBox: "0 0 10 10",
    refX: 9,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: "auto-start-reverse",
  });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }));
  const defs = svg("defs");
  defs.append(marker);
  return defs;
};
