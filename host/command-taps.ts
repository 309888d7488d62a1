// The live actor system's taps: commands sent from outside (to the root, or a direct run to its session), and the
// root's stop (the recorder's inputs).
import type { Actor, AnyActorRef } from "xstate";
import type { CommandEvent } from "../machines/events.ts";
import type { SupervisorLogic } from "../machines/system.ts";

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

/** Sends a command from outside to an actor other than the root (a direct run to its session, by its system id),
 * telling `onCommand` first, as the root's tap does. */
export function commandTo(
  target: AnyActorRef,
  event: CommandEvent,
  onCommand?: (event: CommandEvent, to?: string) => void,
): void {
  onCommand?.(event, target.id);
  target.send(event);
}
