// What a call displayed, kept: an image the model is not shown (too large, or past the call's count) is saved as a
// file of the output store (store/images.ts), which the result names. The display decides what the model sees
// (extension/shared/display/collector.ts); where and how an image is kept is decided here, behind the host.
import { imagePath, saveImage } from "../store/images.ts";

/** Keeps an image: its path is known at once (the result names it), the file lands with `saved` (which rejects with
 * why it could not be written). */
export function keepImage(data: Buffer, mime: string): { path: string; saved: Promise<void> } {
  const path = imagePath(data, mime);
  return { path, saved: saveImage(path, data) };
}
