// machines/actor-ids.ts: every actor id is built there and read back there, so what it builds it must parse.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  actorKind,
  execActorId,
  isActor,
  runActorId,
  sessionActorId,
  sessionRunnerId,
  spareActorId,
  toolActorId,
  wakeActorId,
} from "../../machines/actor-ids.ts";

test("each id built is read back as its kind", () => {
  const built: [string, string][] = [
    [runActorId("r1"), "run"],
    [sessionActorId("a.b"), "session"],
    [sessionRunnerId("a"), "session"],
    [spareActorId(3), "spare"],
    [toolActorId("r1", 2), "tool"],
    [execActorId(7), "exec"],
    [wakeActorId(7), "wake"],
  ];
  for (const [id, kind] of built) assert.equal(actorKind(id), kind, id);
  assert.equal(toolActorId("r1", 2), "tool:r1:2");
  assert.equal(sessionRunnerId("a"), "session:a/runner");
});

test("ids that are none of ours have no kind, and a kind is never a prefix match", () => {
  for (const id of ["runner", "", ":x", "sessions:a", "spare", "runs:1", "x:run:1"])
    assert.equal(actorKind(id), undefined, id);
  assert.equal(isActor("spare:1", "spare"), true);
  assert.equal(isActor("sparse:1", "spare"), false);
  assert.equal(isActor("session:x", "run"), false);
});
