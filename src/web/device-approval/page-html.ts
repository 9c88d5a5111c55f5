import { createHash } from 'node:crypto';
import type { PendingDevice } from '../../modules/devices/device-code.js';

/**
 * HTML of the approval page. Every value is escaped where it is put into the page (`html`
 * escapes each interpolation unless it is already `Html`); nothing is ever put into a script,
 * a style or a URL attribute. The one stylesheet is inline and allowed by its hash, so the
 * Content-Security-Policy needs neither `'unsafe-inline'` nor a second request.
 */

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (char) => ESCAPES[char] as string);
}

type Value = Html | string | number | undefined | null | false | readonly Value[];

function render(value: Value): string {
  if (value === undefined || value === null || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

const STYLE = `
:root { color-scheme: light dark; --accent: #1f5fbf; --muted: #666; --line: #d0d4da; --bad: #a02020; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; padding: 2rem 1rem; }
main { max-width: 34rem; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
p { margin: 0 0 1rem; }
.code { font: 600 1.75rem/1.2 ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .1em; margin: 0 0 1rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: 0 0 1.5rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
form { margin: 0 0 1rem; }
.actions { display: flex; gap: .75rem; flex-wrap: wrap; }
.actions form { margin: 0; }
label { display: block; margin: 0 0 .35rem; }
input[type=email], select { font: inherit; padding: .5rem .6rem; border: 1px solid var(--line); border-radius: 6px; min-width: 16rem; }
input[type=text] { font: 600 1.25rem ui-monospace, Menlo, monospace; letter-spacing: .08em; padding: .5rem .6rem; width: 12ch; text-transform: uppercase; border: 1px solid var(--line); border-radius: 6px; }
button { font: inherit; padding: .55rem 1.2rem; border-radius: 6px; border: 1px solid var(--line); background: transparent; color: inherit; cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.danger { border-color: var(--bad); color: var(--bad); }
.note { color: var(--muted); font-size: .9rem; }
.error { color: var(--bad); }
footer { margin-top: 2rem; padding-top: 1rem; border-top: 1px solid var(--line); display: flex; gap: 1rem; align-items: center; justify-content: space-between; }
footer form { margin: 0; }
`;

/** The CSP source of the inline stylesheet. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE, 'utf8').digest('base64')}'`;

/**
 * The page's policy: nothing loads but the hashed stylesheet; forms post only to this origin
 * (and, on a page that starts sign-in, to the provider the answer redirects to: browsers apply
 * `form-action` to the redirects that follow a form submission); no framing; no `<base>`.
 */
export function contentSecurityPolicy(formTargets: readonly string[] = []): string {
  return [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    `form-action 'self'${formTargets.map((origin) => ` ${origin}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export interface Layout {
  title: string;
  body: Html;
  /** Who is signed in, with the form that signs them out. */
  signedIn?: { name: string; csrf: string } | undefined;
}

export function page({ title, body, signedIn }: Layout): string {
  const footer = signedIn
    ? html`<footer><span class="note">Signed in as ${signedIn.name}</span>
<form method="post" action="/device/sign-out"><input type="hidden" name="csrf" value="${signedIn.csrf}"><button type="submit">Sign out</button></form></footer>`
    : undefined;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style>${new Html(STYLE)}</style>
</head>
<body>
<main>
${body}
${footer}
</main>
</body>
</html>
`.text;
}

// The pages -----------------------------------------------------------------------------------

const CODE_HINT = 'Eight letters, as shown on the device, for example BCDF-GHJK.';

export function entryPage(options: { error?: string | undefined; value?: string | undefined; signedIn?: Layout['signedIn'] }): string {
  return page({
    title: 'Connect a device',
    signedIn: options.signedIn,
    body: html`<h1>Connect a device</h1>
<p>Enter the code your device shows.</p>
<form method="get" action="/device">
<label for="user_code">Code</label>
${options.error ? html`<p class="error" id="code-error">${options.error}</p>` : undefined}
<p><input type="text" id="user_code" name="user_code" value="${options.value ?? ''}" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="20" required${options.error ? new Html(' aria-describedby="code-error"') : undefined}></p>
<p class="note">${CODE_HINT}</p>
<p><button type="submit" class="primary">Continue</button></p>
</form>`,
  });
}

export function signInPage(options: { userCode: string | undefined; organisationName: string }): string {
  return page({
    title: 'Sign in to connect a device',
    body: html`<h1>Sign in to connect a device</h1>
${options.userCode ? html`<p>A device showing this code is asking to join ${options.organisationName}:</p><p class="code">${options.userCode}</p>` : undefined}
<p>Sign in with your ${options.organisationName} account to see what is asking and to approve or deny it.</p>
<form method="post" action="/device/sign-in">
${options.userCode ? html`<input type="hidden" name="user_code" value="${options.userCode}">` : undefined}
<button type="submit" class="primary">Sign in</button>
</form>`,
  });
}

/** Cloud: sign in with any enabled provider, or have a code mailed. */
export function cloudSignInPage(options: { userCode: string | undefined; providers: readonly { id: string; label: string }[]; error?: string | undefined }): string {
  const hidden = options.userCode ? html`<input type="hidden" name="user_code" value="${options.userCode}">` : undefined;
  const buttons = options.providers
    .filter((provider) => provider.id !== 'email')
    .map(
      (provider) =>
        html`<form method="post" action="/device/sign-in">${hidden}<input type="hidden" name="provider" value="${provider.id}"><button type="submit" class="primary">Continue with ${provider.label}</button></form>`,
    );
  return page({
    title: 'Sign in to connect a device',
    body: html`<h1>Sign in to connect a device</h1>
${options.userCode ? html`<p>A device showing this code is asking to join one of your organisations:</p><p class="code">${options.userCode}</p>` : undefined}
<p>Sign in to see what is asking and to approve or deny it.</p>
${options.error ? html`<p class="error" id="email-error">${options.error}</p>` : undefined}
<div class="actions">${buttons}</div>
<form method="post" action="/device/sign-in">${hidden}<input type="hidden" name="provider" value="email">
<label for="email">Or get a code by email</label>
<p><input type="email" id="email" name="email" autocomplete="email" maxlength="320" required></p>
<p><button type="submit">Email me a code</button></p>
</form>`,
  });
}

/** Cloud: type the six digits the mail carries. */
export function emailCodePage(options: { email: string; error?: string | undefined }): string {
  return page({
    title: 'Enter your code',
    body: html`<h1>Enter your code</h1>
<p>We sent a six-digit code to <strong>${options.email}</strong>. It works for 10 minutes.</p>
${options.error ? html`<p class="error" id="code-error">${options.error}</p>` : undefined}
<form method="post" action="/device/email-code">
<label for="code">Code</label>
<p><input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="10" required></p>
<p><button type="submit" class="primary">Sign in</button></p>
</form>
<p><a href="/device">Start again</a></p>`,
  });
}

const KIND_LABELS: Record<string, string> = { workbench: 'Workbench', node: 'Node (headless machine)' };

export function devicePage(
  device: PendingDevice,
  options: { csrf: string; signedIn: NonNullable<Layout['signedIn']>; organisationName: string; choices?: readonly { id: string; name: string }[] | undefined },
): string {
  const hidden = html`<input type="hidden" name="csrf" value="${options.csrf}"><input type="hidden" name="user_code" value="${device.userCode}">`;
  // Cloud: the organisation the device joins, among those where the person may approve it.
  const chooser = options.choices
    ? html`<label for="organisation">Organisation</label>
<p><select id="organisation" name="organisation">${options.choices.map((choice) => html`<option value="${choice.id}">${choice.name}</option>`)}</select></p>`
    : undefined;
  return page({
    title: 'Approve this device?',
    signedIn: options.signedIn,
    body: html`<h1>Approve this device?</h1>
<p>Only approve it if you asked for it just now and the device shows this code:</p>
<p class="code">${device.userCode}</p>
<dl>
<dt>Device name (as given by the device)</dt><dd id="device-name">${device.name}</dd>
<dt>Kind</dt><dd>${KIND_LABELS[device.kind] ?? device.kind}</dd>
<dt>Workspace (as given by the device)</dt><dd>${device.workspaceId}</dd>
<dt>Asked from</dt><dd>${device.requesterAddress ?? 'not known'}</dd>
<dt>Software (as given by the device)</dt><dd>${device.requesterUserAgent ?? 'not known'}</dd>
<dt>Key-bound</dt><dd>${device.keyBound ? 'Yes: its tokens only work with a key the device holds (DPoP)' : 'No: its tokens work for whoever holds them'}</dd>
<dt>Asked at</dt><dd><time datetime="${device.requestedAt.toISOString()}">${device.requestedAt.toISOString()}</time></dd>
<dt>Code expires</dt><dd><time datetime="${device.expiresAt.toISOString()}">${device.expiresAt.toISOString()}</time></dd>
</dl>
<p>Approving lets this device act in ${options.organisationName} on your behalf.</p>
<div class="actions">
<form method="post" action="/device/decision">${hidden}${chooser}<input type="hidden" name="decision" value="approve"><button type="submit" class="primary">Approve</button></form>
<form method="post" action="/device/decision">${hidden}<input type="hidden" name="decision" value="deny"><button type="submit" class="danger">Deny</button></form>
</div>`,
  });
}

export function decidedPage(device: PendingDevice, decision: 'approve' | 'deny', signedIn: NonNullable<Layout['signedIn']>): string {
  const approved = decision === 'approve';
  return page({
    title: approved ? 'Device approved' : 'Device denied',
    signedIn,
    body: html`<h1>${approved ? 'Device approved' : 'Device denied'}</h1>
<p>${approved ? html`<strong>${device.name}</strong> will be connected in a few seconds. You can close this page.` : html`<strong>${device.name}</strong> will not be connected. You can close this page.`}</p>
<p><a href="/device">Connect another device</a></p>`,
  });
}

/** A page that explains why nothing more can happen here; no detail beyond `message`. */
export function messagePage(options: { title: string; message: string; next?: 'enter-code' | 'start-again' | undefined; requestId?: string | undefined; signedIn?: Layout['signedIn'] }): string {
  const next =
    options.next === 'enter-code'
      ? html`<p><a href="/device">Enter a code</a></p>`
      : options.next === 'start-again'
        ? html`<p><a href="/device">Start again</a></p>`
        : undefined;
  return page({
    title: options.title,
    signedIn: options.signedIn,
    body: html`<h1>${options.title}</h1>
<p>${options.message}</p>
${next}
${options.requestId ? html`<p class="note">Reference: ${options.requestId}</p>` : undefined}`,
  });
}
