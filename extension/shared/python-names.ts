// Python names and signatures for the tools exposed to code_execution. A name is an identifier that shadows no
// keyword, soft keyword, builtin (CPython 3.9-3.13) or helper, and is unique among the run's tools; a signature lists
// required parameters first, with Python type names from the tool's JSON Schema.

const KEYWORDS = new Set(
  (
    "False None True and as assert async await break class continue def del elif else except finally for from " +
    "global if import in is lambda nonlocal not or pass raise return try while with yield _ case match type"
  ).split(" "),
);

// dir(builtins) of CPython 3.9-3.13, without dunders (those are refused as a class).
const BUILTINS = new Set(
  (
    "ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BlockingIOError BrokenPipeError " +
    "BufferError BytesWarning ChildProcessError ConnectionAbortedError ConnectionError ConnectionRefusedError " +
    "ConnectionResetError DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception " +
    "ExceptionGroup FileExistsError FileNotFoundError FloatingPointError FutureWarning GeneratorExit IOError " +
    "ImportError ImportWarning IndentationError IndexError InterruptedError IsADirectoryError KeyError " +
    "KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError NotADirectoryError NotImplemented " +
    "NotImplementedError OSError OverflowError PendingDeprecationWarning PermissionError ProcessLookupError " +
    "PythonFinalizationError RecursionError ReferenceError ResourceWarning RuntimeError RuntimeWarning " +
    "StopAsyncIteration StopIteration SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError " +
    "TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError " +
    "UnicodeWarning UserWarning ValueError Warning ZeroDivisionError _IncompleteInputError abs aiter all anext any " +
    "ascii bin bool breakpoint bytearray bytes callable chr classmethod compile complex copyright credits delattr " +
    "dict dir divmod enumerate eval exec exit filter float format frozenset getattr globals hasattr hash help hex " +
    "id input int isinstance issubclass iter len license list locals map max memoryview min next object oct open " +
    "ord pow print property quit range repr reversed round set setattr slice sorted staticmethod str sum super " +
    "tuple type vars zip"
  ).split(" "),
);

/** Names the runner puts in the user's globals besides the tools (runtime-py/pi_tools.py). */
export const HELPER_NAMES = new Set(["available_tools"]);

const reserved = (name: string) =>
  KEYWORDS.has(name) || BUILTINS.has(name) || HELPER_NAMES.has(name) || /^__.*__$/.test(name);

/** One tool's Python name, before uniqueness. */
export function pythonName(registered: string): string {
  let name = registered.replace(/[^A-Za-z0-9_]/g, "_");
  if (!name || /^_*$/.test(name)) name = `tool${name}`;
  if (/^[0-9]/.test(name)) name = `tool_${name}`;
  if (/^__.*__$/.test(name)) return `tool_${name}`;
  return reserved(name) ? `${name}_` : name;
}

/** Python names for tools in the given order: each normalized, then made unique with `_2`, `_3`, ... */
export function pythonNames(registered: readonly string[]): string[] {
  const taken = new Set<string>();
  return registered.map((r) => {
    const base = pythonName(r);
    let name = base;
    for (let n = 2; taken.has(name) || reserved(name); n++) name = `${base}_${n}`;
    taken.add(name);
    return name;
  });
}

type Schema = Record<string, unknown>;
const isSchema = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

const SIMPLE: Record<string, string> = {
  string: "str",
  integer: "int",
  number: "float",
  boolean: "bool",
  null: "None",
  object: "dict",
  array: "list",
};

function literal(v: unknown): string {
  if (v === null) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number" || typeof v === "string") return JSON.stringify(v);
  return "...";
}

function union(types: string[]): string {
  const unique = [...new Set(types)];
  if (unique.includes("Any")) return "Any";
  return unique.join(" | ") || "Any";
}

/** The Python type name of a JSON Schema. */
export function pythonType(schema: unknown, depth = 0): string {
  if (!isSchema(schema) || depth > 3) return "Any";
  if ("const" in schema) return `Literal[${literal(schema.const)}]`;
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.length <= 8) {
    return `Literal[${schema.enum.map(literal).join(", ")}]`;
  }
  const variants = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (variants) return union(variants.map((v) => pythonType(v, depth + 1)));
  const type = schema.type;
  if (Array.isArray(type)) return union(type.map((t) => pythonType({ ...schema, type: t }, depth + 1)));
  if (type === "array" && isSchema(schema.items)) return `list[${pythonType(schema.items, depth + 1)}]`;
  return typeof type === "string" ? (SIMPLE[type] ?? "Any") : "Any";
}

const identifier = (name: string) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !KEYWORDS.has(name);

/** `name(*, required: str, optional: int = None)`: keyword-only, required parameters first. A parameter whose name
 * is not a Python identifier is shown quoted (pass it as `**{"max-results": 5}`). */
export function signature(python: string, parameters: unknown): string {
  const schema = isSchema(parameters) ? parameters : {};
  const props = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : []);
  const names = Object.keys(props);
  const ordered = [...names.filter((n) => required.has(n)), ...names.filter((n) => !required.has(n))];
  const params = ordered.map((n) => {
    const p = props[n];
    const shown = `${identifier(n) ? n : JSON.stringify(n)}: ${pythonType(p)}`;
    if (required.has(n)) return shown;
    return `${shown} = ${isSchema(p) && "default" in p ? literal(p.default) : "None"}`;
  });
  return params.length ? `${python}(*, ${params.join(", ")})` : `${python}()`;
}
