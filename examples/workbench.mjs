#!/usr/bin/env node
// A workbench client to copy: everything a workbench (or a headless node) does with the Platform
// API, in one file, with plain `fetch`, the `dpop` package (RFC 9449 proofs) and `ws` (the
// control channel). It depends on nothing in src/: copy it out of the repository as it is.
//
//   node examples/workbench.mjs --url http://localhost:3000 --state ./workbench.json --project prj_…
//
// What it does, in order:
//   1. keeps an ES256 key in the state file (created on first run, private JWK, mode 0600);
//   2. enrols, once: by device code (prints the code and the address where a person approves it,
//      then polls the token endpoint at the interval it was given, slower after `slow_down`), or
//      with a join key (--join-key or PLATFORM_JOIN_KEY) as a headless node, at once;
//   3. reads its policy (GET /policy/v1) with a DPoP proof, and again only when it may have
//      changed: the ETag goes back as If-None-Match, and 304 means "the same as before";
//   4. uploads an ingest envelope (POST /ingest/v1) and keeps the cursors the service answers;
//   5. refreshes its tokens (POST /relay/v1/token), as it does whenever the access token is old;
//   6. holds the control channel (GET /relay/v1/connect, a WebSocket) and reads its policy again
//      on `hello` and on every `policy.changed`. Polling is the source of truth: a notification
//      only says "read again now", so a missed one costs a delay, never a wrong policy.
//
// Options (each also as an environment variable):
//   --url <origin>         PLATFORM_URL        the service, e.g. https://platform.example.com
//   --state <file>         PLATFORM_STATE      key, tokens and cursors (JSON, created 0600)
//   --project <id>         PLATFORM_PROJECT    the project ingest items belong to (prj_…)
//   --workspace <id>       PLATFORM_WORKSPACE  this workbench's workspace (default: example-workspace)
//   --name <text>          PLATFORM_NAME       the name people see when they approve it
//   --join-key <key>       PLATFORM_JOIN_KEY   enrol as a node with a join key (platform_jk_…)
//   --once                                     do 1 to 6, take the channel's `hello`, close it and exit
//
// Secrets (the key, tokens, the join key) are never printed. Stop it with Ctrl-C.

import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import * as DPoP from 'dpop';
import WebSocket from 'ws';

const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

const { values: flags } = parseArgs({
  options: {
    url: { type: 'string' },
    state: { type: 'string' },
    project: { type: 'string' },
    workspace: { type: 'string' },
    name: { type: 'string' },
    'join-key': { type: 'string' },
    once: { type: 'boolean' },
  },
});
const env = process.env;
const url = flags.url ?? env.PLATFORM_URL;
const options = {
  // The service's origin: the proofs' `htu` and the control channel's address are built from it.
  url: url ? new URL(url).origin : '',
  state: flags.state ?? env.PLATFORM_STATE,
  project: flags.project ?? env.PLATFORM_PROJECT,
  workspace: flags.workspace ?? env.PLATFORM_WORKSPACE ?? 'example-workspace',
  name: flags.name ?? env.PLATFORM_NAME ?? 'Example workbench',
  joinKey: flags['join-key'] ?? env.PLATFORM_JOIN_KEY,
  once: flags.once === true,
};
if (!options.url || !options.state || !options.project) {
  console.error('usage: node examples/workbench.mjs --url <origin> --state <file.json> --project <prj_…> [--workspace <id>] [--name <text>] [--join-key <key>] [--once]');
  process.exit(2);
}

/** One line of what the client is doing: `step: what happened`. */
const say = (step, text) => console.log(`${step.padEnd(8)} ${text}`);

// ---------------------------------------------------------------------------------------------
// State: the key, the tokens and the cursors, in one JSON file only its owner can read
// ---------------------------------------------------------------------------------------------

/** Reads the state file; a missing file is a first run. */
async function loadState() {
  try {
    return JSON.parse(await readFile(options.state, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return {};
    throw error;
  }
}

/** Writes the state file whole (a temporary file renamed over it), mode 0600: it holds the private key and tokens. */
async function saveState(state) {
  const temporary = `${options.state}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, options.state);
}

/**
 * The DPoP key: an ES256 key pair, its private half kept as a JWK in the state file. The public
 * key must be extractable (the proof carries it); the private one is imported for signing only.
 */
async function loadOrCreateKey(state) {
  if (state.privateJwk) {
    const { d: _private, key_ops: _ops, ext: _ext, ...publicJwk } = state.privateJwk;
    const algorithm = { name: 'ECDSA', namedCurve: 'P-256' };
    const keys = {
      privateKey: await crypto.subtle.importKey('jwk', state.privateJwk, algorithm, false, ['sign']),
      publicKey: await crypto.subtle.importKey('jwk', publicJwk, algorithm, true, ['verify']),
    };
    say('key', `loaded from ${options.state} (thumbprint ${await DPoP.calculateThumbprint(keys.publicKey)})`);
    return keys;
  }
  const keys = await DPoP.generateKeyPair('ES256', { extractable: true });
  state.privateJwk = await crypto.subtle.exportKey('jwk', keys.privateKey);
  await saveState(state);
  say('key', `created an ES256 key in ${options.state} (mode 0600, thumbprint ${await DPoP.calculateThumbprint(keys.publicKey)})`);
  return keys;
}

// ---------------------------------------------------------------------------------------------
// HTTP with DPoP
// ---------------------------------------------------------------------------------------------

/** The service's DPoP nonce, when it asks for one (DPOP_REQUIRE_NONCE): sent with every later proof. */
let dpopNonce;

/**
 * One request with a fresh DPoP proof. `accessToken` adds `Authorization: DPoP …` and binds the
 * proof to it (`ath`). When the service answers `use_dpop_nonce` the request is sent once more
 * with the nonce it gave (RFC 9449 section 8).
 */
async function dpopFetch(keys, method, url, { accessToken, headers = {}, body } = {}) {
  for (let attempt = 1; ; attempt++) {
    const proof = await DPoP.generateProof(keys, url, method, dpopNonce, accessToken);
    const res = await fetch(url, {
      method,
      headers: { ...headers, DPoP: proof, ...(accessToken ? { Authorization: `DPoP ${accessToken}` } : {}) },
      body,
    });
    if (res.headers.has('dpop-nonce')) dpopNonce = res.headers.get('dpop-nonce');
    const askedForNonce = (res.status === 400 || res.status === 401) && (res.headers.get('www-authenticate') ?? '').includes('use_dpop_nonce');
    if (askedForNonce && attempt === 1) {
      await res.body?.cancel();
      continue;
    }
    return res;
  }
}

const json = (value) => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) });

/** An OAuth error answer (`{error, error_description}`), or the spec's error body, as one line. */
async function describeRefusal(res) {
  const text = await res.text();
  try {
    const body = JSON.parse(text);
    return `${res.status} ${body.error ?? ''}${body.error_description ? `: ${body.error_description}` : body.message ? `: ${body.message}` : ''}`;
  } catch {
    return `${res.status} ${text.slice(0, 200)}`;
  }
}

/** Tokens as the state file keeps them: when the access token stops working, not how long it lived. */
function keepTokens(state, answer) {
  state.tokens = {
    access_token: answer.access_token,
    refresh_token: answer.refresh_token,
    token_type: answer.token_type,
    expires_at: Date.now() + answer.expires_in * 1000,
  };
}

// ---------------------------------------------------------------------------------------------
// Enrolment
// ---------------------------------------------------------------------------------------------

/**
 * Device code (RFC 8628), bound to the key from the start (`dpop_jkt`): a person approves at the
 * address shown; the client polls at `interval` seconds, 5 more after each `slow_down` (for
 * good), until the code is approved, denied or expired.
 */
async function enrolWithDeviceCode(keys) {
  const jkt = await DPoP.calculateThumbprint(keys.publicKey);
  const res = await fetch(`${options.url}/relay/v1/device/code`, {
    method: 'POST',
    ...json({ workspaceId: options.workspace, name: options.name, kind: 'workbench', dpop_jkt: jkt }),
  });
  if (res.status !== 200) throw new Error(`asking for a device code: ${await describeRefusal(res)}`);
  const code = await res.json();
  say('enrol', `to approve this workbench, open ${code.verification_uri} and enter the code ${code.user_code}`);
  say('enrol', `(or open ${code.verification_uri_complete}); the code works for ${Math.round(code.expires_in / 60)} minutes`);

  let interval = code.interval;
  const deadline = Date.now() + code.expires_in * 1000;
  say('enrol', `waiting for approval (asking every ${interval} s)…`);
  while (Date.now() < deadline) {
    await sleep(interval * 1000);
    const poll = await dpopFetch(keys, 'POST', `${options.url}/relay/v1/device/token`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: DEVICE_CODE_GRANT, device_code: code.device_code }).toString(),
    });
    if (poll.status === 200) return poll.json();
    const error = await poll.json().catch(() => ({}));
    if (error.error === 'authorization_pending') continue;
    if (error.error === 'slow_down') {
      interval += 5;
      say('enrol', `the service asked to slow down: asking every ${interval} s from now on`);
      continue;
    }
    // access_denied, expired_token, invalid_grant…: this code is over; run again for a new one.
    throw new Error(`enrolment ended: ${error.error ?? poll.status}${error.error_description ? ` (${error.error_description})` : ''}`);
  }
  throw new Error('enrolment ended: the code expired before anyone approved it');
}

/**
 * A join key (a node, no person in the loop): the manifest says what joins (spec 2.11), and the
 * proof in the `DPoP` header binds the tokens to the key at once.
 */
async function enrolWithJoinKey(keys) {
  const jkt = await DPoP.calculateThumbprint(keys.publicKey);
  const manifest = { schemaVersion: 1, nodeId: options.workspace, name: options.name, kind: 'node', owner: { type: 'user' } };
  const res = await dpopFetch(keys, 'POST', `${options.url}/relay/v1/device/join`, json({ key: options.joinKey, name: options.name, manifest, dpop_jkt: jkt }));
  if (res.status !== 200) throw new Error(`joining with the key: ${await describeRefusal(res)}`);
  return res.json();
}

// ---------------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------------

/**
 * A new pair for the refresh token (it rotates on every use: keep the new one at once). A bound
 * device proves its key on every refresh too.
 */
async function refreshTokens(keys, state) {
  const res = await dpopFetch(keys, 'POST', `${options.url}/relay/v1/token`, json({ refresh_token: state.tokens.refresh_token }));
  if (res.status !== 200) throw new Error(`refreshing the tokens: ${await describeRefusal(res)} (delete ${options.state}'s "tokens" to enrol again)`);
  keepTokens(state, await res.json());
  await saveState(state);
  say('tokens', `refreshed; the new access token works for ${Math.round((state.tokens.expires_at - Date.now()) / 1000)} s`);
}

/** The access token, refreshed first when it has less than a minute left. */
async function accessToken(keys, state) {
  if (state.tokens.expires_at - Date.now() < 60_000) await refreshTokens(keys, state);
  return state.tokens.access_token;
}

/** A device request; a 401 (token expired or revoked meanwhile) refreshes once and tries again. */
async function deviceFetch(keys, state, method, url, init = {}) {
  const res = await dpopFetch(keys, method, url, { ...init, accessToken: await accessToken(keys, state) });
  if (res.status !== 401 || (res.headers.get('www-authenticate') ?? '').includes('invalid_dpop_proof')) return res;
  await res.body?.cancel();
  await refreshTokens(keys, state);
  return dpopFetch(keys, method, url, { ...init, accessToken: state.tokens.access_token });
}

// ---------------------------------------------------------------------------------------------
// Policy, ingest
// ---------------------------------------------------------------------------------------------

/**
 * The effective policy of the project. The ETag of the last answer goes back as If-None-Match:
 * 304 says nothing changed, so reading often costs little.
 */
async function readPolicy(keys, state, why) {
  const url = `${options.url}/policy/v1?projectId=${encodeURIComponent(options.project)}`;
  const res = await deviceFetch(keys, state, 'GET', url, { headers: state.policyEtag ? { 'If-None-Match': state.policyEtag } : {} });
  if (res.status === 304) {
    say('policy', `unchanged (${why}): revision ${state.policyRevision}`);
    return;
  }
  if (res.status !== 200) throw new Error(`reading the policy: ${await describeRefusal(res)}`);
  const answer = await res.json();
  state.policyEtag = res.headers.get('etag');
  state.policyRevision = answer.revision;
  await saveState(state);
  // A real workbench applies answer.policy here (tools, models, network, …).
  say('policy', `revision ${answer.revision} (${why}; ${answer.published ? 'published by the organisation' : 'the defaults: nothing published yet'})`);
}

/**
 * One envelope (spec 2.15): which project and workspace, when it was sent, the cursors last
 * received, and the items since. Events carry the workbench's own increasing `seq`; the answer's
 * cursors say where the service stands, so the next upload starts after them.
 */
async function uploadIngest(keys, state) {
  const cursors = state.cursors ?? { events: -1 };
  const now = new Date().toISOString();
  const envelope = {
    schemaVersion: 1,
    projectId: options.project,
    workspaceId: options.workspace,
    sentAt: now,
    cursors,
    events: [{ seq: cursors.events + 1, id: randomUUID(), at: now, kind: 'session.started', data: { client: 'examples/workbench.mjs' } }],
    usage: [{ id: randomUUID(), at: now, provider: 'local', model: 'example-model', inputTokens: 120, outputTokens: 40, cachedTokens: 0, cost: 0 }],
  };
  const res = await deviceFetch(keys, state, 'POST', `${options.url}/ingest/v1`, json(envelope));
  if (res.status !== 200) throw new Error(`uploading: ${await describeRefusal(res)}`);
  const answer = await res.json();
  state.cursors = { events: answer.cursors.events, usage: answer.cursors.usage, audit: answer.cursors.audit };
  await saveState(state);
  const { events, usage, audit, tasks } = answer.accepted;
  say('ingest', `stored ${events} event(s), ${usage} usage item(s), ${audit} audit record(s), ${tasks} task(s); next event seq ${answer.cursors.events + 1}`);
}

// ---------------------------------------------------------------------------------------------
// The control channel
// ---------------------------------------------------------------------------------------------

/**
 * Holds GET /relay/v1/connect: the upgrade is authenticated like any device request (the proof's
 * `htu` is the http(s) form of the URL). `hello` and `policy.changed` read the policy again;
 * `cloudMcp.call` (a cloud agent's tool call) is refused here, since this example runs no tools.
 * Answers a promise that settles when the channel is closed for good.
 */
function holdChannel(keys, state, { once }) {
  const httpUrl = `${options.url}/relay/v1/connect`;
  const wsUrl = httpUrl.replace(/^http/, 'ws');
  let stopping = false;
  let socket;
  // Settles once the first `hello` was handled (the service sends it first on every socket).
  let helloHandled;
  const hello = new Promise((resolve) => (helloHandled = resolve));

  const connect = async (attempt = 1) => {
    const token = await accessToken(keys, state);
    const proof = await DPoP.generateProof(keys, httpUrl, 'GET', dpopNonce, token);
    socket = new WebSocket(wsUrl, { headers: { Authorization: `DPoP ${token}`, DPoP: proof } });
    return new Promise((resolve) => {
      socket.on('open', () => {
        say('channel', `connected to ${wsUrl}`);
        resolve(true);
      });
      socket.on('unexpected-response', (_request, response) => {
        say('channel', `refused: ${response.statusCode}`);
        resolve(false);
      });
      socket.on('error', () => undefined); // 'close' follows and says what to do
      socket.on('message', (data) => void onFrame(data.toString('utf8')));
      socket.on('close', async (code) => {
        if (stopping || once) return;
        // 4000: a newer connection of this device took over. 4001: the access token ended
        // (refresh first). 1001 (shutting down), 1006 (dropped): connect again, waiting longer each time.
        if (code === 4000) return say('channel', 'replaced by a newer connection of this device; stopping');
        if (code === 4001) await refreshTokens(keys, state).catch((error) => say('tokens', error.message));
        const wait = Math.min(1000 * 2 ** (attempt - 1), 30_000);
        say('channel', `closed (${code}); connecting again in ${wait / 1000} s`);
        await sleep(wait);
        if (!stopping) void connect(code === 4001 ? 1 : attempt + 1);
      });
    });
  };

  const onFrame = async (text) => {
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.method === 'hello' || frame.method === 'policy.changed') {
      say('channel', frame.method);
      await readPolicy(keys, state, frame.method).catch((error) => say('policy', error.message));
      if (frame.method === 'hello') helloHandled();
    } else if (frame.method === 'cloudMcp.call' && frame.id !== undefined) {
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: frame.id, error: { code: -32601, message: 'this example workbench runs no tools' } }));
    }
  };

  return {
    opened: connect(),
    hello,
    close: () => {
      stopping = true;
      socket?.close(1000);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

async function main() {
  const state = await loadState();
  const keys = await loadOrCreateKey(state);

  if (!state.tokens) {
    const answer = options.joinKey ? await enrolWithJoinKey(keys) : await enrolWithDeviceCode(keys);
    keepTokens(state, answer);
    await saveState(state);
    say('enrol', `${options.joinKey ? 'joined with the key' : 'approved'}; ${answer.token_type} tokens bound to this key, kept in ${options.state}`);
  } else {
    say('enrol', `already enrolled (tokens in ${options.state})`);
  }

  await readPolicy(keys, state, 'start');
  await uploadIngest(keys, state);
  await refreshTokens(keys, state);

  const channel = holdChannel(keys, state, { once: options.once });
  const opened = await channel.opened;
  // --once: take the service's `hello` (at most 5 s) before closing, as a running workbench would.
  if (options.once && opened) await Promise.race([channel.hello, sleep(5_000)]);
  if (options.once || !opened) {
    channel.close();
    say('done', opened ? 'all steps worked' : 'the control channel was refused');
    process.exitCode = opened ? 0 : 1;
  } else {
    say('channel', 'waiting for notifications (Ctrl-C stops)');
    for (const signal of ['SIGINT', 'SIGTERM']) {
      process.once(signal, () => {
        channel.close();
        say('done', 'stopped');
      });
    }
  }
}

// An expected failure (refused, denied, unreachable) is one line on stderr and exit code 1.
main().catch((error) => {
  console.error(`workbench: ${error.message}${error.cause?.code ? ` (${error.cause.code})` : ''}`);
  process.exitCode = 1;
});
