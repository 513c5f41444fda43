#!/usr/bin/env node
// A lockharness client (docs/client-protocol.md) that translates the protocol to the
// `redlock` npm package (v5, TypeScript rewrite) over one ioredis client per node, with
// nothing added: the library's known issues (a lock returned already expired, #296; no
// validity check on acquire or extend; expiration on the wall clock) are the harness's to
// find, so they pass through untouched.
//
// It speaks protocol 2 (and 1, for a worker that offers only 1): a certain failure is
// `refused` with the library's message as the reason (version 1: `granted: false`).
//
// Mapping of redlock's outcomes (dist/cjs/index.js):
//   acquire: acquire([key], ttl) with retryCount 0 resolves a Lock once a quorum of nodes
//     ran the acquire script -> granted. An ExecutionError (no quorum; the library has
//     already released everywhere) -> refused, as its caller would not hold it.
//   release: lock.release() resolves when a quorum deleted -> true. Its ExecutionError
//     carries each node's vote: ResourceLockedError = the node answered "not this
//     value here"; any other error = no answer. false when the answers prove no quorum
//     deleted; error when the unanswered nodes could have completed one (unknown).
//   extend: lock.extend(ttl) -> the replacement Lock (granted, validity from its
//     expiration); "Cannot extend an already-expired lock" or a proven refusal -> refused
//     (the library deletes nothing: no `lost`); the same "could have" rule -> error.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const Redis = require("ioredis");
const { default: Redlock, Lock, ExecutionError, ResourceLockedError } = require("redlock");

function installedVersion(pkg) {
  // redlock's "exports" hides its package.json: read it from beside the entry point.
  let dir = path.dirname(require.resolve(pkg));
  for (; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, "package.json"); // dist/cjs has one too, without a name
    const meta = fs.existsSync(file) && JSON.parse(fs.readFileSync(file, "utf8"));
    if (meta && meta.name === pkg) return meta.version;
  }
  return "(unknown version)";
}

const NAME = `redlock ${installedVersion("redlock")} (ioredis ${installedVersion("ioredis")})`;

let redlock = null; // set by init
let version = 0; // the protocol version agreed at init
let clients = [];
const held = new Map(); // token -> the Lock acquire (or the last extend) returned

function log(message) {
  process.stderr.write(`node-redlock-client: ${message}\n`);
}

// One ioredis client per node. maxRetriesPerRequest 0 and no offline queue: a command to a
// down node fails at once instead of waiting for a reconnect; commandTimeout is the
// per-node timeout. ioredis keeps reconnecting in the background, as it does for users.
function connect(node, timeoutMs) {
  const client = new Redis({
    host: node.host,
    port: node.port,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  client.on("error", (error) => log(`${node.name}: ${error.message}`));
  return client;
}

// Wait (briefly) for the first connection, so the first acquire does not meet a socket
// still connecting; a node that is down at init is not an error.
function firstConnection(client) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    client.once("ready", done);
    client.once("end", done);
  });
}

// 2 when the worker offers it (protocols), else 1 when init says protocol 1 (a version-1
// worker sends no protocols); 0: nothing this program speaks.
function negotiate(req) {
  if (Array.isArray(req.protocols) && req.protocols.includes(2)) return 2;
  return req.protocol === 1 ? 1 : 0;
}

// A duration as a scenario writes it ("50ms", "1.5s"), in ms; NaN if it is not one.
const UNIT_MS = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 };
function durationMs(text) {
  const match = typeof text === "string" && /^\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|ms|s|m|h)\s*$/.exec(text);
  return match ? Number(match[1]) * UNIT_MS[match[2]] : NaN;
}

// A certain failure, with the library's reason (version 1 has no reason).
function refused(reason) {
  return version >= 2 ? { refused: reason } : { granted: false };
}

async function init(req) {
  const agreed = negotiate(req);
  if (!agreed) return { error: `unsupported protocols ${JSON.stringify(req.protocols)} (this program speaks 1 and 2)`, exit: 1 };
  if (redlock) return { error: "init twice" };
  if (!Array.isArray(req.nodes) || req.nodes.length === 0) return { error: "init without nodes" };
  const timeout = (req.options || {}).timeout ?? "50ms";
  const timeoutMs = durationMs(timeout);
  if (!(timeoutMs > 0)) {
    return { error: `options.timeout must be a positive duration such as "50ms", not ${JSON.stringify(timeout)}` };
  }
  clients = req.nodes.map((node) => connect(node, timeoutMs));
  await Promise.all(clients.map(firstConnection));
  redlock = new Redlock(clients, { retryCount: 0 });
  redlock.on("error", (error) => log(`redlock: ${error.message}`));
  version = agreed;
  const ready = { ok: true, name: NAME, abilities: ["extend"] };
  return version === 2 ? { ...ready, protocol: 2 } : ready;
}

// validity_ms from lock.expiration (start + ttl - drift, on Date.now(), the library's
// clock), counted from when the request was received on the same clock. The library may
// hand out a lock already past its expiration: that is 0, not a negative duration.
function validityMs(lock, received) {
  return Math.max(0, Math.floor(lock.expiration - received));
}

async function acquire(req) {
  const received = Date.now();
  let lock;
  try {
    lock = await redlock.acquire([req.key], req.ttl_ms);
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    log(`acquire ${req.key} refused: ${error.message}`);
    return refused(error.message);
  }
  held.set(lock.value, lock);
  // lock.attempts holds promises of the votes that settle only once every node has
  // answered (up to a timeout after the quorum): not available when acquire returns, so
  // the worker observes the grants from redis_key and value.
  return {
    granted: true,
    token: lock.value,
    validity_ms: validityMs(lock, received),
    fencing: null,
    redis_key: req.key,
    value: lock.value,
  };
}

// The Lock acquire returned, or for a token this process no longer holds, a Lock carrying
// the value with expiration 0, as lock.release() leaves the one it released.
function heldLock(lease) {
  const lock = held.get(lease.token);
  if (lock && lock.resources[0] === lease.key) return lock;
  return new Lock(redlock, [lease.key], lease.token, [], 0);
}

// After an ExecutionError: could the nodes that did not answer have completed a quorum?
async function unknownOutcome(error) {
  const attempt = error.attempts[error.attempts.length - 1];
  if (!attempt) return false; // refused before sending anything
  const stats = await attempt; // settles once every node has voted (or timed out)
  let refused = 0;
  for (const vote of stats.votesAgainst.values()) {
    if (vote instanceof ResourceLockedError) refused += 1;
  }
  return stats.membershipSize - refused >= stats.quorumSize;
}

async function release(req) {
  const lock = heldLock(req.lease);
  held.delete(req.lease.token);
  try {
    await lock.release();
    return { released: true };
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    if (await unknownOutcome(error)) return { error: `release ${req.lease.key}: ${error.message}` };
    log(`release ${req.lease.key}: not released: ${error.message}`);
    return { released: false };
  }
}

async function extend(req) {
  const received = Date.now();
  const lock = heldLock(req.lease);
  let replacement;
  try {
    replacement = await lock.extend(req.ttl_ms);
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    if (await unknownOutcome(error)) return { error: `extend ${req.lease.key}: ${error.message}` };
    log(`extend ${req.lease.key} refused: ${error.message}`);
    return refused(error.message);
  }
  held.set(req.lease.token, replacement);
  return { granted: true, validity_ms: validityMs(replacement, received) };
}

const validLease = (lease) =>
  lease && typeof lease.key === "string" && lease.key && typeof lease.token === "string" && lease.token;
const validTtl = (ttl) => Number.isInteger(ttl) && ttl > 0;

async function serve(req) {
  if (req.op !== "init" && req.op !== "close" && !redlock) return { error: `"${req.op}" before init` };
  switch (req.op) {
    case "init":
      return init(req);
    case "acquire":
      if (typeof req.key !== "string" || !req.key || !validTtl(req.ttl_ms)) {
        return { error: "acquire needs key and a positive integer ttl_ms" };
      }
      return acquire(req);
    case "release":
      if (!validLease(req.lease)) return { error: "release needs lease.key and lease.token" };
      return release(req);
    case "extend":
      if (!validLease(req.lease) || !validTtl(req.ttl_ms)) {
        return { error: "extend needs lease.key, lease.token and a positive integer ttl_ms" };
      }
      return extend(req);
    case "close":
      return { ok: true, exit: 0 };
    default:
      return { error: `unknown op ${JSON.stringify(req.op)}` };
  }
}

// One line in, one line out. A malformed line gets an error reply; an exception thrown
// by a request is its error reply (outcome unknown), never a crash.
async function answer(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (error) {
    return { reply: { id: null, error: `malformed request: ${error.message}` } };
  }
  if (req === null || typeof req !== "object" || !Number.isInteger(req.id)) {
    return { reply: { id: null, error: "malformed request: no integer id" } };
  }
  let result;
  try {
    result = await serve(req);
  } catch (error) {
    result = { error: `${error && error.name}: ${error && error.message}` };
  }
  const { exit, ...fields } = result;
  return { reply: { id: req.id, ...fields }, exit };
}

function write(reply) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(reply) + "\n", resolve));
}

async function shutdown(code) {
  for (const client of clients) client.disconnect();
  process.exit(code);
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const { reply, exit } = await answer(line);
    await write(reply);
    if (exit !== undefined) await shutdown(exit);
  }
  await shutdown(0); // stdin ended
}

main();
