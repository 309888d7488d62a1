// The batch runs of test/host/batch-run.test.ts once more with every runner inside bubblewrap, where interrupts
// always go as frames (the sandbox's pid namespace): the batch still stops at an interrupted cell.
// node --test runs each file in its own process: the variable reaches only this file's hosts.
process.env.PI_CODE_EXECUTION_BACKEND = "sandbox";
await import("./batch-run.test.ts");
