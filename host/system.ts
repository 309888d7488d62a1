// The supervisor machine with its boundary provided: one definition for the live host and for replay, so a
// replayed log runs exactly the actor tree that recorded it (only the boundary actors differ: effects, or stubs).
import type { Actor, AnyActorLogic, CallbackActorLogic } from "xstate";
import type { CommandEvent } from "../machines/events.ts";
import { runMachine } from "../machines/run.ts";
import { sessionLink, sessionMachine } from "../machines/session.ts";
import { spareMachine } from "../machines/spare.ts";
import { supervisorMachine } from "../machines/supervisor.ts";
import { toolCallMachine } from "../machines/tool-call.ts";
import { execPoolMachine } from "../machines/exec-pool.ts";
import { execSessionMachine, type ShellCommand, type ShellInput } from "../machines/exec-session.ts";
import type { DispatchCommand, DispatchInput } from "../machines/tool-events.ts";

type DispatchLogic = CallbackActorLogic<DispatchCommand, DispatchInput>;

/** Effects besides the kernel. `dispatch`: runs one nested tool call (actors/bridge.ts); without it calls fail. */
export interface BoundaryActors {
  dispatch?: AnyActorLogic;
  /** The dependency installer (actors/dependencies.ts). Replay provides one stub for every boundary actor
   * (`BOUNDARY_IDS` in actors/trace.ts), which re-delivers the recorded facts under the actor's explicit name. */
  install?: AnyActorLogic;
  /** A shell session's process (actors/shell/shell-actor.ts); without it shell sessions fail to start. */
  shell?: AnyActorLogic;
}

export function supervisorWith(kernel: AnyActorLogic, boundary: BoundaryActors = {}) {
  const toolCall = boundary.dispatch
    ? toolCallMachine.provide({ actors: { dispatch: boundary.dispatch as DispatchLogic } })
    : toolCallMachine;
  const install = boundary.install ?? kernel;
  return supervisorMachine.provide({
    actors: {
      run: runMachine.provide({ actors: { kernel, toolCall, install } }),
      session: sessionMachine.provide({
        actors: { kernel, run: runMachine.provide({ actors: { kernel: sessionLink, toolCall, install } }) },
      }),
      spare: spareMachine.provide({ actors: { kernel } }),
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
  });
}

export type SupervisorLogic = ReturnType<typeof supervisorWith>;

/** Calls `onCommand` with every command sent to the root from outside, before the root receives it, and `onStop`
 * before the root is stopped. XState's own deliveries (children, timers) go through its internal relay, never
 * through `send`, so they are not commands. */
export function tapCommands(
  actor: Actor<SupervisorLogic>,
  onCommand?: (event: CommandEvent) => void,
  onStop?: () => void,
): void {
  if (onCommand) {
    const send = actor.send.bind(actor);
    actor.send = (event) => {
      onCommand(event as CommandEvent);
      send(event);
    };
  }
  if (onStop) {
    const stop = actor.stop.bind(actor);
    actor.stop = () => {
      if (actor.getSnapshot().status === "active") onStop();
      return stop();
    };
  }
}
