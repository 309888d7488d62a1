// The pi-code-supervisor command line: replay a recorded event log, list logs, or open the inspector on a log.
//   npx pi-code-supervisor replay <log.jsonl>... [--verbose]
//   npx pi-code-supervisor logs
//   npx pi-code-supervisor inspect [<log.jsonl>] [--port <n>]
// Every command takes -h/--help (usage on stdout, exit 0). A user error (unknown option, bad value, missing file)
// is one line on stderr and exit 2, never a stack trace.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { CONFIG_DIR_NAME, getAgentDir } from "@earendil-works/pi-coding-agent";
import { defaultLogDir } from "../record/log-files.ts";
import { useAgentDir } from "../store/agent-dir.ts";
import { formatReport, replayFile } from "../record/replay.ts";

// Logs are in Pi's agent directory, as Pi (or bin/pi-agent-dir.js, for a copy without Pi) names it.
useAgentDir(getAgentDir, CONFIG_DIR_NAME);

const NAME = "pi-code-supervisor";
const EXIT_USAGE = 2;

const USAGE = `usage: ${NAME} <command> [options]

Replays and inspects the event logs that pi-code-supervisor records in Pi sessions.

commands:
  replay <log.jsonl>... [--verbose]    replay recorded logs into fresh machines; exit 1 on divergence
  logs                                 list recorded logs (newest last)
  inspect [<log.jsonl>] [--port <n>]   open the inspector page on a recorded log (no live Pi)
  help [<command>]                     this help, or a command's

options:
  -h, --help     this help; each command has its own: ${NAME} <command> --help
  --version      print the version

exit status: 0 success, 1 a replay diverged or failed, 2 a usage error (unknown option, bad value, missing file)`;

interface Command {
  usage: () => string;
  options: NonNullable<ParseArgsConfig["options"]>;
  run: (values: Record<string, unknown>, positionals: string[]) => Promise<number> | number;
}

const help = { type: "boolean", short: "h" } as const;

const COMMANDS: Record<string, Command> = {
  replay: {
    usage: () => `usage: ${NAME} replay <log.jsonl>... [--verbose]

Feeds each log's recorded inputs into fresh machines and compares their state sequence with the recorded one;
prints "identical" or the first divergence (actor, event, expected and actual states).

options:
  --verbose      also print the full expected and actual records of a divergence
  -h, --help     this help

A file name that starts with '-' goes after --: ${NAME} replay -- -odd.jsonl
exit status: 0 every log replays identical, 1 a divergence or a log that cannot be replayed, 2 a usage error`,
    options: { verbose: { type: "boolean" }, help },
    run(values, files) {
      if (files.length === 0) return userError("replay", `no log given (see ${NAME} replay --help)`);
      for (const file of files) {
        const problem = fileProblem(file);
        if (problem) return userError("replay", problem);
      }
      let failed = 0;
      for (const file of files) {
        const prefix = files.length > 1 ? `${file}: ` : "";
        let report: ReturnType<typeof replayFile>;
        try {
          report = replayFile(file);
        } catch (e) {
          // replayFile reports what it finds wrong in a log; anything it throws on a hostile one is still that log's
          // failure, said in one line.
          report = { identical: false, inputs: 0, trace: 0, error: `cannot replay ${file}: ${(e as Error).message}` };
        }
        const text = formatReport(report, values.verbose === true);
        if (report.error) console.error(prefix + text);
        else console.log(prefix + text);
        if (!report.identical) failed += 1;
      }
      return failed ? 1 : 0;
    },
  },
  logs: {
    usage: () => `usage: ${NAME} logs

Lists the recorded event logs (path, size, last change), newest last, from $PI_CODE_EXECUTION_LOG_DIR, else
<agent dir>/pi-code-supervisor/logs (agent dir: $PI_CODING_AGENT_DIR, else ~/.pi/agent). Here that is
  ${defaultLogDir()}

options:
  -h, --help     this help`,
    options: { help },
    run(_values, positionals) {
      if (positionals.length) return userError("logs", `unexpected argument '${positionals[0]}'`);
      const dir = defaultLogDir();
      let files: string[];
      try {
        files = readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") {
          console.error(
            `${NAME} logs: cannot list ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
          );
          return 1;
        }
        files = []; // No log yet.
      }
      const rows = files.flatMap((f) => {
        try {
          return [{ f, st: statSync(join(dir, f)) }];
        } catch {
          return []; // Rotated away while listing.
        }
      });
      if (rows.length === 0) console.log(`no logs in ${dir}`);
      rows.sort((a, b) => a.st.mtimeMs - b.st.mtimeMs);
      for (const { f, st } of rows) console.log(`${join(dir, f)}\t${st.size} bytes\t${st.mtime.toISOString()}`);
      return 0;
    },
  },
  inspect: {
    usage: () => `usage: ${NAME} inspect [<log.jsonl>] [--port <n>]

Serves the inspector page on a recorded log, without Pi, on 127.0.0.1 until stopped (Ctrl-C), and prints its URL.
Without a log, the page opens one.

options:
  -p, --port <n>   the port: an integer from 0 to 65535; 0 or no --port picks a free one
  -h, --help       this help`,
    options: { port: { type: "string", short: "p" }, help },
    async run(values, positionals) {
      if (positionals.length > 1) {
        return userError("inspect", `unexpected argument '${positionals[1]}' (one log at most)`);
      }
      let port: number | undefined;
      if (values.port !== undefined) {
        // Digits only: Number() would also take "", " 80", "0x50" and "1e3".
        const text = String(values.port);
        if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) {
          return userError("inspect", `--port must be an integer from 0 to 65535 (0: a free port), not '${text}'`);
        }
        port = Number(text);
      }
      const log = positionals[0];
      const problem = log === undefined ? undefined : fileProblem(log);
      if (problem) return userError("inspect", problem);
      const { inspectLogCommand } = await import("../inspector/standalone.ts");
      return inspectLogCommand(log, port);
    },
  },
};

export async function main(args: string[]): Promise<number> {
  const [first, ...rest] = args;
  if (first === undefined) {
    console.error(USAGE);
    return EXIT_USAGE;
  }
  if (first.startsWith("-")) {
    const parsed = parse(undefined, args, { help, version: { type: "boolean" } });
    if (!parsed.ok) return parsed.exit;
    if (parsed.values.version) {
      const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
      console.log(pkg.version);
      return 0;
    }
    if (parsed.values.help) return showHelp(parsed.positionals[0]);
    return userError(undefined, `options go after a command (see ${NAME} --help)`);
  }
  if (first === "help") return showHelp(rest[0]);
  const command = COMMANDS[first];
  if (!command) return userError(undefined, `unknown command '${first}' (see ${NAME} --help)`);
  const parsed = parse(first, rest, command.options);
  if (!parsed.ok) return parsed.exit;
  if (parsed.values.help) {
    console.log(command.usage());
    return 0;
  }
  return command.run(parsed.values, parsed.positionals);
}

function showHelp(name: string | undefined): number {
  if (name === undefined) {
    console.log(USAGE);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) return userError(undefined, `unknown command '${name}' (see ${NAME} --help)`);
  console.log(command.usage());
  return 0;
}

type Parsed = { ok: true; values: Record<string, unknown>; positionals: string[] } | { ok: false; exit: number };

/** node:util's strict parser, its errors said in one line. */
function parse(command: string | undefined, args: string[], options: Command["options"]): Parsed {
  try {
    const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals: true });
    return { ok: true, values, positionals };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (!err.code?.startsWith("ERR_PARSE_ARGS_")) throw e;
    return {
      ok: false,
      exit: userError(command, `${parseErrorText(err)} (see ${NAME}${command ? ` ${command}` : ""} --help)`),
    };
  }
}

function parseErrorText(err: NodeJS.ErrnoException): string {
  // Node names the option as typed ('-x'), or as declared ('-p, --port <value>'): keep its long form.
  const quoted = /'([^']+)'/.exec(err.message)?.[1] ?? "";
  const option = /--[\w-]+/.exec(quoted)?.[0] ?? quoted;
  if (err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown option '${quoted}'`;
  if (/argument missing/.test(err.message)) return `${option} needs a value`;
  if (/argument is ambiguous/.test(err.message)) {
    return `${option} needs a value (one that starts with '-' is written ${option}=-...)`;
  }
  if (/does not take an argument/.test(err.message)) return `'${option}' does not take a value`;
  return err.message.replace(/\s*\n\s*/g, " ");
}

/** Why `path` cannot be read as a log, or nothing. */
function fileProblem(path: string): string | undefined {
  try {
    return statSync(path).isFile() ? undefined : `not a file: ${resolve(path)}`;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR"
      ? `no such file: ${resolve(path)}`
      : `cannot read ${resolve(path)}: ${code}`;
  }
}

function userError(command: string | undefined, message: string): number {
  console.error(`${NAME}${command ? ` ${command}` : ""}: ${message}`);
  return EXIT_USAGE;
}
