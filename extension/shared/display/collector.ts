// Rich display of one tool call: what Python's display() (and a trailing value with a rich repr, and matplotlib
// figures left open) showed. Each item becomes text in the run's output at the point where it was displayed (a line
// for an image), and the call's result gets the images as Pi image content after its text: at most `maxImages` per
// call, each at most `maxImageBytes`; others are saved as files and named. JSON outputs are kept as parsed values.
import { NodeHtmlMarkdown } from "node-html-markdown";
import { keepImage, type ShownDisplay } from "../../../host/index.ts";
import { formatBytes, imageSize, svgToPng } from "./images.ts";

export type DisplayItem = ShownDisplay;

export interface ImageInfo {
  /** 1-based within the call. */
  index: number;
  mimeType: string;
  bytes: number;
  width?: number;
  height?: number;
  /** Sent to the model as image content. */
  shown: boolean;
  /** Where it was saved, when not shown. */
  path?: string;
  /** Why it was not shown (or could not be rendered). */
  note?: string;
}

export interface DisplayLimits {
  maxImages: number;
  maxImageBytes: number;
}

/** JSON shown in the text at most this long (the parsed value is kept whole in the details). */
const JSON_TEXT_CHARS = 8000;

/** A displayed JSON value's text in the output (the renderers find it there to draw the value once, as a tree). */
export function jsonDisplayText(value: unknown): string {
  const text = JSON.stringify(value, null, 2) ?? "null";
  return text.length > JSON_TEXT_CHARS ? `${text.slice(0, JSON_TEXT_CHARS)}\n… (JSON truncated)` : text;
}

interface CellShown {
  images: ImageInfo[];
  json: unknown[];
  markdown: boolean;
}

export interface DisplayOptions {
  /** An image shown to the model leaves no line in the text (eval: images are content blocks of their own). */
  quietShown?: boolean;
}

export class DisplayCollector {
  private readonly limits: DisplayLimits;
  private readonly quietShown: boolean;
  private readonly cells = new Map<number, CellShown>();
  private readonly content: { index: number; data: string; mimeType: string }[] = [];
  private readonly pending: Promise<void>[] = [];
  private readonly notes: string[] = [];
  private imageCount = 0;
  private shownCount = 0;
  /** Where status events (eval's log() and phase()) go, by cell; without it they are dropped. */
  onStatus?: (cell: number, event: Record<string, unknown>) => void;

  constructor(limits: DisplayLimits, options: DisplayOptions = {}) {
    this.limits = limits;
    this.quietShown = options.quietShown === true;
  }

  private cell(i: number): CellShown {
    let c = this.cells.get(i);
    if (!c) this.cells.set(i, (c = { images: [], json: [], markdown: false }));
    return c;
  }

  /** The host's onDisplay for one cell (or run): returns the text that goes into the output there. */
  forCell(i: number): (item: DisplayItem) => string | undefined {
    return (item) => (item.kind === "status" ? this.status(i, item.text) : this.take(this.cell(i), item));
  }

  /** A status event is a detail of its cell, never output. */
  private status(i: number, text: string): undefined {
    try {
      const event: unknown = JSON.parse(text);
      if (
        event &&
        typeof event === "object" &&
        !Array.isArray(event) &&
        typeof (event as { op?: unknown }).op === "string"
      )
        this.onStatus?.(i, event as Record<string, unknown>);
    } catch {
      // a malformed event is dropped
    }
    return undefined;
  }

  private take(cell: CellShown, item: Exclude<DisplayItem, { kind: "status" }>): string | undefined {
    switch (item.kind) {
      case "text":
        return line(item.text);
      case "markdown":
        cell.markdown = true;
        return line(item.text);
      case "html": {
        cell.markdown = true;
        return line(NodeHtmlMarkdown.translate(item.text));
      }
      case "json": {
        let value: unknown;
        try {
          value = JSON.parse(item.text);
        } catch {
          return line(item.text);
        }
        cell.json.push(value);
        return line(jsonDisplayText(value));
      }
      case "image":
        return this.image(cell, item.mime, item.data);
    }
  }

  private image(cell: CellShown, mime: string, data: string): string {
    const index = ++this.imageCount;
    if (mime === "image/svg+xml") return this.svg(cell, index, data);
    const bytes = Buffer.from(data, "base64");
    const info: ImageInfo = { index, mimeType: mime, bytes: bytes.length, shown: false, ...imageSize(bytes, mime) };
    cell.images.push(info);
    const what = `[image ${index}: ${mime === "image/png" ? "PNG" : "JPEG"}${dims(info)}, ${formatBytes(bytes.length)}`;
    const why = this.refusal(bytes.length);
    if (!why) {
      this.shownCount += 1;
      info.shown = true;
      this.content.push({ index, data, mimeType: mime });
      return this.quietShown ? "" : `${what}, shown]\n`;
    }
    info.shown = false;
    info.note = why;
    const kept = keepImage(bytes, mime);
    info.path = kept.path;
    this.pending.push(
      kept.saved.catch((e: Error) => {
        info.note = `${why}; it could not be saved either (${e.message})`;
        delete info.path;
        this.notes.push(`[image ${index} could not be saved: ${e.message}]`);
      }),
    );
    return `${what}, not shown: ${why}; saved as ${info.path}]\n`;
  }

  /** SVG is rendered to PNG (the model takes raster images); its slot is decided now, the pixels come later. */
  private svg(cell: CellShown, index: number, svg: string): string {
    const info: ImageInfo = { index, mimeType: "image/png", bytes: 0, shown: false };
    cell.images.push(info);
    const slot = this.shownCount < this.limits.maxImages;
    if (slot) this.shownCount += 1;
    this.pending.push(
      svgToPng(svg).then(
        async (png) => {
          info.bytes = png.length;
          Object.assign(info, imageSize(png, "image/png"));
          const why = slot ? (png.length > this.limits.maxImageBytes ? this.tooLarge() : undefined) : this.tooMany();
          if (!why) {
            info.shown = true;
            this.content.push({ index, data: png.toString("base64"), mimeType: "image/png" });
            return;
          }
          info.note = why;
          const kept = keepImage(png, "image/png");
          info.path = kept.path;
          await kept.saved;
          this.notes.push(`[image ${index} (SVG) not shown: ${why}; saved as ${info.path}]`);
        },
        (e: Error) => {
          info.note = `the SVG could not be rendered: ${e.message}`;
          this.notes.push(`[image ${index} (SVG) could not be rendered: ${e.message}]`);
        },
      ),
    );
    // An SVG not shown gets its trailing note (below), so it is named either way.
    return this.quietShown ? "" : `[image ${index}: SVG, ${formatBytes(Buffer.byteLength(svg))}, rendered as PNG]\n`;
  }

  private tooLarge(): string {
    return `larger than the ${formatBytes(this.limits.maxImageBytes)} limit for images shown to the model`;
  }

  private tooMany(): string {
    return `the first ${this.limits.maxImages} images of this call were shown`;
  }

  private refusal(bytes: number): string | undefined {
    if (bytes > this.limits.maxImageBytes) return this.tooLarge();
    if (this.shownCount >= this.limits.maxImages) return this.tooMany();
    return undefined;
  }

  /** Waits for SVG renders and image saves. */
  async settle(): Promise<void> {
    await Promise.all(this.pending);
  }

  /** Lines about images that could not be rendered or saved (after settle). */
  trailingNotes(): string[] {
    return [...this.notes];
  }

  /** The images for the model, in display order. */
  imageContent(): { type: "image"; data: string; mimeType: string }[] {
    return [...this.content]
      .sort((a, b) => a.index - b.index)
      .map(({ data, mimeType }) => ({ type: "image" as const, data, mimeType }));
  }

  countsOf(i: number): { images: number; jsonOutputs: number } {
    return this.countsIn(i, i);
  }

  /** Of cells `first` to `last` together (a batch run's). */
  countsIn(first: number, last: number): { images: number; jsonOutputs: number } {
    let images = 0;
    let jsonOutputs = 0;
    for (let i = first; i <= last; i++) {
      const c = this.cells.get(i);
      images += c?.images.length ?? 0;
      jsonOutputs += c?.json.length ?? 0;
    }
    return { images, jsonOutputs };
  }

  cellDetails(i: number): { images?: ImageInfo[]; json?: unknown[] } {
    const c = this.cells.get(i);
    return {
      ...(c?.images.length ? { images: c.images } : {}),
      ...(c?.json.length ? { json: c.json } : {}),
    };
  }

  markdownIn(i: number): boolean {
    return this.cells.get(i)?.markdown ?? false;
  }

  jsonOutputs(): unknown[] {
    return [...this.cells.keys()].sort((a, b) => a - b).flatMap((i) => this.cells.get(i)!.json);
  }

  images(): ImageInfo[] {
    return [...this.cells.keys()].sort((a, b) => a - b).flatMap((i) => this.cells.get(i)!.images);
  }
}

function line(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}

function dims(info: ImageInfo): string {
  return info.width !== undefined ? ` ${info.width}×${info.height}` : "";
}
