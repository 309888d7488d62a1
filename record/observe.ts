// One synchronous tap on the actor system, shared by the recorder and the inspector. It is handed to the host as
// its `inspect` observer, its timer clock and its command/fact/output taps, and fans each out to listeners. Timers
// are numbered here (in creation order) and each firing is announced before the machine sees it, so a log holds
// every input in the order the machines received it.
import type { AnyActorRef, InspectionEvent } from "xstate";
import type { CommandEvent, RunnerFact } from "../machines/events.ts";
import { clearPreciseTimeout, setPreciseTimeout, type PreciseTimer } from "../lib/precise-timer.ts";
import { actorName, BOUNDARY_IDS, BoundaryTracker, ref, type InputRecord, type TraceRecord } from "./trace.ts";

/** XState's clock interface (`createActor(logic, {clock})`). */
export interface Clock {
  setTimeout(fn: (...args: any[]) => void, ms: number): any;
  clearTimeout(id: any): void;
}

export type TimerRecord = Extract<TraceRecord, { k: "set" | "clear" }>;

export interface SystemListener {
  /** Every inspection event, as it happens (snapshots are current only during this call). */
  inspection?(event: InspectionEvent): void;
  /** A command, runner fact or timer firing, just before the machines receive it. */
  input?(record: InputRecord): void;
  /** A timer armed or cancelled by the machines. */
  timer?(record: TimerRecord): void;
  /** Output a run wrote (bytes only). */
  output?(runId: string, channel: string, bytes: number): void;
}

/** The host options this observer fills in (see actors/host.ts). */
export interface ObservedHostOptions {
  inspect: (event: InspectionEvent) => void;
  clock: Clock;
  onCommand: (event: CommandEvent, to?: string) => void;
  onStop: () => void;
  onFact: (from: AnyActorRef, to: AnyActorRef, fact: RunnerFact) => void;
  onOutput: (runId: string, channel: string, chunk: Uint8Array) => void;
}

export class SystemObserver {
  private readonly listeners = new Set<SystemListener>();
  private readonly pending = new Map<number, PreciseTimer>();
  private next = 1;
  private readonly boundary = new BoundaryTracker();
  /** The root actor of the observed system, once it exists. */
  root: AnyActorRef | undefined;
  /** Each actor's creation time: the moment of its `@xstate.actor` event, the time its event-log record carries. */
  private readonly born = new WeakMap<AnyActorRef, number>();

  /** When `actor` was created, if this observer saw it (an inspector started later shows the true time). */
  createdAt(actor: AnyActorRef): number | undefined {
    return this.born.get(actor);
  }

  on(listener: SystemListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Timers armed and not yet fired or cancelled. Zero means no `after` state is waiting. */
  pendingTimers(): number {
    return this.pending.size;
  }

  /** At a checkpoint: boundary actors count the events they receive from here (replay restores them anew). */
  checkpoint(): void {
    this.boundary.reset();
  }

  /** The number the next timer will get (a checkpoint carries it so replay numbers alike). */
  nextTimer(): number {
    return this.next;
  }

  readonly clock: Clock = {
    setTimeout: (fn, ms) => {
      const n = this.next++;
      // On time, not up to a couple of milliseconds late (lib/precise-timer.ts): a deadline is an interrupt.
      const handle = setPreciseTimeout(() => {
        this.pending.delete(n);
        this.emitInput({ k: "timer", n });
        fn();
      }, ms);
      this.pending.set(n, handle);
      this.emitTimer({ k: "set", n, ms });
      return n;
    },
    clearTimeout: (n: number) => {
      const handle = this.pending.get(n);
      if (handle === undefined) return;
      clearPreciseTimeout(handle);
      this.pending.delete(n);
      this.emitTimer({ k: "clear", n });
    },
  };

  hostOptions(): ObservedHostOptions {
    return {
      inspect: (event) => {
        if (event.type === "@xstate.actor") {
          this.born.set(ref(event.actorRef), Date.now());
          if (!ref(event.actorRef)._parent) this.root = ref(event.actorRef);
        }
        this.boundary.observe(event);
        // A boundary actor's `sendBack` is relayed to its parent right after this event: that is a fact.
        if (event.type === "@xstate.event" && event.sourceRef) {
          const source = ref(event.sourceRef);
          const target = ref(event.actorRef);
          if (BOUNDARY_IDS.includes(source.id) && source._parent === target) {
            this.recordFact(source, target, event.event as RunnerFact);
          }
        }
        // Every inspection event passes here (a run has a score of them): no closure per listener.
        for (const l of this.listeners) {
          try {
            l.inspection?.(event);
          } catch {
            // As in `safely`: an observer's failure never reaches the machines.
          }
        }
      },
      clock: this.clock,
      onCommand: (event, to) => this.emitInput({ k: "cmd", event, ...(to !== undefined ? { to } : {}) }),
      onStop: () => this.emitInput({ k: "stop" }),
      // A session's runner telling a run its facts directly (actors/runner/runner.ts): the same input record as a
      // fact to a parent, addressed to the run.
      onFact: (from, to, fact) => this.recordFact(from, to, fact),
      onOutput: (runId, channel, chunk) => {
        for (const l of this.listeners) this.safely(() => l.output?.(runId, channel, chunk.length));
      },
    };
  }

  /** A fact from a boundary actor to the actor it tells, with the events that boundary had received by then. */
  private recordFact(from: AnyActorRef, to: AnyActorRef, fact: RunnerFact): void {
    const during = this.boundary.during(from);
    this.emitInput({
      k: "fact",
      to: actorName(to),
      from: actorName(from),
      event: fact,
      ...(during !== undefined ? { during } : {}),
    });
  }

  private emitInput(record: InputRecord): void {
    for (const l of this.listeners) this.safely(() => l.input?.(record));
  }

  private emitTimer(record: TimerRecord): void {
    for (const l of this.listeners) this.safely(() => l.timer?.(record));
  }

  /** An observer's failure must never reach the machines (it would error the actor that is transitioning). */
  private safely(fn: () => void): void {
    try {
      fn();
    } catch {
      // Listeners guard their own state; a throw here is dropped rather than breaking the system.
    }
  }
}
