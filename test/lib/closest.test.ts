// "Did you mean ...?" (lib/closest.ts): the closest known name within a third of its length, swapped neighbours
// counted as one edit, nothing when no known name is near.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { closestName, didYouMean, editDistance } from "../../lib/closest.ts";

const SURFACES = ["code_execution", "python", "eval", "exec"];

describe("closestName", () => {
  test("edit distance: a swap is one edit, as are an insertion, a deletion and a substitution", () => {
    assert.equal(editDistance("pyhton", "python"), 1);
    assert.equal(editDistance("evl", "eval"), 1);
    assert.equal(editDistance("evall", "eval"), 1);
    assert.equal(editDistance("exac", "exec"), 1);
    assert.equal(editDistance("", "exec"), 4);
    assert.equal(editDistance("abc", "abc"), 0);
    assert.equal(editDistance("ca", "abc"), 3);
  });

  test("typos find their name, case aside; exact names are themselves", () => {
    assert.equal(closestName("pyhton", SURFACES), "python");
    assert.equal(closestName("Python", SURFACES), "python");
    assert.equal(closestName("code-execution", SURFACES), "code_execution");
    assert.equal(closestName("exce", SURFACES), "exec");
    assert.equal(closestName("eval", SURFACES), "eval");
    assert.equal(closestName("sandbx", ["local", "sandbox", "remote"]), "sandbox");
  });

  test("nothing near: no guess (a wrong guess is worse than none)", () => {
    for (const far of ["bogus", "shell", "nonsense", "", "codeexec"])
      assert.equal(closestName(far, SURFACES), undefined, far);
    assert.equal(closestName("ssh", ["local", "sandbox", "remote"]), undefined);
    assert.equal(didYouMean("bogus", SURFACES), "");
    assert.equal(didYouMean("pyhton", SURFACES), '; did you mean "python"?');
    assert.equal(
      didYouMean("netwrok", ["sandbox.network", "sandbox.env"], "sandbox."),
      '; did you mean "sandbox.network"?',
    );
  });
});
