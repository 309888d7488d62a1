// The actor ids' one module (machines/actor-ids.ts), for the page and for Node tests that load the page's modules.
// Node reads the TypeScript itself; the inspector's server answers this file's URL with that module, its types
// stripped (inspector/server.ts), so the browser runs the same code.
export { actorKind, isActor, runActorId, sessionActorId } from "../../machines/actor-ids.ts";
