// Runs the TypeScript CLI (bin/cli.ts), once bin/pi-code-supervisor.js has checked the Node version. Node >= 22.18
// runs .ts files by stripping their types, except for files under node_modules, which is where an installed copy of
// this package lives: there a module hook strips the types of this package's own files the same way (erasable
// syntax only, as the whole project is written). An installed copy may also be without Pi (its packages are optional
// peers, provided by Pi when Pi loads the extension): the CLI then takes Pi's agent directory from pi-agent-dir.js.
import { registerHooks, stripTypeScriptTypes } from "node:module";

const root = new URL("../", import.meta.url).href;
if (root.includes("/node_modules/")) {
  const strip = (source) => {
    // The API is marked experimental; its warning would only confuse CLI users.
    const emitWarning = process.emitWarning;
    process.emitWarning = () => {};
    try {
      return stripTypeScriptTypes(source, { mode: "strip" });
    } finally {
      process.emitWarning = emitWarning;
    }
  };
  const piAgentDir = new URL("./pi-agent-dir.js", import.meta.url).href;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      try {
        return nextResolve(specifier, context);
      } catch (e) {
        if (specifier !== "@earendil-works/pi-coding-agent" || e?.code !== "ERR_MODULE_NOT_FOUND") throw e;
        return { url: piAgentDir, format: "module", shortCircuit: true };
      }
    },
    load(url, context, nextLoad) {
      if (!url.startsWith(root) || !url.endsWith(".ts") || url.slice(root.length).includes("node_modules/")) {
        return nextLoad(url, context);
      }
      const loaded = nextLoad(url, { ...context, format: "module" });
      return { format: "module", source: strip(String(loaded.source)), shortCircuit: true };
    },
  });
}

const { main } = await import("./cli.ts");
process.exitCode = await main(process.argv.slice(2));
