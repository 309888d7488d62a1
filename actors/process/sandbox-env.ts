// The environment a sandboxed process starts with: an allow-list, not Pi's whole environment. Pi's environment holds
// the user's credentials (OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, tokens of every provider); a sandbox that hides
// $HOME but hands those over protects little. What a run needs passes (the PATH, the locale, the terminal, what the
// host deliberately sets for a runner: PYTHON*, VIRTUAL_ENV, MPLBACKEND), with HOME the hidden one and TMPDIR the
// sandbox's private /tmp; anything else only by name through the `sandbox.env` setting.

/** Names passed as they are. */
const NAMES = new Set([
  "PATH",
  "LANG",
  "LANGUAGE",
  "TERM",
  "COLORTERM",
  "NO_COLOR",
  "FORCE_COLOR",
  "COLUMNS",
  "LINES",
  "TZ",
  "USER",
  "LOGNAME",
  "SHELL",
  // host/effects.ts and actors/interpreter/interpreter.ts `runnerEnv` set these for a runner's interpreter.
  "VIRTUAL_ENV",
  "MPLBACKEND",
  // Where the system's CA certificates are (paths, for pip and requests when the network is allowed).
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  // Python's own variables of the PYTHON_ form (the others match PATTERN).
  "PYTHON_COLORS",
  "PYTHON_GIL",
  "PYTHON_CPU_COUNT",
]);

/** The locale's categories and Python's own variables (PYTHONPATH, PYTHONIOENCODING, ...): not PYTHON_ANYTHING, a
 * form other programs use for their own settings and secrets. */
const PATTERN = /^(LC_[A-Z]+|PYTHON[A-Z]+)$/;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** An installer's own configuration (find-links, no-index, cache, the quiet flags the host sets): passed to a
 * dependency install, never to a run. Index URLs may carry credentials, so those pass only by name (`sandbox.env`). */
const INSTALLER = /^(PIP|UV)_[A-Z0-9_]+$/;
const INSTALLER_SECRETS = /^(PIP|UV)_(.*INDEX(_URL)?|.*PASSWORD|.*TOKEN|.*AUTH.*|KEYRING_PROVIDER|PUBLISH_.*)$/;

/** The installer variables of `env` that a sandboxed install may see (see INSTALLER). */
export function installerNames(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env).filter((n) => INSTALLER.test(n) && !INSTALLER_SECRETS.test(n));
}

/** Whether `name` can be passed through `sandbox.env` (a plain variable name); the settings use it to refuse
 * anything else with a clear error. */
export function validEnvName(name: string): boolean {
  return NAME.test(name);
}

/**
 * The environment of a process in the sandbox: the allow-listed variables of `env`, those named in `pass` (the
 * `sandbox.env` setting), `HOME` set to the (hidden, empty) home directory and `TMPDIR` to the sandbox's /tmp.
 * Pure: nothing is read from `process.env`.
 */
export function sandboxEnv(
  env: NodeJS.ProcessEnv,
  pass: readonly string[],
  options: { home?: string } = {},
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  const extra = new Set(pass);
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (NAMES.has(name) || PATTERN.test(name) || extra.has(name)) out[name] = value;
  }
  const home = options.home ?? env.HOME;
  if (home !== undefined) out.HOME = home;
  out.TMPDIR = "/tmp";
  return out;
}
