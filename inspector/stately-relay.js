// @statelyai/inspect's relay server, in a process of its own (started by inspector/stately.ts). The library adds no
// error listener to its HTTP server or to its WebSocket connections and listens on every network interface, so
// inside Pi one invalid frame from anywhere on the network would throw and take Pi down. Here such an error costs
// that one connection (ws has already closed it) and the relay serves the others on. A busy port exits with 3.
// Once it accepts connections it says `listening` on stdout (the library keeps its server to itself, so the relay
// connects to its own port to know), and Pi connects then, however long a loaded machine took to start it.
// Plain JavaScript: it runs under `node` even where Node strips no types (an installed package).
import { connect } from "node:net";
import { createInspectorServer } from "@statelyai/inspect/server";

const CLIENT_ERRORS = new Set(["ECONNRESET", "EPIPE", "ETIMEDOUT"]);

process.on("uncaughtException", (e) => {
  if (e.code === "EADDRINUSE" || e.code === "EACCES") process.exit(3);
  if (String(e.code).startsWith("WS_ERR_") || CLIENT_ERRORS.has(e.code)) return;
  console.error(e);
  process.exit(1);
});
// Pi closes stdin to stop the relay, and so does its exit, whatever the cause.
process.stdin.on("end", () => process.exit(0)).resume();
const port = Number(process.argv[2]);
createInspectorServer({ port, autoOpen: false });
const sayWhenListening = () => {
  const probe = connect(port, "127.0.0.1");
  probe.once("connect", () => {
    probe.destroy();
    process.stdout.write("listening\n");
  });
  probe.once("error", () => setTimeout(sayWhenListening, 10));
};
sayWhenListening();
