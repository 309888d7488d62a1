// The entry Pi loads (package.json `pi.extensions`). Pi names an extension in its start-up listing after the
// folder of its entry file (an `index.ts` stands for its folder), so the entry lives in a folder named for the
// package; the extension itself is extension/index.ts.
export { createCodeExecutionExtension, default, type CodeExecutionOptions } from "../index.ts";
