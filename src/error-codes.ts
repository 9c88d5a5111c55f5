/**
 * Every error code the API answers, with what it means. Routes name the codes they answer
 * (`errors` in their declaration, by status); the edge's own refusals are added to every route
 * they can reach (`errorCodesOf` in route.ts). A route may only name codes listed here, the
 * OpenAPI document lists them per operation and status, the table of docs/api/errors.md is checked against
 * this list, and the suite fails when a declared code is never answered by some test.
 */
export const ERROR_CODES = {
  invalid_request: 'The request did not match the schema (the `field` at fault is named), or cannot be read: a malformed or ambiguous `Host`, malformed percent-encoding in a path parameter, a body that is not valid JSON or is corrupt in its `Content-Encoding`.',
  json_too_complex: 'A JSON body nested deeper than `JSON_MAX_DEPTH`, holding more than `JSON_MAX_KEYS` keys and items, or a string longer than `JSON_MAX_STRING_LENGTH` (an operation may set limits of its own); `field`, `limit` and `max` say where and which.',
  invalid_grant: 'Token endpoints: the code, key or refresh token is wrong, used, expired or revoked (Cloud: also a code issued to another client or redirect URI, a wrong PKCE verifier, a refresh that does not name the session\'s client, or a link flow\'s code exchanged without the session that asked for the link).',
  invalid_code: 'Cloud sign-in: the emailed six-digit code is wrong, used up (five tries) or expired.',
  authorization_pending: 'Device token poll: the code is not approved yet.',
  slow_down: 'Device token poll: polled faster than `interval`; wait 5 seconds longer from now on. Emailed sign-in codes: too many for the address (five an hour, `AUTH_EMAIL_CODES_PER_DAY` a day), for the whole service this minute (`AUTH_EMAIL_CODES_PER_MINUTE`), or from the network address (`Retry-After`).',
  expired_token: 'Device token poll: the device code expired; ask for a new one.',
  access_denied: 'Device token poll: the request was denied, or the approver may no longer approve it.',
  unsupported_grant_type: 'Token endpoints: a `grant_type` this endpoint does not serve.',
  unsupported_schema_version: 'Ingest: an envelope `schemaVersion` other than 1.',
  invalid_dpop_proof: 'A DPoP proof is missing or not valid for the bound key (401 on resource requests, 400 at token endpoints).',
  use_dpop_nonce: 'The DPoP proof must carry the server nonce sent in the `DPoP-Nonce` header (only with `DPOP_REQUIRE_NONCE`).',
  unauthorized: 'No valid access token.',
  insufficient_scope: 'A device token without the scope this operation needs.',
  forbidden: "Signed in, but the caller's role does not allow this.",
  not_found: 'Not found, or not yours to see; also any path the API does not serve.',
  unknown_tenant: 'Self-hosted: no organisation is served at this host name.',
  method_not_allowed: 'The path exists, but not with this method; `Allow` lists the methods it serves.',
  conflict: 'A concurrent change won; try again.',
  already_linked: 'Cloud: the address or provider account being added already signs in to another account (nothing was added).',
  sole_owner: 'Cloud account deletion: the caller is the only owner of teams with other people (`organisations` lists them).',
  last_sign_in_method: 'Cloud: the only way to sign in to the account cannot be removed.',
  personal_organisation: 'Cloud teams: a personal organisation is one person\'s own: it is not renamed, invited into or left, and no role changes in it.',
  last_owner: 'A team (or a project) always keeps at least one owner: the demotion, removal or departure would leave none.',
  already_member: 'Cloud invitations: the address belongs to a member of the team already (inviting), or the accepter is a member already.',
  email_mismatch: 'Cloud invitations: none of the accepter\'s sign-in methods vouches for the address the invitation was sent to.',
  project_not_empty: 'Projects: the project holds pictures, cloud agent runs or ingested data; delete it with `force=true` to delete them with it.',
  confirm: 'Cloud account deletion: `confirm` is not the account\'s address (or `delete` for an account without one).',
  invalid_revision: 'Policy restore: the publish no longer validates (alone, or merged over the organisation\'s current policy).',
  picture_limit_reached: 'Pictures: the project already holds as many pictures as it may (200).',
  invalid_svg: 'Pictures: the SVG is not a well-formed SVG document (`where` names the line and column or element).',
  unsafe_svg: 'Pictures: the SVG breaks an SVG rule (script, event handler, outside reference…; `where` names the element or attribute).',
  svg_too_complex: 'Pictures: checking the SVG took longer than `SVG_CHECK_TIMEOUT_MS` (in `max`), and the check was abandoned.',
  workbench_required: 'Cloud agent runs: only a workbench registers runs; a node never does.',
  started_by_mismatch: "Cloud agent runs: `startedBy` is not the device's person.",
  cloud_agents_disabled: "Cloud agent runs: the project's effective policy does not allow them (`cloudAgents.allowed`).",
  max_concurrent_runs: 'Cloud agent runs: the person already has as many runs going as the policy allows (`cloudAgents.maxConcurrent`, in `max`).',
  task_text_not_allowed: 'Cloud agent run events: a field carrying task text (`task`, `prompt`, `text`, …); events never do (`field` names it).',
  run_ended: 'Cloud agent run events: the run has ended.',
  run_event_limit: 'Cloud agent run events: the run already keeps as many events as it may (1000, in `max`).',
  not_acceptable: "A run's MCP endpoint: `Accept` does not allow `application/json`, the only answer it gives.",
  upgrade_required: 'The control channel: the request is not a WebSocket upgrade (`Upgrade: websocket`).',
  precondition_failed: '`If-Match` (or `If-None-Match: *`) does not hold: the thing changed since; the answer\'s `ETag` is the current version.',
  precondition_required: 'A write must name the version its client saw: `If-Match: "<version>"` (pictures: or `If-None-Match: *` / `If-Match: "0"` for a new one; `If-Match: *` alone is not enough).',
  payload_too_large: 'The request body (or an ingest envelope\'s item count) is over its limit, or redacting an ingest envelope would take longer than `INGEST_REDACTION_BUDGET_MS`.',
  unsupported_media_type: 'The body is not of an accepted media type, charset (UTF-8) or `Content-Encoding` (gzip, deflate, br).',
  too_many_requests: 'Rate limited; `Retry-After` says when to try again.',
  unavailable: 'A dependency did not answer: the database (stopped, restarting, unreachable, out of connections, or its migrations not yet applied) or Redis (rate-limit counters, DPoP replay cache), or for pictures every SVG check thread is busy and `SVG_CHECK_QUEUE` checks already wait; the request was refused, never let through unchecked. `Retry-After: 1` (5 while migrations are pending); send it again (ingest items are deduplicated by id).',
  not_ready: 'Readiness: a dependency is not reachable.',
  internal_error: 'The service failed unexpectedly; no detail is given. Quote the `X-Request-Id`.',
  host_taken: 'The command line: the host name already serves another organisation.',
  ambiguous_person: 'The command line: several members of the organisation have the address given; name the person by id.',
} as const satisfies Record<string, string>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}
