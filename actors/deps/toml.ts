// A small TOML parser for PEP 723 blocks: tables and arrays of tables, dotted and quoted keys, the four string
// forms with escapes, integers, floats, booleans, arrays and inline tables. Dates and times are kept as their
// text (no script metadata key uses them). Duplicate keys are errors, as in TOML.
import { fail, ok, type Result } from "../../lib/result.ts";

export type TomlValue = string | number | boolean | TomlValue[] | TomlTable;
export interface TomlTable {
  [key: string]: TomlValue;
}

class TomlError extends Error {}

export function parseToml(text: string): Result<TomlTable> {
  try {
    return ok(new Parser(text).document());
  } catch (e) {
    if (e instanceof TomlError) return fail(e.message);
    throw e;
  }
}

const BARE_KEY = /[A-Za-z0-9_-]/;
const isTable = (v: unknown): v is TomlTable => typeof v === "object" && v !== null && !Array.isArray(v);

class Parser {
  private i = 0;
  private readonly s: string;
  /** Tables defined by a header or by dotted keys, which a second header may not redefine. */
  private readonly defined = new Set<TomlTable>();
  constructor(s: string) {
    this.s = s;
  }

  private error(what: string): never {
    const line = this.s.slice(0, this.i).split("\n").length;
    throw new TomlError(`line ${line}: ${what}`);
  }

  private peek(n = 0): string {
    return this.s[this.i + n] ?? "";
  }

  private skipSpaces(): void {
    while (this.peek() === " " || this.peek() === "\t") this.i++;
  }

  private skipComment(): void {
    if (this.peek() === "#") while (this.i < this.s.length && this.peek() !== "\n") this.i++;
  }

  /** Whitespace, newlines and comments (inside arrays). */
  private skipAll(): void {
    for (;;) {
      this.skipSpaces();
      this.skipComment();
      if (this.peek() === "\n" || this.peek() === "\r") this.i++;
      else return;
    }
  }

  private endOfLine(): void {
    this.skipSpaces();
    this.skipComment();
    if (this.peek() === "\r") this.i++;
    if (this.i < this.s.length && this.peek() !== "\n") this.error(`unexpected ${JSON.stringify(this.peek())}`);
    this.i++;
  }

  document(): TomlTable {
    const root: TomlTable = {};
    let current = root;
    while (this.i < this.s.length) {
      this.skipSpaces();
      const c = this.peek();
      if (c === "#" || c === "\n" || c === "\r" || c === "") {
        this.endOfLine();
        continue;
      }
      if (c === "[") {
        const array = this.peek(1) === "[";
        this.i += array ? 2 : 1;
        this.skipSpaces();
        const path = this.key();
        this.skipSpaces();
        if (array ? this.s.slice(this.i, this.i + 2) !== "]]" : this.peek() !== "]")
          this.error("unclosed table header");
        this.i += array ? 2 : 1;
        current = array ? this.arrayTable(root, path) : this.table(root, path);
        this.endOfLine();
        continue;
      }
      const path = this.key();
      this.skipSpaces();
      if (this.peek() !== "=") this.error(`expected "=" after key ${path.join(".")}`);
      this.i++;
      this.skipSpaces();
      this.assign(current, path, this.value());
      this.endOfLine();
    }
    return root;
  }

  private table(root: TomlTable, path: string[]): TomlTable {
    let t = root;
    for (const [n, k] of path.entries()) {
      const v = t[k];
      if (v === undefined) t = t[k] = {};
      else if (isTable(v)) t = v;
      else if (Array.isArray(v) && n < path.length - 1 && isTable(v[v.length - 1])) t = v[v.length - 1] as TomlTable;
      else this.error(`key ${path.join(".")} is already defined`);
    }
    if (this.defined.has(t)) this.error(`table [${path.join(".")}] is defined twice`);
    this.defined.add(t);
    return t;
  }

  private arrayTable(root: TomlTable, path: string[]): TomlTable {
    const parent = path.length > 1 ? this.walk(root, path.slice(0, -1)) : root;
    const last = path[path.length - 1];
    const v = parent[last];
    const entry: TomlTable = {};
    if (v === undefined) parent[last] = [entry];
    else if (Array.isArray(v)) v.push(entry);
    else this.error(`key ${path.join(".")} is not an array of tables`);
    return entry;
  }

  private walk(t: TomlTable, path: string[]): TomlTable {
    for (const k of path) {
      const v = t[k];
      if (v === undefined) t = t[k] = {};
      else if (isTable(v)) t = v;
      else if (Array.isArray(v) && isTable(v[v.length - 1])) t = v[v.length - 1] as TomlTable;
      else this.error(`key ${k} is not a table`);
    }
    return t;
  }

  private assign(t: TomlTable, path: string[], value: TomlValue): void {
    const parent = this.walk(t, path.slice(0, -1));
    const last = path[path.length - 1];
    if (last in parent) this.error(`key ${path.join(".")} is defined twice`);
    parent[last] = value;
  }

  private key(): string[] {
    const parts: string[] = [];
    for (;;) {
      this.skipSpaces();
      const c = this.peek();
      if (c === '"') parts.push(this.basicString());
      else if (c === "'") parts.push(this.literalString());
      else {
        const start = this.i;
        while (BARE_KEY.test(this.peek())) this.i++;
        if (start === this.i) this.error(`expected a key, found ${JSON.stringify(c || "end of text")}`);
        parts.push(this.s.slice(start, this.i));
      }
      this.skipSpaces();
      if (this.peek() !== ".") return parts;
      this.i++;
    }
  }

  private value(): TomlValue {
    const c = this.peek();
    if (c === '"') return this.s.startsWith('"""', this.i) ? this.multilineBasic() : this.basicString();
    if (c === "'") return this.s.startsWith("'''", this.i) ? this.multilineLiteral() : this.literalString();
    if (c === "[") return this.array();
    if (c === "{") return this.inlineTable();
    const m = /^[^\s,\]}#]+/.exec(this.s.slice(this.i));
    if (!m) this.error(`expected a value, found ${JSON.stringify(c || "end of text")}`);
    let word = m[0];
    // A date-time may have a space between date and time.
    const dt = /^\d{4}-\d{2}-\d{2}[ ]\d{2}:\d{2}/.exec(this.s.slice(this.i));
    if (dt) word = /^\S+ \S+/.exec(this.s.slice(this.i))![0];
    this.i += word.length;
    if (word === "true") return true;
    if (word === "false") return false;
    if (/^[+-]?(inf|nan)$/.test(word)) return word.includes("nan") ? NaN : word.startsWith("-") ? -Infinity : Infinity;
    if (/^0x[0-9A-Fa-f_]+$/.test(word)) return parseInt(word.slice(2).replace(/_/g, ""), 16);
    if (/^0o[0-7_]+$/.test(word)) return parseInt(word.slice(2).replace(/_/g, ""), 8);
    if (/^0b[01_]+$/.test(word)) return parseInt(word.slice(2).replace(/_/g, ""), 2);
    if (/^[+-]?\d[\d_]*(\.\d[\d_]*)?([eE][+-]?\d[\d_]*)?$/.test(word)) return Number(word.replace(/_/g, ""));
    if (/^\d{4}-\d{2}-\d{2}|^\d{2}:\d{2}/.test(word)) return word;
    return this.error(`invalid value ${JSON.stringify(word)} (strings need quotes)`);
  }

  private array(): TomlValue[] {
    this.i++;
    const out: TomlValue[] = [];
    for (;;) {
      this.skipAll();
      if (this.peek() === "]") {
        this.i++;
        return out;
      }
      if (this.i >= this.s.length) this.error("unclosed array");
      out.push(this.value());
      this.skipAll();
      if (this.peek() === ",") this.i++;
      else if (this.peek() !== "]") this.error(`expected "," or "]" in array, found ${JSON.stringify(this.peek())}`);
    }
  }

  private inlineTable(): TomlTable {
    this.i++;
    const t: TomlTable = {};
    this.skipSpaces();
    if (this.peek() === "}") {
      this.i++;
      return t;
    }
    for (;;) {
      const path = this.key();
      this.skipSpaces();
      if (this.peek() !== "=") this.error('expected "=" in inline table');
      this.i++;
      this.skipSpaces();
      this.assign(t, path, this.value());
      this.skipSpaces();
      if (this.peek() === "}") {
        this.i++;
        return t;
      }
      if (this.peek() !== ",") this.error('expected "," or "}" in inline table');
      this.i++;
    }
  }

  private basicString(): string {
    this.i++;
    let out = "";
    for (;;) {
      const c = this.peek();
      if (c === "" || c === "\n") this.error("unclosed string");
      this.i++;
      if (c === '"') return out;
      out += c === "\\" ? this.escape() : c;
    }
  }

  private multilineBasic(): string {
    this.i += 3;
    if (this.peek() === "\n") this.i++;
    else if (this.s.startsWith("\r\n", this.i)) this.i += 2;
    let out = "";
    for (;;) {
      if (this.i >= this.s.length) this.error("unclosed multi-line string");
      if (this.s.startsWith('"""', this.i)) {
        // Up to two quotes may end the content right before the closing delimiter.
        let n = 3;
        while (this.peek(n) === '"' && n < 5) n++;
        out += '"'.repeat(n - 3);
        this.i += n;
        return out;
      }
      const c = this.peek();
      this.i++;
      if (c !== "\\") {
        out += c;
        continue;
      }
      // A line-ending backslash trims the newline and the whitespace that follows.
      const rest = /^[ \t]*\r?\n[\s]*/.exec(this.s.slice(this.i));
      if (rest) this.i += rest[0].length;
      else out += this.escape();
    }
  }

  private literalString(): string {
    const end = this.s.indexOf("'", this.i + 1);
    const nl = this.s.indexOf("\n", this.i + 1);
    if (end < 0 || (nl >= 0 && nl < end)) this.error("unclosed literal string");
    const out = this.s.slice(this.i + 1, end);
    this.i = end + 1;
    return out;
  }

  private multilineLiteral(): string {
    this.i += 3;
    if (this.peek() === "\n") this.i++;
    else if (this.s.startsWith("\r\n", this.i)) this.i += 2;
    const end = this.s.indexOf("'''", this.i);
    if (end < 0) this.error("unclosed multi-line literal string");
    let close = end + 3;
    while (this.s[close] === "'" && close < end + 5) close++;
    const out = this.s.slice(this.i, close - 3);
    this.i = close;
    return out;
  }

  private escape(): string {
    const c = this.peek();
    this.i++;
    const simple: Record<string, string> = {
      b: "\b",
      t: "\t",
      n: "\n",
      f: "\f",
      r: "\r",
      e: "\x1b",
      '"': '"',
      "\\": "\\",
    };
    if (c in simple) return simple[c];
    if (c === "u" || c === "U") {
      const n = c === "u" ? 4 : 8;
      const hex = this.s.slice(this.i, this.i + n);
      if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== n) this.error("invalid unicode escape");
      this.i += n;
      const code = parseInt(hex, 16);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) this.error("invalid unicode escape");
      return String.fromCodePoint(code);
    }
    return this.error(`invalid escape \\${c}`);
  }
}
