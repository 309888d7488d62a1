// Images a call displayed but did not show the model, kept as private files of the output store: content-addressed
// (the name is the digest, so a file already there holds the same bytes), 0700 directories, 0600 files. Which images
// are kept is the display's decision (extension/shared/display/collector.ts); it asks through host/displays.ts.
import { createHash } from "node:crypto";
import { join } from "node:path";
import { ensurePrivateDir, placeOnce, writeAll, writeTemp } from "./artifact-fs.ts";
import { outputRoot } from "./artifacts.ts";

const EXT: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg" };

/** The file an image is saved as, under the output store. */
export function imagePath(data: Buffer, mime: string): string {
  const id = createHash("sha256").update(data).digest("hex").slice(0, 16);
  return join(outputRoot(), "images", `${id}.${EXT[mime] ?? "bin"}`);
}

export async function saveImage(path: string, data: Buffer): Promise<void> {
  const dir = join(path, "..");
  await ensurePrivateDir(join(dir, ".."));
  await ensurePrivateDir(dir);
  const temp = await writeTemp(dir, (h) => writeAll(h, data));
  await placeOnce(temp, path); // an existing file has the same content (its name is its hash)
}
