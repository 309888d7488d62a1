// Rich display in every surface, through a real Pi session: display() and rich trailing values (PNG, JPEG, SVG,
// markdown, HTML, JSON, text), images as Pi image content after the text (and in the model's context), the limits
// (images over them saved as files), matplotlib figures left open, and the journal's counts.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { initTheme } from "@earendil-works/pi-coding-agent";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs } from "../../helpers/notebook.ts";
import { drawnResult } from "../../helpers/drawn.ts";
import { PYTHON } from "../../helpers/pythons.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

const Database = createRequire(import.meta.url)("better-sqlite3");

/** Python that builds PNGs with the standard library, and objects with IPython's rich reprs. */
const PRELUDE = String.raw`
import zlib, struct, base64
def png(w, h, rgb=(255, 0, 0), noise=False):
    import os
    row = lambda: os.urandom(3 * w) if noise else bytes(rgb) * w
    raw = b"".join(b"\x00" + row() for _ in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 0 if noise else 6)) + chunk(b"IEND", b""))
class Rich:
    def __init__(self, **reprs):
        for k, v in reprs.items():
            setattr(Rich, "_repr_%s_" % k, (lambda v: lambda self: v)(v))
def rich(kind, value):
    cls = type("R" + kind, (), {"_repr_%s_" % kind: lambda self: value, "__repr__": lambda self: "<plain repr>"})
    return cls()
JPEG = base64.b64decode("/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=")
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10" fill="blue"/></svg>'
`;

let pi: PiHarness;
before(async () => {
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,python,eval";
  pi = await startPi();
  const [r] = await callAs(pi, [["python", { cells: [{ code: PRELUDE }] }]]);
  assert.equal(r.isError, false, textOf(r));
});
after(async () => {
  await pi.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
});

function images(r: { content: { type: string; data?: string; mimeType?: string }[] }) {
  return r.content.filter((c) => c.type === "image") as { type: "image"; data: string; mimeType: string }[];
}

/** A result as Pi draws it, at 100 columns. */
const drawn = (tool: string, r: unknown, expanded: boolean) => drawnResult(pi, tool, r, { expanded, width: 100 });
const count = (text: string, part: string) => text.split(part).length - 1;

describe("each displayed value drawn once", () => {
  before(() => initTheme("dark", false));

  test("display({...}) in eval (Python and JavaScript cells) and python: one tree where the text was", async () => {
    const [ev, py] = await callAs(pi, [
      [
        "eval",
        {
          cells: [
            {
              language: "py",
              code: "print('before')\ndisplay({'alpha_key': [1, 2], 'nested': {'x': None}})\nprint('after')",
            },
            { language: "js", code: "display({ beta_key: 'b' });\nconsole.log('js after');" },
          ],
        },
      ],
      ["python", { cells: [{ code: "display({'gamma_key': 3})" }] }],
    ]);
    assert.equal(ev.isError, false, textOf(ev));
    assert.equal(py.isError, false, textOf(py));
    // The model's copy keeps the values' text; the drawing shows each value once, in its place among the output.
    assert.match(textOf(ev), /"alpha_key": \[/);
    for (const expanded of [false, true]) {
      const shown = drawn("eval", ev, expanded);
      assert.equal(count(shown, "alpha_key"), 1, shown);
      assert.equal(count(shown, "beta_key"), 1, shown);
      assert.ok(shown.indexOf("before") < shown.indexOf("alpha_key"), shown);
      assert.ok(shown.indexOf("alpha_key") < shown.indexOf("after"), shown);
      assert.ok(shown.indexOf("beta_key") < shown.indexOf("js after"), shown);
      const other = drawn("python", py, expanded);
      assert.equal(count(other, "gamma_key"), 1, other);
    }
    // Expanded, the value is the tree (keys and values each on their line), not its JSON text.
    const full = drawn("eval", ev, true);
    assert.match(full, /alpha_key: \[ 2 items/);
    assert.doesNotMatch(full, /"alpha_key"/);
  });
});

describe("rich display", () => {
  test("code_execution: display(PNG) lands in order in the text and as image content after it", async () => {
    const [r] = await callAs(pi, [
      [
        "code_execution",
        { session: "notebook", code: "print('before')\ndisplay(rich('png', png(4, 3)))\nprint('after')" },
      ],
    ]);
    assert.equal(r.isError, false, textOf(r));
    assert.match(textOf(r), /^before\n\[image 1: PNG 4×3, \d+ B, shown\]\nafter\n/);
    const [img] = images(r as never);
    assert.equal(img.mimeType, "image/png");
    assert.equal(Buffer.from(img.data, "base64").subarray(1, 4).toString(), "PNG");
    assert.equal(r.content[0].type, "text", "the text comes first");
    assert.deepEqual(
      r.details.images.map((i: any) => [i.mimeType, i.width, i.height, i.shown]),
      [["image/png", 4, 3, true]],
    );
  });

  test("every kind in eval: JPEG, SVG (rendered to PNG), markdown, HTML (as markdown), JSON, text", async () => {
    const code = [
      "display(rich('jpeg', JPEG))",
      "display(rich('svg', SVG))",
      "display(rich('markdown', '# Title\\n*emphasis*'))",
      "display(rich('html', '<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>'))",
      "display({'k': [1, 2], 'nested': {'x': None}})",
      "display(rich('json', {'from': 'repr_json'}))",
      "display('plain words', 42)",
    ].join("\n");
    const [r] = await callAs(pi, [["eval", { cells: [{ language: "py", code }] }]]);
    assert.equal(r.isError, false, textOf(r));
    const text = textOf(r);
    // eval's images are content blocks of their own (oh-my-pi's result): the text does not name those shown.
    assert.doesNotMatch(text, /\[image/);
    assert.match(text, /# Title\n\*emphasis\*/);
    assert.match(text, /\| a \| b \|\n\| - \| - \|\n\| 1 \| 2 \|/);
    assert.match(text, /"k": \[\n\s+1,\n\s+2\n\s+\]/);
    assert.match(text, /plain words\n42/);
    assert.deepEqual(r.details.jsonOutputs, [{ k: [1, 2], nested: { x: null } }, { from: "repr_json" }]);
    assert.equal(r.details.cells[0].markdown, true);
    const imgs = images(r as never);
    assert.deepEqual(
      imgs.map((i) => i.mimeType),
      ["image/jpeg", "image/png"],
    );
    const svgPng = Buffer.from(imgs[1].data, "base64");
    assert.equal(svgPng.readUInt32BE(16), 20, "the SVG rendered at its own width");
  });

  test("a trailing expression with a rich repr is displayed, not shown as its repr", async () => {
    const [py, ev] = await callAs(pi, [
      ["python", { cells: [{ code: "rich('png', png(2, 2))" }, { code: "rich('markdown', '**bold**')" }] }],
      ["eval", { cells: [{ language: "py", code: "rich('png', png(3, 3))" }] }],
    ]);
    assert.doesNotMatch(textOf(py), /plain repr|=>/);
    assert.match(textOf(py), /── cell 1\/2 ──\nstdout: \[image 1: PNG 2×2/);
    assert.match(textOf(py), /\*\*bold\*\*/);
    assert.equal(py.details.cells[0].images[0].shown, true);
    assert.equal(images(py as never).length, 1);
    assert.equal(textOf(ev), "(displayed 1 image(s); no text output)");
    assert.equal(images(ev as never).length, 1);
  });

  test("an image in the result reaches the model's context as image content", async () => {
    let seen: any[] = [];
    pi.faux.setResponses([
      fauxAssistantMessage(
        [fauxToolCall("eval", { cells: [{ language: "py", code: "display(rich('png', png(5, 5)))" }] })],
        {
          stopReason: "toolUse",
        },
      ),
      (context: any) => {
        seen = context.messages;
        return fauxAssistantMessage("seen");
      },
    ]);
    await pi.session.prompt("show me");
    const last = seen.filter((m) => m.role === "toolResult").at(-1);
    const img = last.content.find((c: any) => c.type === "image");
    assert.ok(img, JSON.stringify(last.content).slice(0, 300));
    assert.equal(img.mimeType, "image/png");
    assert.equal(Buffer.from(img.data, "base64").readUInt32BE(16), 5);
  });
});

describe("matplotlib", () => {
  test("matplotlib (Debian's, in the machine's python3): a figure left open is shown as PNG and closed; MPLBACKEND=Agg", async (t) => {
    const probe = await callAs(pi, [["python_set_interpreter", { path: PYTHON }]]);
    assert.equal(probe[0].isError, false, textOf(probe[0]));
    const [check] = await callAs(pi, [
      ["python", { cells: [{ code: "import importlib.util\nimportlib.util.find_spec('matplotlib') is not None" }] }],
    ]);
    if (!/=> True/.test(textOf(check)))
      return t.skip("python3-matplotlib is not installed (scripts/setup.sh installs it as root)");
    const [r] = await callAs(pi, [
      [
        "python",
        {
          cells: [
            {
              code: "import matplotlib\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nmatplotlib.get_backend()",
            },
            { code: "plt.get_fignums()" },
          ],
        },
      ],
    ]);
    const text = textOf(r);
    assert.match(text, /=> 'agg'/i);
    assert.match(text, /\[image 1: PNG \d+×\d+, [\d.]+ KiB, shown\]/);
    assert.match(text, /── cell 2\/2 ──\n=> \[\]/, "the figure was closed");
    const [img] = images(r as never);
    assert.equal(img.mimeType, "image/png");
  });
});

describe("display limits", () => {
  let small: PiHarness;
  before(async () => {
    process.env.PI_CODE_EXECUTION_TOOLS = "python,eval";
    process.env.PI_CODE_EXECUTION_MAX_IMAGES = "2";
    process.env.PI_CODE_EXECUTION_MAX_IMAGE_BYTES = "4096";
    small = await startPi();
    delete process.env.PI_CODE_EXECUTION_MAX_IMAGES;
    delete process.env.PI_CODE_EXECUTION_MAX_IMAGE_BYTES;
    await callAs(small, [["python", { cells: [{ code: PRELUDE }] }]]);
  });
  after(async () => {
    await small.dispose();
    delete process.env.PI_CODE_EXECUTION_TOOLS;
  });

  test("over the per-call count or size limit, images are saved as files and named", async () => {
    const code =
      "for i in range(3):\n    display(rich('png', png(2, 2, (i, i, i))))\ndisplay(rich('png', png(64, 64, noise=True)))";
    const [r] = await callAs(small, [["eval", { cells: [{ language: "py", code }] }]]);
    const text = textOf(r);
    assert.equal(images(r as never).length, 2);
    const saved = [...text.matchAll(/saved as (\S+\.png)\]/g)].map((m) => m[1]);
    assert.equal(saved.length, 2, text);
    assert.match(text, /\[image 3: PNG 2×2, \d+ B, not shown: the first 2 images of this call were shown; saved as /);
    assert.match(text, /\[image 4: PNG 64×64, [\d.]+ KiB, not shown: larger than the 4\.0 KiB limit/);
    for (const path of saved) {
      assert.ok(existsSync(path), path);
      assert.equal(statSync(path).mode & 0o777, 0o600);
    }
  });
});

describe("journal counts", () => {
  test("runs record their surface and how many images and JSON outputs they displayed", async () => {
    const path = join(tempDir("pcs-nb-journal-"), "journal.sqlite");
    const saved = process.env.PI_CODE_EXECUTION_JOURNAL;
    process.env.PI_CODE_EXECUTION_JOURNAL = path;
    process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,eval";
    const j = await startPi();
    try {
      await callAs(j, [
        ["eval", { cells: [{ language: "py", code: "display({'a': 1})\ndisplay([1])" }] }],
        ["code_execution", { code: PRELUDE + "\ndisplay(rich('png', png(1, 1)))" }],
      ]);
    } finally {
      await j.dispose();
      process.env.PI_CODE_EXECUTION_JOURNAL = saved;
      delete process.env.PI_CODE_EXECUTION_TOOLS;
    }
    const db = new Database(path, { readonly: true });
    const rows = db.prepare("SELECT surface, images, json_outputs FROM runs ORDER BY requested_at").all();
    db.close();
    assert.deepEqual(rows, [
      { surface: "eval", images: 0, json_outputs: 2 },
      { surface: "code_execution", images: 1, json_outputs: 0 },
    ]);
  });
});
