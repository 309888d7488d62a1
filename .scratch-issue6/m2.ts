import { SupervisorHost } from "../actors/host.ts";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const cwd = mkdtempSync(join(tmpdir(), "m-"));
writeFileSync(join(cwd, "helper.py"), "VALUE = 1\nclass Thing:\n    pass\n");
mkdirSync(join(cwd, "pkg"));
writeFileSync(join(cwd, "pkg", "__init__.py"), "");
writeFileSync(join(cwd, "pkg", "inner.py"), "def f():\n    return 'old'\n");
const host = new SupervisorHost();

const t = setTimeout(() => { console.log("stuck"); process.exit(1); }, 8000); t.unref();
const r = await host.run({ code: "import helper, json\nfrom pkg import inner\nfrom helper import VALUE as copied\nthing = helper.Thing()\nprint(helper.VALUE, inner.f())", cwd, timeoutMs: 20000, session: "s" });
console.log(r.outcome.status, r.stdout, r.stderr, r.outcome.message);
clearTimeout(t);
await host.shutdown();

