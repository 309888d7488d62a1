// The fault-injection suite (test/host/faults.test.ts) once more with every runner inside bubblewrap, so the sandbox
// backend is held to the same truths as local: signals, grace escalation, lost sessions, no orphans.
// node --test runs each file in its own process: the variable reaches only this file's hosts.
process.env.PI_CODE_EXECUTION_BACKEND = "sandbox";
await import("./faults.test.ts");
