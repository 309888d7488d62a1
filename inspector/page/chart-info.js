// The statechart view's side panel: a state's kind, description, entry/exit actions and invoked actors, the
// transitions that leave it (its own, then its enclosing states'), and the tests that entered it.
import { h } from "./dom.js";

/** Test titles, the first few shown and the rest one click away. */
function coveringList(titles) {
  const item = (t) => h("li", {}, t);
  if (titles.length <= 8) return h("ul", { class: "covering" }, titles.map(item));
  return h(
    "div",
    {},
    h("ul", { class: "covering" }, titles.slice(0, 6).map(item)),
    h(
      "details",
      {},
      h("summary", {}, `${titles.length - 6} more`),
      h("ul", { class: "covering" }, titles.slice(6).map(item)),
    ),
  );
}

/** The panel's elements for state `id` of `machine`; `tests` is the suite's index (null without one). */
export function stateInfo(machine, id, tests) {
  const { index } = machine;
  const node = index.nodes.get(id);
  const ancestors = [];
  for (let p = node.parent; p; p = index.nodes.get(p).parent) ancestors.push(p);
  const row = (e) =>
    h(
      "li",
      { "data-transition": e.id },
      h("span", { class: "event-type" }, e.label),
      e.guard ? h("span", { class: "guard" }, ` [${e.guard}]`) : undefined,
      h(
        "span",
        {},
        e.targets.length ? ` → ${e.targets.map((t) => index.nodes.get(t)?.key ?? t).join(", ")}` : " (stays)",
      ),
      e.actions.length ? h("span", { class: "muted" }, ` / ${e.actions.join(", ")}`) : undefined,
    );
  const own = index.from.get(id) ?? [];
  const inherited = ancestors.flatMap((a) => index.from.get(a) ?? []);
  const covering = tests?.machines?.[machine.chart.id]?.[id];
  return [
    h("h3", { class: "state-id" }, id),
    h(
      "p",
      { class: "muted" },
      [
        node.type,
        node.id === machine.chart.root ? "root" : "",
        ancestors.length && index.nodes.get(node.parent)?.initial === id ? "initial" : "",
      ]
        .filter(Boolean)
        .join(" · "),
    ),
    node.description ? h("p", { class: "description" }, node.description) : undefined,
    node.entry.length ? h("p", {}, h("span", { class: "muted" }, "entry: "), node.entry.join(", ")) : undefined,
    node.exit.length ? h("p", {}, h("span", { class: "muted" }, "exit: "), node.exit.join(", ")) : undefined,
    node.invoke.length ? h("p", {}, h("span", { class: "muted" }, "invokes: "), node.invoke.join(", ")) : undefined,
    h("h4", {}, "Events that leave it"),
    own.length
      ? h("ul", { class: "leaving" }, own.map(row))
      : h("p", { class: "muted" }, node.type === "final" ? "none: a final state" : "none of its own"),
    inherited.length ? h("h4", {}, "Also handled by enclosing states") : undefined,
    inherited.length ? h("ul", { class: "leaving inherited" }, inherited.map(row)) : undefined,
    h("h4", {}, "Tests that cover it"),
    tests == null
      ? h("p", { class: "muted" }, "no test index (run the test suite: bash scripts/test.sh)")
      : covering?.length
        ? coveringList(covering)
        : h("p", { class: "muted" }, "no test entered this state"),
  ].filter(Boolean);
}
