// The pi-code-supervisor command line: replay a recorded event log, list logs, or open the inspector on a log.
//   npx pi-code-supervisor replay <log.jsonl> [--verbose]
//   npx pi-code-supervisor logs
//   npx pi-code-supervisor inspect [<log.jsonl>] [--port <n>]
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { defaultLogDir } from "../record/log-files.ts";
import { formatReport, replayFile } from "../record/replay.ts";

const USAGE = `usage:
  pi-code-supervisor replay <log.jsonl>... [--verbose]   replay recorded logs into fresh machines; exit 1 on divergence
  pi-code-supervisor logs                                 list recorded logs (newest last)
  pi-code-supervisor inspect [<log.jsonl>] [--port <n>]   open the inspector page on a recorded log (no live Pi)`;

export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const flags = new Set(rest.filter((a) => a.startsWith("--")));
  const positional = rest.filter((a, i) => !a.startsWith("--") && rest[i - 1] !== "--port");
  switch (command) {
    case "replay": {
      if (positional.length === 0) return usage();
      let failed = 0;
      for (const path of positional) {
        const report = replayFile(path);
        const text = formatReport(report, flags.has("--verbose"));
        console.log(positional.length > 1 ? `${path}: ${text}` : text);
        if (!report.identical) failed += 1;
      }
      return failed ? 1 : 0;
    }
    case "logs": {
      const dir = defaultLogDir();
      let files: string[] = [];
      try {
        files = readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
      } catch {
        // No log yet.
      }
      if (files.length === 0) console.log(`no logs in ${dir}`);
      const rows = files.map((f) => ({ f, st: statSync(join(dir, f)) })).sort((a, b) => a.st.mtimeMs - b.st.mtimeMs);
      for (const { f, st } of rows) console.log(`${join(dir, f)}\t${st.size} bytes\t${st.mtime.toISOString()}`);
      return 0;
    }
    case "inspect": {
      const { inspectLogCommand } = await import("../inspector/standalone.ts");
      const portIndex = rest.indexOf("--port");
      const port = portIndex >= 0 ? Number(rest[portIndex + 1]) : undefined;
      return inspectLogCommand(positional[0], port);
    }
    default:
      return usage();
  }
}

function usage(): number {
  console.error(USAGE);
  return 2;
}
