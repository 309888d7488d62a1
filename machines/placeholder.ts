// The one way machines name an effect they do not implement: a callback actor that fails loudly when started.
// Each machine declares its effects once with this; machines/system.ts provides the real ones (or replay's stubs).
import { fromCallback, type EventObject } from "xstate";

export function placeholder<TEvent extends EventObject, TInput>(
  machine: string,
  actor: string,
  message = `${machine}: the \`${actor}\` actor must be provided (machines/system.ts)`,
) {
  return fromCallback<TEvent, TInput>(() => {
    throw new Error(message);
  });
}
