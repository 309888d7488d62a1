// The event log's decoder (record/log-codec.ts), for the page and for Node tests that load the page's modules. Node
// reads the TypeScript itself; the inspector's server answers this file's URL with that module, its types stripped
// (inspector/server.ts), so the page reads a log as replay does.
export { LogDecoder } from "../../record/log-codec.ts";
