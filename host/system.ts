// The live actor system's taps: commands sent to the root from outside, and its stop (the recorder's inputs).
import type { Actor } from "xstate";
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
