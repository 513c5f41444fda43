#!/usr/bin/env node
// A lockharness client (docs/client-protocol.md) that translates the protocol to the
// `redis-semaphore` npm package's Mutex over one ioredis client on the first node
// (nodes[0], n1), with nothing added: a single-instance lock, as redisson-rlock is, not
// the package's RedlockMutex. What the library does wrong (5.3.0's refresh re-creates an
// expired key, #175) is the harness's to find, so it passes through untouched.
//
// It speaks protocol 2 (and 1, for a worker that offers only 1): a certain failure is
// `refused` with a reason (version 1: `granted: false`).
//
// Mapping of redis-semaphore's outcomes (lib/Lock.js, lib/RedisMutex.js, lib/mutex/*.js;
// the same in 5.3.0, 5.3.1 and 5.8.0 but for the refresh script and the option naming a
// lock acquired elsewhere):
//   acquire: new Mutex(client, key, {lockTimeout: ttl_ms, acquireAttemptsLimit: 1,
//     acquireTimeout, retryInterval: 0, refreshInterval: 0, onLockLost: log}).tryAcquire().
//     One attempt: SET mutex:<key> <identifier> PX ttl NX. true -> granted, token = value =
//     mutex.identifier (a random UUID), redis_key = the key the library wrote (`mutex:` +
//     key). false -> refused (the key is held, or the attempt was not started). A rejected
//     promise (a timeout, a node down: ioredis's own error) -> error. refreshInterval 0: no
//     automatic refresh, the harness drives extends.
//   extend: a Mutex for the lease's key resumed with the token as an identifier acquired
//     elsewhere, lockTimeout = ttl_ms, refreshInterval 0; tryAcquire() then runs the
//     library's refresh script (its _refresh, not SET NX) once: true -> granted; false
//     (the key holds another value, or since 5.3.1 none) -> refused, without `lost` (the
//     library deletes nothing); a rejected promise -> error.
//   release: a Mutex resumed the same way, release(): the library runs its
//     compare-and-delete script and discards its answer (releaseMutex returns nothing),
//     so a release is `true` whenever it did not throw, even for an expired lease; a
//     rejected promise -> error.
//   validity_ms: the library gives none: ttl_ms minus the time since the request was
//     received (the SET's PX starts later than that), floored at 0. fencing: null.
//
// Resuming a lock acquired elsewhere: 5.3.x has the option `externallyAcquiredIdentifier:
// token`; later releases take `identifier: token, acquiredExternally: true` (and deprecate
// the former). Which one the installed library has is found once, by feature: a Mutex made
// with `identifier` carries it only where the library reads that option.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const { performance } = require("perf_hooks");
const Redis = require("ioredis");
const { Mutex } = require("redis-semaphore");

function installedVersion(pkg) {
  // Read from beside the entry point: the package's own package.json, whatever it exports.
  let dir = path.dirname(require.resolve(pkg));
  for (; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, "package.json");
    const meta = fs.existsSync(file) && JSON.parse(fs.readFileSync(file, "utf8"));
    if (meta && meta.name === pkg) return meta.version;
  }
  return "(unknown version)";
}

const NAME = `redis-semaphore ${installedVersion("redis-semaphore")} (ioredis ${installedVersion("ioredis")})`;

let client = null; // set by init: the ioredis client of nodes[0]
let version = 0; // the protocol version agreed at init
let acquireTimeoutMs = 0; // the per-node timeout: how long the one attempt may start after
let resumeOptions = null; // (token) -> the options resuming a lock acquired elsewhere

function log(message) {
  process.stderr.write(`redis-semaphore-client: ${message}\n`);
}

// One ioredis client, on the first node. maxRetriesPerRequest 0 and no offline queue: a
// command to a down node fails at once instead of waiting for a reconnect; commandTimeout
// is the per-node timeout. ioredis keeps reconnecting in the background, as it does for users.
function connect(node, timeoutMs) {
  const redis = new Redis({
    host: node.host,
    port: node.port,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  redis.on("error", (error) => log(`${node.name}: ${error.message}`));
  return redis;
}

// Wait (briefly) for the first connection, so the first acquire does not meet a socket
// still connecting; a node that is down at init is not an error.
function firstConnection(redis) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once("ready", done);
    redis.once("end", done);
  });
}

// The option form the installed library reads for a lock acquired elsewhere (see the top).
// Making a Mutex sends nothing to Redis.
function resumeForm() {
  const probe = "lockharness-probe";
  const made = new Mutex(client, probe, { identifier: probe, acquiredExternally: true, refreshInterval: 0 });
  if (made.identifier === probe) return (token) => ({ identifier: token, acquiredExternally: true });
  return (token) => ({ externallyAcquiredIdentifier: token });
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

// A certain failure, with its reason (version 1 has no reason).
function refused(reason) {
  return version >= 2 ? { refused: reason } : { granted: false };
}

async function init(req) {
  const agreed = negotiate(req);
  if (!agreed) return { error: `unsupported protocols ${JSON.stringify(req.protocols)} (this program speaks 1 and 2)`, exit: 1 };
  if (client) return { error: "init twice" };
  if (!Array.isArray(req.nodes) || req.nodes.length === 0) return { error: "init without nodes" };
  const timeout = (req.options || {}).timeout ?? "50ms";
  const timeoutMs = durationMs(timeout);
  if (!(timeoutMs > 0)) {
    return { error: `options.timeout must be a positive duration such as "50ms", not ${JSON.stringify(timeout)}` };
  }
  client = connect(req.nodes[0], timeoutMs);
  await firstConnection(client);
  // acquireTimeout bounds when an attempt may start (not how long it runs): with one
  // attempt, at least 1 ms so that the attempt is made.
  acquireTimeoutMs = Math.max(1, Math.ceil(timeoutMs));
  resumeOptions = resumeForm();
  version = agreed;
  const ready = { ok: true, name: NAME, abilities: ["extend"] };
  return version === 2 ? { ...ready, protocol: 2 } : ready;
}

// What every Mutex of this program shares: no automatic refresh, a lost lock only logged.
function mutex(key, options) {
  return new Mutex(client, key, {
    refreshInterval: 0,
    onLockLost: (error) => log(`lock lost: ${error.message}`),
    ...options,
  });
}

// The library gives no validity: the TTL less the time since the request was received.
function validityMs(ttlMs, received) {
  return Math.max(0, Math.floor(ttlMs - (performance.now() - received)));
}

// The key the library wrote (RedisMutex prefixes the workload's key with `mutex:`).
function redisKey(lock, key) {
  return typeof lock._key === "string" ? lock._key : `mutex:${key}`;
}

async function acquire(req) {
  const received = performance.now();
  const lock = mutex(req.key, {
    lockTimeout: req.ttl_ms,
    acquireAttemptsLimit: 1,
    acquireTimeout: acquireTimeoutMs,
    retryInterval: 0, // after the one failed attempt the library waits this long: not at all
  });
  if (!(await lock.tryAcquire())) {
    const key = redisKey(lock, req.key);
    log(`acquire ${req.key} refused: tryAcquire() returned false`);
    return refused(`tryAcquire() returned false: ${key} is held (SET NX did not set it)`);
  }
  return {
    granted: true,
    token: lock.identifier,
    validity_ms: validityMs(req.ttl_ms, received),
    fencing: null,
    redis_key: redisKey(lock, req.key),
    value: lock.identifier,
  };
}

async function release(req) {
  const lock = mutex(req.lease.key, resumeOptions(req.lease.token));
  await lock.release(); // resolves to nothing: the library does not say whether it deleted
  return { released: true };
}

async function extend(req) {
  const received = performance.now();
  const lock = mutex(req.lease.key, { lockTimeout: req.ttl_ms, ...resumeOptions(req.lease.token) });
  if (!(await lock.tryAcquire())) {
    log(`extend ${req.lease.key} refused: the refresh returned false`);
    return refused(`tryAcquire() (refresh) returned false: ${redisKey(lock, req.lease.key)} does not hold this token`);
  }
  return { granted: true, validity_ms: validityMs(req.ttl_ms, received) };
}

const validLease = (lease) =>
  lease && typeof lease.key === "string" && lease.key && typeof lease.token === "string" && lease.token;
const validTtl = (ttl) => Number.isInteger(ttl) && ttl > 0;

async function serve(req) {
  if (req.op !== "init" && req.op !== "close" && !client) return { error: `"${req.op}" before init` };
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
  if (client) client.disconnect();
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
