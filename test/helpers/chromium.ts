// A real headless Chromium driven over the DevTools protocol (Node's built-in WebSocket client; no extra package).
// Debian's `chromium` package; `CHROMIUM` overrides the path.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { waitUntil } from "./procs.ts";
import { tempDir } from "./temp-dir.ts";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM);
}

interface Pending {
  resolve: (v: any) => void;
  reject: (e: Error) => void;
}

export class Page {
  private id = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Map<string, ((params: any) => void)[]>();
  private readonly ws: WebSocket;
  private readonly sessionId: string;
  constructor(ws: WebSocket, sessionId: string) {
    this.ws = ws;
    this.sessionId = sessionId;
  }

  dispatch(message: any): void {
    if (message.sessionId !== this.sessionId) return;
    if (message.id !== undefined) {
      const p = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) p?.reject(new Error(`${message.error.message} ${message.error.data ?? ""}`));
      else p?.resolve(message.result);
    } else {
      for (const fn of this.listeners.get(message.method) ?? []) fn(message.params);
    }
  }

  send(method: string, params: object = {}): Promise<any> {
    const id = ++this.id + 1_000_000;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params, sessionId: this.sessionId }));
    });
  }

  on(method: string, fn: (params: any) => void): void {
    this.listeners.set(method, [...(this.listeners.get(method) ?? []), fn]);
  }

  once(method: string): Promise<any> {
    return new Promise((resolve) => {
      const list = this.listeners.get(method) ?? [];
      const fn = (params: any) => {
        list.splice(list.indexOf(fn), 1);
        resolve(params);
      };
      list.push(fn);
      this.listeners.set(method, list);
    });
  }

  async navigate(url: string): Promise<void> {
    await this.send("Page.enable");
    const loaded = this.once("Page.loadEventFired");
    const r = await this.send("Page.navigate", { url });
    if (r.errorText) throw new Error(`navigation failed: ${r.errorText}`);
    await loaded;
  }

  /** Evaluates an expression in the page and returns its (JSON) value; promises are awaited. */
  async evaluate<T = unknown>(expression: string): Promise<T> {
    const r = await this.send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`page threw: ${JSON.stringify(r.exceptionDetails).slice(0, 500)}`);
    return r.result.value as T;
  }

  async waitFor(expression: string, timeoutMs = 10_000): Promise<void> {
    if (!(await waitUntil(() => this.evaluate<boolean>(`Boolean(${expression})`), timeoutMs)))
      throw new Error(`timed out waiting for ${expression}`);
  }

  async setFiles(selector: string, files: string[]): Promise<void> {
    const { root } = await this.send("DOM.getDocument", {});
    const { nodeId } = await this.send("DOM.querySelector", { nodeId: root.nodeId, selector });
    await this.send("DOM.setFileInputFiles", { nodeId, files });
  }

  async screenshot(path: string): Promise<void> {
    const { data } = await this.send("Page.captureScreenshot", { format: "png" });
    writeFileSync(path, Buffer.from(data, "base64"));
  }
}

export interface Browser {
  page: Page;
  /** Messages the page logged and errors it threw. */
  console: string[];
  close(): Promise<void>;
}

export async function launchChromium(viewport = { width: 1280, height: 900 }): Promise<Browser> {
  const profile = tempDir("pcs-chromium-");
  const proc: ChildProcess = spawn(
    CHROMIUM,
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
      `--user-data-dir=${profile}`,
      `--window-size=${viewport.width},${viewport.height}`,
      "--remote-debugging-port=0",
      "about:blank",
    ],
    { stdio: ["ignore", "ignore", "pipe"], detached: true },
  );
  const endpoint = await new Promise<string>((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error(`chromium did not start: ${err.slice(-800)}`)), 20_000);
    proc.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.once("exit", (code) => reject(new Error(`chromium exited (${code}): ${err.slice(-800)}`)));
  });
  const ws = new WebSocket(endpoint);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error("cannot connect to chromium"));
  });
  let id = 0;
  const pending = new Map<number, (v: any) => void>();
  let page: Page | undefined;
  ws.onmessage = (m) => {
    const message = JSON.parse(String(m.data));
    if (message.sessionId) return page?.dispatch(message);
    if (message.id !== undefined) pending.get(message.id)?.(message.result ?? message);
  };
  const browserSend = (method: string, params: object) =>
    new Promise<any>((resolve) => {
      pending.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  const { targetId } = await browserSend("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await browserSend("Target.attachToTarget", { targetId, flatten: true });
  page = new Page(ws, sessionId);
  const consoleLines: string[] = [];
  await page.send("Runtime.enable");
  await page.send("Emulation.setDeviceMetricsOverride", { ...viewport, deviceScaleFactor: 1, mobile: false });
  page.on("Runtime.consoleAPICalled", (p) =>
    consoleLines.push(p.args.map((a: any) => a.value ?? a.description).join(" ")),
  );
  page.on("Runtime.exceptionThrown", (p) =>
    consoleLines.push(`exception: ${p.exceptionDetails?.exception?.description ?? p.exceptionDetails?.text}`),
  );
  return {
    page,
    console: consoleLines,
    async close() {
      ws.close();
      try {
        process.kill(-proc.pid!, "SIGKILL");
      } catch {
        // already gone
      }
      await new Promise((r) => (proc.exitCode !== null || proc.signalCode !== null ? r(null) : proc.once("exit", r)));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
