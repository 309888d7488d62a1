// Backends through real Pi sessions: the --sandbox and --ssh flags choose where code runs, /code-status shows the
// backend and its health, and a backend that cannot exist makes runs setup errors (never a silent local run).
import assert from "node:assert/strict";
import { realpathSync } from "node:fs";
import { test } from "node:test";
import { startPi, textOf } from "./helpers/pi-session.ts";
import { scriptedUI } from "./helpers/scripted-ui.ts";

async function statusOf(pi: Awaited<ReturnType<typeof startPi>>, ui: ReturnType<typeof scriptedUI>) {
  const before = ui.notices.length;
  await pi.session.prompt("/code-status");
  assert.ok(ui.notices.length > before);
  return ui.notices.at(-1)!.text;
}

test("--sandbox: code runs under bwrap (the host's /etc is read-only), /code-status shows the backend healthy", async () => {
  const ui = scriptedUI();
  const pi = await startPi({ uiContext: ui.ui, flags: { sandbox: true } });
  try {
    const [r] = await pi.callTools([
      { code: "import os\ntry:\n    open('/etc/pcs-probe', 'w')\nexcept OSError as e:\n    print('denied', e.errno)\nos.getpid()" },
    ]);
    assert.match(textOf(r!), /^denied (30|13)\n2\n/, textOf(r!));
    const status = await statusOf(pi, ui);
    assert.match(status, /Backend: sandbox \(bwrap, no network\)\n  healthy: bwrap works/);
    assert.match(status, /backend +"local" +default/);
  } finally {
    await pi.dispose();
  }
});

test("--ssh with a malformed target: every run is a setup_error saying why; nothing runs locally", async () => {
  const ui = scriptedUI();
  const pi = await startPi({ uiContext: ui.ui, flags: { ssh: "not a host@" } });
  try {
    const [r] = await pi.callTools([{ code: "open('ran-locally', 'w')\n'ran'" }]);
    const text = textOf(r!);
    assert.match(text, /setup error: --ssh not a host@: expected user@host/);
    assert.doesNotMatch(text, /\bran\b\n/);
    assert.throws(() => realpathSync(`${pi.cwd}/ran-locally`));
    const status = await statusOf(pi, ui);
    assert.match(status, /Backend: remote \(unusable: --ssh not a host@/);
    assert.match(status, /unhealthy: .*\[remote_unreachable\]/);
  } finally {
    await pi.dispose();
  }
});
