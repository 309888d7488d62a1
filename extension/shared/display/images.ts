// Image facts the display needs without a decoder: the size in a PNG or JPEG header, and SVG rendered to PNG with
// resvg (WebAssembly, loaded on first use). Images not shown are kept by the host (host/displays.ts).
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

export function imageSize(data: Buffer, mime: string): { width: number; height: number } | undefined {
  if (mime === "image/png") {
    if (data.length < 24 || data.readUInt32BE(12) !== 0x49484452) return undefined; // "IHDR"
    return { width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
  }
  if (mime === "image/jpeg") {
    let i = 2;
    while (i + 9 < data.length) {
      if (data[i] !== 0xff) return undefined;
      const marker = data[i + 1];
      const length = data.readUInt16BE(i + 2);
      // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
        return { height: data.readUInt16BE(i + 5), width: data.readUInt16BE(i + 7) };
      i += 2 + length;
    }
  }
  return undefined;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

type ResvgModule = typeof import("@resvg/resvg-wasm");
let resvg: Promise<ResvgModule> | undefined;

async function loadResvg(): Promise<ResvgModule> {
  const mod = await import("@resvg/resvg-wasm");
  const wasm = createRequire(import.meta.url).resolve("@resvg/resvg-wasm/index_bg.wasm");
  await mod.initWasm(await readFile(wasm));
  return mod;
}

/** An SVG document rendered to PNG at its own size (text needs fonts resvg has not got: shapes render, text may not). */
export async function svgToPng(svg: string): Promise<Buffer> {
  resvg ??= loadResvg();
  const { Resvg } = await resvg;
  const png = new Resvg(svg, { font: { loadSystemFonts: false } }).render().asPng();
  return Buffer.from(png);
}
