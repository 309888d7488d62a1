"use strict";
// The control channel on fd 3 (docs/protocol-js.md, "Frames"): length-prefixed JSON frames. Frames go out with
// blocking writes, so every byte a cell wrote to fd 1/2 before a frame is in its pipe before the frame is sent.
const fs = require("node:fs");

const CONTROL_FD = 3;
const MAX_FRAME = 64 << 20;

const sleeper = new Int32Array(new SharedArrayBuffer(4));

function send(frame) {
  writeBody(Buffer.from(JSON.stringify(frame), "utf8"));
}

function writeBody(body) {
  if (body.length > MAX_FRAME) throw new RangeError(`a frame of ${body.length} bytes exceeds the 64 MiB limit`);
  const buf = Buffer.allocUnsafe(4 + body.length);
  buf.writeUInt32BE(body.length, 0);
  body.copy(buf, 4);
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(CONTROL_FD, buf, off);
    } catch (e) {
      if (e.code === "EAGAIN") Atomics.wait(sleeper, 0, 0, 1);
      else if (e.code !== "EINTR") orphaned();
    }
  }
}

/** The host died or closed the channel: take the whole process group down so nothing outlives it. */
function orphaned() {
  try {
    if (leadsGroup()) process.kill(-process.pid, "SIGKILL");
  } finally {
    process.reallyExit(1);
  }
}

function leadsGroup() {
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) === process.pid;
  } catch {
    return false;
  }
}

function fatal(message) {
  try {
    send({ type: "fatal", message });
  } finally {
    process.reallyExit(70);
  }
}

let inbox = Buffer.alloc(0);
let receive = () => {};

/** Starts reading frames on fd 3; each whole frame goes to `onFrame`. End-of-file means the host is gone. */
function listen(onFrame) {
  receive = onFrame;
  const net = require("node:net");
  const control = new net.Socket({ fd: CONTROL_FD, readable: true, writable: true, allowHalfOpen: true });
  control.on("data", onData);
  control.on("end", orphaned);
  control.on("error", orphaned);
}

function onData(chunk) {
  try {
    inbox = inbox.length ? Buffer.concat([inbox, chunk]) : chunk;
    while (inbox.length >= 4) {
      const n = inbox.readUInt32BE(0);
      if (n > MAX_FRAME) return fatal(`a control frame of ${n} bytes exceeds the 64 MiB limit`);
      if (inbox.length < 4 + n) return;
      const body = inbox.subarray(4, 4 + n);
      inbox = inbox.subarray(4 + n);
      let frame;
      try {
        frame = JSON.parse(body.toString("utf8"));
      } catch {
        return fatal("a control frame is not valid JSON");
      }
      if (!frame || typeof frame !== "object" || typeof frame.type !== "string")
        return fatal("a control frame has no type");
      receive(frame);
    }
  } catch (e) {
    fatal(`runner internal error: ${(e && e.stack) || e}`);
  }
}

module.exports = { send, writeBody, fatal, listen, leadsGroup };
