// Types of model.js (plain JS so the browser loads it as is), for Node tests.
export interface ActorEntry {
  id: string;
  name: string;
  parentId?: string;
  kind: "machine" | "callback";
  status: string;
  label: string;
  value?: unknown;
  context?: unknown;
  createdAt: number;
  endedAt?: number;
  history: { at: number; label: string; status: string; restart?: boolean }[];
  events: { at: number; type: string; from?: string; event: unknown }[];
  incarnation: number;
  /** The latest snapshot's step: the value before and after and the event that caused it (statechart view). */
  step?: { from: unknown; to: unknown; event: string; at: number; seen: number };
  /** Bumped on every change (the page redraws details only when it moved). */
  rev?: number;
}
export interface Model {
  actors: Map<string, ActorEntry>;
  order: string[];
  kids: Map<string, Set<string>>;
  start?: number;
  end?: number;
  version: number;
  /** Recent events between actors, oldest first (the live sequence view). */
  sequence: { at: number; from?: string; to: string; type: string }[];
}
export interface Step {
  line: number;
  at?: number;
  text: string;
  frame?: object;
  input?: object;
}
export function createModel(): Model;
export function stateLabel(value: unknown): string;
export function runTitle(a: { id: string; context?: unknown } | undefined): string | undefined;
export function applyFrame(model: Model, frame: object): string[];
export function childrenOf(model: Model, id: string): string[];
export function roots(model: Model): string[];
export function stepsFromLog(text: string): { header?: object; steps: Step[]; error?: string };
export function modelAt(steps: Step[], count: number): Model;
export function applyStep(model: Model, step: Step): void;
