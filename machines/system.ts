// The supervisor machine with its boundary provided: one definition for the live host and for replay, so a replayed
// log runs exactly the actor tree that recorded it (only the boundary actors differ: effects, or stubs). Each effect
// is provided here once, to every machine that names it.
import { fromCallback, type AnyActorLogic, type CallbackActorLogic, type EventObject } from "xstate";
import type { RunStartEvent } from "./events.ts";
import { factOfPrepared } from "./supervisor-context.ts";
import { forgetActorEventCandidates } from "./actor-event-candidates.ts";
import { runMachine } from "./run.ts";
import { sessionMachine } from "./session.ts";
import { spareMachine } from "./spare.ts";
import { sparePoolMachine } from "./spare-pool.ts";
import { supervisorMachine } from "./supervisor.ts";
import { toolCallMachine } from "./tool-call.ts";
import type { DispatchCommand, DispatchInput } from "./tool-events.ts";
import { execPoolMachine } from "./exec-pool.ts";
import { execSessionMachine, type ShellCommand, type ShellInput } from "./exec-session.ts";

type DispatchLogic = CallbackActorLogic<DispatchCommand, DispatchInput>;

/** Effects besides the runner (the Python process). */
export interface BoundaryActors {
  /** Prepares each request (actors/prepare/); without it requests are taken as prepared by their sender. */
  prepare?: AnyActorLogic;
  /** The dependency installer (actors/deps/). */
  install?: AnyActorLogic;
  /** Runs one nested tool call (actors/calls/); without it calls fail. */
  dispatch?: AnyActorLogic;
  /** A shell session's process (actors/shell/shell-actor.ts); without it shell sessions fail to start. */
  shell?: AnyActorLogic;
}

/** Preparation for requests whose sender settled everything itself (interpreter, dependencies): what the request
 * says is what runs. Pure; answers at once. */
export const preparedBySender = fromCallback<EventObject, RunStartEvent>(({ input, sendBack }) => {
  sendBack(factOfPrepared(input));
});

export function supervisorWith(runner: AnyActorLogic, boundary: BoundaryActors = {}) {
  const toolCall = boundary.dispatch
    ? toolCallMachine.provide({ actors: { dispatch: boundary.dispatch as DispatchLogic } })
    : toolCallMachine;
  const install = boundary.install ? { install: boundary.install } : {};
  // Every machine of the tree, so XState's transition cache does not grow with each run (issue 31).
  return forgetActorEventCandidates(
    supervisorMachine.provide({
      actors: {
        prepare: boundary.prepare ?? preparedBySender,
        run: runMachine.provide({ actors: { runner, toolCall, ...install } }),
        session: sessionMachine.provide({
          actors: { runner, run: runMachine.provide({ actors: { toolCall, ...install } }) },
        }),
        sparePool: sparePoolMachine.provide({ actors: { spare: spareMachine.provide({ actors: { runner } }) } }),
        ...(boundary.shell
          ? {
              exec: execPoolMachine.provide({
                actors: {
                  session: execSessionMachine.provide({
                    actors: { shell: boundary.shell as CallbackActorLogic<ShellCommand, ShellInput> },
                  }),
                },
              }),
            }
          : {}),
      },
    }),
  );
}

export type SupervisorLogic = ReturnType<typeof supervisorWith>;
