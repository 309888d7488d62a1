// Imported by the tests that use the store, the recorder or a host without a Pi session: they say where Pi's agent
// directory is, as the extension does when Pi loads it (store/agent-dir.ts), with Pi's own rule
// (PI_CODING_AGENT_DIR at each call, else ~/.pi/agent), so a test that sets the variable moves every folder.
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import { useAgentDir } from "../../store/agent-dir.ts";

useAgentDir(getAgentDir);
