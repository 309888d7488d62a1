// The extension's one footer item. Pi draws every extension's status on one line joined by a bare space, so the
// code sessions, shell sessions, backend and inspector statuses, set as separate items, ran together
// ("2 Python sessions · idle unified-exec: 1 session running inspector http://…"). Here they are parts of one item, in a
// fixed order, separated by FOOTER_SEPARATOR.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";

/** The footer key (the key the code-sessions status always had). */
export const FOOTER_KEY = "code-execution";
export const FOOTER_SEPARATOR = " │ ";

/** The parts, in the order shown: code sessions, shell sessions, where runs execute, the inspector. */
const PARTS = ["code", "exec", "backend", "inspect"] as const;
export type FooterPart = (typeof PARTS)[number];

type UI = ExtensionContext["ui"];

export class Footer {
  private ui: UI | undefined;
  private readonly parts = new Map<FooterPart, string>();
  private last: string | undefined;

  /** The UI of the running Pi session (from session_start); without one nothing is shown. */
  setUI(ctx: ExtensionContext): void {
    this.ui = ctx.hasUI ? ctx.ui : undefined;
    this.last = undefined;
    this.flush();
  }

  /** Sets one part (undefined removes it); the item is redrawn when its text changed. */
  set(part: FooterPart, text: string | undefined): void {
    if (text === undefined) this.parts.delete(part);
    else this.parts.set(part, text);
    this.flush();
  }

  /** The item's text: the parts present, in order, separated; undefined when none is. */
  text(): string | undefined {
    const shown = PARTS.map((p) => this.parts.get(p)).filter((t): t is string => Boolean(t));
    return shown.length ? shown.join(FOOTER_SEPARATOR) : undefined;
  }

  private flush(): void {
    const text = this.text();
    if (text === this.last || !this.ui) return;
    this.last = text;
    try {
      this.ui.setStatus(FOOTER_KEY, text === undefined ? undefined : (this.ui.theme?.fg("muted", text) ?? text));
    } catch {
      // A UI that went away (reload) is not an error of ours.
    }
  }
}
