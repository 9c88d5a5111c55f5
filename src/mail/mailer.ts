/**
 * Sends the service's mails: sign-in codes now, team invitations later. One small interface with
 * two implementations: SMTP (adapters/mail/smtp.ts, nodemailer) when `SMTP_URL` is set, otherwise
 * an outbox folder of RFC 5322 `.eml` files (adapters/mail/outbox.ts), so a development start
 * needs no mail server and a person can read their code there.
 *
 * A mail always has a plain-text part; nothing in it is HTML. Callers write the words; the
 * adapter adds the sender (`MAIL_FROM`) and the headers every mail gets.
 */
/** What a mail is, for the count of mails sent (`platform_mails_sent_total{kind}`). */
export type MailKind = 'sign_in_code' | 'invitation';
export const MAIL_KINDS: readonly MailKind[] = ['sign_in_code', 'invitation'];

export interface OutgoingMail {
  kind: MailKind;
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Where mails go, for the start-up log line (`smtp` or the outbox folder). */
  readonly description: string;
  send(mail: OutgoingMail): Promise<void>;
}

/** A mailer that tells `sent` of each mail it delivered (a failed send is not counted). */
export function countingMailer(mailer: Mailer, sent: (kind: MailKind) => void): Mailer {
  return {
    description: mailer.description,
    send: async (mail) => {
      await mailer.send(mail);
      sent(mail.kind);
    },
  };
}

/** Headers of every mail: it is machine-sent (RFC 3834), so auto-responders stay quiet. */
export const COMMON_HEADERS = { 'Auto-Submitted': 'auto-generated', 'X-Auto-Response-Suppress': 'All' } as const;
