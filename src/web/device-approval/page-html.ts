import type { CodeOutcome, PendingDevice } from '../../modules/devices/device-code.js';
import { PAGE_NOTICES, fieldError, type PageNotice } from './notices.js';
import type { PageLook } from './look.js';
import { exactTime, relativeTime } from './times.js';

/**
 * HTML of the approval page. Every value is escaped where it is put into the page (`html`
 * escapes each interpolation unless it is already `Html`); nothing is ever put into a script or
 * a style, and the only URL attribute with a configured value is the logo's (checked at start).
 * The one stylesheet is inline and allowed by its hash (src/web/device-approval/look.ts), so the
 * Content-Security-Policy needs neither `'unsafe-inline'` nor a second request.
 *
 * Each step has one field, focused when the page opens; a field at fault is marked
 * `aria-invalid`, described by its message (`aria-describedby`) and focused instead.
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


export interface Layout {
  title: string;
  body: Html;
  /** Who is signed in, with the form that signs them out. */
  signedIn?: { name: string; csrf: string } | undefined;
}

type SignedIn = NonNullable<Layout['signedIn']>;

const CODE_HINT = 'Eight letters, as shown on the device, for example BCDF-GHJK.';

const KIND_LABELS: Record<string, string> = { workbench: 'Workbench', node: 'Node (headless machine)' };

/** Attributes of a field: focused when the page opens, or marked and described when at fault. */
function fieldAttributes(id: string, error: string | undefined, focus: boolean): Html {
  if (error) return new Html(` aria-invalid="true" aria-describedby="${id}-error" autofocus`);
  return new Html(focus ? ' autofocus' : '');
}

function errorFor(id: string, error: string | undefined): Html | undefined {
  return error ? html`<p class="error" id="${id}-error">${error}</p>` : undefined;
}

/** A notice that concerns no field: said at the top, as a status. */
function statusNotice(notice: PageNotice | undefined): Html | undefined {
  if (!notice || PAGE_NOTICES[notice].field !== undefined) return undefined;
  return html`<p class="notice" role="status">${PAGE_NOTICES[notice].message}</p>`;
}

/** The approval page's views, in the operator's look. */
export function pageHtml(look: PageLook) {
  function page({ title, body, signedIn }: Layout): string {
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
<title>${title} · ${look.productName}</title>
<style>${new Html(look.style)}</style>
</head>
<body>
<header>${look.logoUrl ? html`<img src="${look.logoUrl}" alt="">` : undefined}<span class="product">${look.productName}</span></header>
<main>
${body}
${footer}
</main>
</body>
</html>
`.text;
  }

  function entryPage(options: { error?: string | undefined; value?: string | undefined; signedIn?: Layout['signedIn']; notice?: PageNotice | undefined }): string {
    return page({
      title: 'Connect a device',
      signedIn: options.signedIn,
      body: html`<h1>Connect a device</h1>
${statusNotice(options.notice)}
<p>Enter the code your device shows.</p>
<form method="get" action="/device">
<label for="user_code">Code</label>
${errorFor('user_code', options.error)}
<p><input type="text" class="code-field" id="user_code" name="user_code" value="${options.value ?? ''}" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="20" required autofocus${options.error ? new Html(' aria-invalid="true" aria-describedby="user_code-error user_code-hint"') : new Html(' aria-describedby="user_code-hint"')}></p>
<p class="note" id="user_code-hint">${CODE_HINT}</p>
<p><button type="submit" class="primary">Continue</button></p>
</form>`,
    });
  }

  function signInPage(options: { userCode: string | undefined; organisationName: string; notice?: PageNotice | undefined }): string {
    return page({
      title: 'Sign in to connect a device',
      body: html`<h1>Sign in to connect a device</h1>
${statusNotice(options.notice)}
${options.userCode ? html`<p>A device showing this code is asking to join ${options.organisationName}:</p><p class="code">${options.userCode}</p>` : undefined}
<p>Sign in with your ${options.organisationName} account to see what is asking and to approve or deny it.</p>
<form method="post" action="/device/sign-in">
${options.userCode ? html`<input type="hidden" name="user_code" value="${options.userCode}">` : undefined}
<button type="submit" class="primary" autofocus>Sign in</button>
</form>`,
    });
  }

  /** Cloud: sign in with any enabled provider, or have a code mailed. */
  function cloudSignInPage(options: { userCode: string | undefined; providers: readonly { id: string; label: string }[]; notice?: PageNotice | undefined }): string {
    const hidden = options.userCode ? html`<input type="hidden" name="user_code" value="${options.userCode}">` : undefined;
    const others = options.providers.filter((provider) => provider.id !== 'email');
    const email = options.providers.some((provider) => provider.id === 'email');
    const buttons = others.map(
      (provider) =>
        html`<form method="post" action="/device/sign-in">${hidden}<input type="hidden" name="provider" value="${provider.id}"><button type="submit" class="primary">Continue with ${provider.label}</button></form>`,
    );
    const emailError = fieldError(options.notice, 'email');
    // Email alone: its button is the page's primary action, not an afterthought.
    const emailForm = email
      ? html`<form method="post" action="/device/sign-in">${hidden}<input type="hidden" name="provider" value="email">
<label for="email">${others.length > 0 ? 'Or get a sign-in code by email' : 'Your email address'}</label>
${errorFor('email', emailError)}
<p><input type="email" id="email" name="email" autocomplete="email" maxlength="320" required${fieldAttributes('email', emailError, true)}></p>
<p><button type="submit"${others.length > 0 ? undefined : new Html(' class="primary"')}>Email me a code</button></p>
</form>`
      : undefined;
    return page({
      title: 'Sign in to connect a device',
      body: html`<h1>Sign in to connect a device</h1>
${statusNotice(options.notice)}
${options.userCode ? html`<p>A device showing this code is asking to join one of your organisations:</p><p class="code">${options.userCode}</p>` : undefined}
<p>Sign in to see what is asking and to approve or deny it.</p>
${others.length > 0 ? html`<div class="actions">${buttons}</div>` : undefined}
${emailForm}`,
    });
  }

  /** Cloud: type the six digits the mail carries. */
  function emailCodePage(options: { email: string; notice?: PageNotice | undefined; startAgain: string }): string {
    const error = fieldError(options.notice, 'code');
    return page({
      title: 'Enter your code',
      body: html`<h1>Enter your code</h1>
<p>We sent a six-digit code to <strong>${options.email}</strong>. It works for 10 minutes.</p>
<form method="post" action="/device/email-code">
<label for="code">Code from the email</label>
${errorFor('code', error)}
<p><input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="10" required${fieldAttributes('code', error, true)}></p>
<p><button type="submit" class="primary">Sign in</button></p>
</form>
<p><a href="${options.startAgain}">Start again</a></p>`,
    });
  }

  function devicePage(
    device: PendingDevice,
    options: {
      csrf: string;
      signedIn: SignedIn;
      organisationName: string;
      now: Date;
      /** The request came from another network than the person's: say so, and ask for the confirmation. */
      otherNetwork: boolean;
      choices?: readonly { id: string; name: string }[] | undefined;
      notice?: PageNotice | undefined;
    },
  ): string {
    const organisationError = fieldError(options.notice, 'organisation');
    const confirmError = fieldError(options.notice, 'confirm_own_device');
    // Cloud: the organisation the device joins, among those where the person may approve it.
    const chooser = options.choices
      ? html`<label for="organisation">Organisation the device joins</label>
${errorFor('organisation', organisationError)}
<p><select id="organisation" name="organisation"${fieldAttributes('organisation', organisationError, false)}>${options.choices.map((choice) => html`<option value="${choice.id}">${choice.name}</option>`)}</select></p>`
      : undefined;
    const warning = options.otherNetwork
      ? html`<div class="warning" id="other-network">
<p><strong>This request comes from another network than yours.</strong> The device asked from ${device.requesterAddress ?? 'an address that was not recorded'}; you are on another network.</p>
<p>Someone may have sent you this code to get their own machine into your organisation. Approve only if you started this on your own device just now.</p>
</div>`
      : undefined;
    const confirm = options.otherNetwork
      ? html`${errorFor('confirm_own_device', confirmError)}<p class="confirm"><input type="checkbox" id="confirm_own_device" name="confirm_own_device" value="yes"${fieldAttributes('confirm_own_device', confirmError, false)}><label for="confirm_own_device">I started this on my own device just now</label></p>`
      : undefined;
    const given = html`<span class="given">as given by the device</span>`;
    return page({
      title: 'Approve this device?',
      signedIn: options.signedIn,
      body: html`<h1>Approve this device?</h1>
<p>Only approve it if you asked for it just now and the device shows this code:</p>
<p class="code">${device.userCode}</p>
<dl>
<dt>Device name ${given}</dt><dd id="device-name">${device.name}</dd>
<dt>Kind</dt><dd>${KIND_LABELS[device.kind] ?? device.kind}</dd>
<dt>Workspace ${given}</dt><dd id="device-workspace">${device.workspaceId}</dd>
<dt>Asked from</dt><dd id="device-address">${device.requesterAddress ?? 'not known'}</dd>
<dt>Software ${given}</dt><dd>${device.requesterUserAgent ?? 'not known'}</dd>
<dt>Tied to the device</dt><dd>${device.keyBound ? 'Yes: its access works only on this device, even if copied elsewhere' : 'No: anyone who copies its access can use it from another machine'}</dd>
<dt>Asked</dt><dd><time datetime="${device.requestedAt.toISOString()}" title="${exactTime(device.requestedAt)}">${relativeTime(device.requestedAt.getTime() > options.now.getTime() ? options.now : device.requestedAt, options.now)}</time></dd>
<dt>Code expires</dt><dd><time datetime="${device.expiresAt.toISOString()}" title="${exactTime(device.expiresAt)}">${relativeTime(device.expiresAt, options.now)}</time></dd>
</dl>
${warning}
<p>Approving lets this device act in ${options.organisationName} on your behalf.</p>
<form method="post" action="/device/decision">
<input type="hidden" name="csrf" value="${options.csrf}"><input type="hidden" name="user_code" value="${device.userCode}">
${chooser}
${confirm}
<div class="actions">
<button type="submit" name="decision" value="approve" class="primary">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</div>
</form>`,
    });
  }

  /** What became of a code: decided here (by this person or another), expired, or unknown. */
  function outcomePage(outcome: CodeOutcome, signedIn: SignedIn): { status: number; body: string } {
    const another = html`<p><a href="/device?another=1">Connect another device</a></p>`;
    if (outcome.state === 'approved' || outcome.state === 'denied') {
      const approved = outcome.state === 'approved';
      if (outcome.byYou) {
        const title = approved ? 'Device approved' : 'Device denied';
        return {
          status: 200,
          body: page({
            title,
            signedIn,
            body: html`<div class="outcome ${approved ? 'approved' : 'denied'}"><span class="icon" aria-hidden="true">${approved ? '✓' : '✕'}</span><h1>${title}</h1></div>
<p>${approved ? html`You approved <strong>${outcome.name}</strong>. It will be connected in a few seconds. You can close this page.` : html`You denied <strong>${outcome.name}</strong>. It will not be connected. You can close this page.`}</p>
${another}`,
          }),
        };
      }
      const title = approved ? 'Already approved' : 'Already denied';
      return {
        status: 409,
        body: page({
          title,
          signedIn,
          body: html`<h1>${title}</h1>
<p>${approved ? 'Another person of your organisation approved this request. Nothing more is needed here.' : 'This request was denied by another person or an administrator. If it was yours, ask the device for a new code.'}</p>
${another}`,
        }),
      };
    }
    if (outcome.state === 'expired') {
      return {
        status: 410,
        body: page({
          title: 'This code has expired',
          signedIn,
          body: html`<h1>This code has expired</h1>
<p>Codes work for a few minutes only. Ask the device for a new code, then enter it here.</p>
${another}`,
        }),
      };
    }
    return {
      status: 404,
      body: page({
        title: 'No request has this code',
        signedIn,
        body: html`<h1>No request has this code</h1>
<p>Check the code on the device: it has eight letters, like BCDF-GHJK. If the device shows another code now, enter that one.</p>
${another}`,
      }),
    };
  }

  /** A page that explains why nothing more can happen here; no detail beyond `message`. */
  function messagePage(options: { title: string; message: string; next?: 'enter-code' | 'start-again' | undefined; requestId?: string | undefined; signedIn?: Layout['signedIn'] }): string {
    const next =
      options.next === 'enter-code'
        ? html`<p><a href="/device?another=1">Enter a code</a></p>`
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

  return { entryPage, signInPage, cloudSignInPage, emailCodePage, devicePage, outcomePage, messagePage, contentSecurityPolicy: look.contentSecurityPolicy };
}

export type PageHtml = ReturnType<typeof pageHtml>;
