// Types of cursor.js (plain JS so the browser loads it as is), for Node tests.
import type { Model, Step } from "./model.js";
export function copyModel(model: Model): Model;
export class LogCursor {
  constructor(steps: Step[], every?: number);
  model: Model;
  position: number;
  at(position: number): Model;
}
