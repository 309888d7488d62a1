// The python tool's text as the model gets it (eval cuts its own: extension/eval/truncation.ts): tail-truncated
// to Pi's limits (2000 lines, 50 KB), with a note saying what was kept.
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize, truncateTail } from "@earendil-works/pi-coding-agent";

export function truncateForModel(text: string): string {
  const t = truncateTail(text, { maxLines: DEFAULT_MAX_LINES, maxBytes: DEFAULT_MAX_BYTES });
  if (!t.truncated) return t.content;
  return (
    `[output truncated: kept last ${t.outputLines}/${t.totalLines} lines, ` +
    `${formatSize(t.outputBytes)}/${formatSize(t.totalBytes)}]\n${t.content}`
  );
}
