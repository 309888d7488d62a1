import type { EventObject } from "xstate";

/** Widens a typed event for `sendTo(ref, ...)` on a ref whose event type XState cannot know (`system.get`). */
export function message<E extends EventObject>(event: E): EventObject {
  return event;
}
