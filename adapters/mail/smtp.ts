import nodemailer, { type Transporter } from 'nodemailer';
import { COMMON_HEADERS, type Mailer, type OutgoingMail } from '../../src/mail/mailer.js';

/** Mails through an SMTP server (`SMTP_URL`, `smtp://` or `smtps://`, credentials in the URL). */
export class SmtpMailer implements Mailer {
  readonly description = 'smtp';
  private readonly transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
  ) {
    this.transport = nodemailer.createTransport(smtpUrl);
  }

  async send(mail: OutgoingMail): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text, headers: COMMON_HEADERS });
  }
}
