// What the shell-session pool tells the host (its emitted events), kept apart from what the tools ask (host/exec.ts):
// the sessions' bytes are finished or dropped as sessions end, set_on_exit answers and refusals are kept for the
// call that asked, kills wait for their outcome, due wake prompts go to Pi, and listeners hear every change.
import type { ExecEmitted } from "../machines/exec-pool.ts";
import type { ExecSupervisorCommand } from "../machines/supervisor.ts";
import type { WakeNotice } from "../machines/exec-wake-entry.ts";
import type { SessionIO } from "../actors/shell/session-io.ts";

export type Emitted<T extends ExecEmitted["type"]> = Extract<ExecEmitted, { type: T }>;

export class ExecEvents {
  /** set_on_exit answers, by request id (the pool answers within the same send). */
  readonly answers = new Map<string, Emitted<"exec.answer">>();
  /** Starts the pool refused, by session id. */
  readonly refused = new Map<number, string>();
  private readonly stopWaiters = new Map<number, ((e: Emitted<"exec.stop_failed"> | undefined) => void)[]>();
  private readonly changeListeners = new Set<(what: ExecEmitted) => void>();
  private deliverer: ((notices: WakeNotice[]) => void | Promise<void>) | undefined;
  private readonly ios: Map<number, SessionIO>;
  private readonly send: (command: ExecSupervisorCommand) => void;
  private readonly now: () => number;

  constructor(ios: Map<number, SessionIO>, send: (command: ExecSupervisorCommand) => void, now: () => number) {
    this.ios = ios;
    this.send = send;
    this.now = now;
  }

  /** How due completion prompts reach Pi (`pi.sendMessage`); a throw or rejection counts as a failed delivery. */
  onWake(deliver: (notices: WakeNotice[]) => void | Promise<void>): void {
    this.deliverer = deliver;
  }

  /** Every event of the pool (sessions starting, ending, evicted...): footers and widgets refresh on these. */
  onChange(fn: (what: ExecEmitted) => void): () => void {
    this.changeListeners.add(fn);
    return () => this.changeListeners.delete(fn);
  }

  /** Resolves when session `id` has ended (undefined) or its stop failed (the failure). */
  stopped(id: number): Promise<Emitted<"exec.stop_failed"> | undefined> {
    return new Promise((resolve) => this.stopWaiters.set(id, [...(this.stopWaiters.get(id) ?? []), resolve]));
  }

  heard(e: ExecEmitted): void {
    switch (e.type) {
      case "exec.ended": {
        const io = this.ios.get(e.id);
        io?.finish({
          end: e.end,
          at: e.at,
          code: e.code,
          signal: e.signal,
          ...(e.escalated ? { escalated: true } : {}),
          ...(e.failure ? { failure: e.failure } : {}),
        });
        if (io && e.end !== "exited" && e.end !== "failed") this.ios.delete(e.id);
        this.settleStop(e.id, undefined);
        break;
      }
      case "exec.stop_failed":
        this.settleStop(e.id, e);
        break;
      case "exec.evicting":
        if (!e.running) this.ios.delete(e.id);
        break;
      case "exec.started":
        this.ios.get(e.id)?.changed();
        break;
      case "exec.answer":
        this.answers.set(e.requestId, e);
        break;
      case "exec.refused":
        this.refused.set(e.id, e.reason);
        this.ios.get(e.id)?.finish({ end: "failed", at: this.now(), code: null, signal: null, failure: e.reason });
        break;
      case "exec.wake":
        queueMicrotask(() => void this.deliver(e.batch, e.notices));
        break;
    }
    for (const fn of this.changeListeners) {
      try {
        fn(e);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private async deliver(batch: number, notices: WakeNotice[]): Promise<void> {
    try {
      if (!this.deliverer) throw new Error("no way to reach Pi yet");
      await this.deliverer(notices);
      this.send({ type: "exec.wake_delivered", at: this.now(), batch });
    } catch (e) {
      this.send({ type: "exec.wake_failed", at: this.now(), batch, message: (e as Error).message ?? String(e) });
    }
  }

  private settleStop(id: number, failed: Emitted<"exec.stop_failed"> | undefined): void {
    const waiters = this.stopWaiters.get(id);
    this.stopWaiters.delete(id);
    for (const fn of waiters ?? []) fn(failed);
  }
}
