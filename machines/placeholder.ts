// The one way machines name an effect they do not implement: a callback actor that fails loudly when started, or an
// action that fails loudly when run. Each machine declares its effects once with these; machines/system.ts provides
// the actors (or replay's stubs), and a machine an adapter runs privately (machines/runner-process.ts) gets its
// actions from that adapter.
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

/** An action `machine` names and `provider` implements: running it unprovided throws, naming both. */
export function placeholderAction(machine: string, action: string, provider: string): () => never {
  return () => {
    throw new Error(`${machine}: the \`${action}\` action must be provided (${provider})`);
  };
}
