/**
 * What a page shows once after a form was posted (post, redirect, get): the post stores the
 * notice in the page session (or, without one, names it in the address: a word, never a value),
 * and the page it redirects to shows it. Each says what happened and, where a field is at fault,
 * which one (the field is marked invalid and described by the message).
 */
export const PAGE_NOTICES = {
  'confirm-own-device': {
    field: 'confirm_own_device',
    message: 'Nothing was approved. This request comes from another network than yours: tick "I started this on my own device just now" to approve it, or deny it.',
  },
  'choose-organisation': { field: 'organisation', message: 'Nothing was approved. Choose one of your organisations for the device.' },
  'wrong-email-code': { field: 'code', message: 'That code is wrong or has expired. Try again, or start again for a new code.' },
  'bad-email': { field: 'email', message: 'That is not an email address. Nothing was sent.' },
  'signed-out': { field: undefined, message: 'You are signed out.' },
  'session-ended': { field: undefined, message: 'Your session ended, so nothing was decided. Sign in again to continue with this code.' },
} as const satisfies Record<string, { field: string | undefined; message: string }>;

export type PageNotice = keyof typeof PAGE_NOTICES;

export function isPageNotice(value: unknown): value is PageNotice {
  return typeof value === 'string' && Object.hasOwn(PAGE_NOTICES, value);
}

/** The notice's message when it concerns `field`. */
export function fieldError(notice: PageNotice | undefined, field: string): string | undefined {
  if (!notice) return undefined;
  const entry = PAGE_NOTICES[notice];
  return entry.field === field ? entry.message : undefined;
}
