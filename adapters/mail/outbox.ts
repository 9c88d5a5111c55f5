import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import type { Clock } from '../../src/util/clock.js';
import { COMMON_HEADERS, type Mailer, type OutgoingMail } from '../../src/mail/mailer.js';

/**
 * Development mail: each mail becomes an RFC 5322 message (built by nodemailer's stream
 * transport, CRLF line ends) in its own `.eml` file of the outbox folder (`MAIL_OUTBOX_DIR`),
 * readable by the owner only. File names sort by time: `<UTC time>-<sequence>-<random>.eml`.
 * Each mail written leaves one `info` line with its file name (never its address or text), so a
 * person trying the service knows where their code is: `{"kind":"sign_in_code","file":"…/x.eml",
 * "msg":"mail written to the outbox"}`.
 */
export class OutboxMailer implements Mailer {
  private readonly transport: Transporter;
  /** Orders the mails of one instant as they were sent. */
  private sequence = 0;

  constructor(
    private readonly directory: string,
    private readonly from: string,
    private readonly clock: Clock,
    private readonly logger?: Logger,
  ) {
    this.transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  }

  get description(): string {
    return `outbox ${this.directory}`;
  }

  async send(mail: OutgoingMail): Promise<void> {
    const info = (await this.transport.sendMail({
      from: this.from,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      date: this.clock.now(),
      headers: COMMON_HEADERS,
    })) as { message: Buffer };
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    this.sequence += 1;
    const name = `${this.clock.now().toISOString().replace(/[:.]/g, '-')}-${String(this.sequence).padStart(6, '0')}-${randomBytes(4).toString('hex')}.eml`;
    const file = join(this.directory, name);
    await writeFile(file, info.message, { mode: 0o600, flag: 'wx' });
    this.logger?.info({ kind: mail.kind, file }, 'mail written to the outbox');
  }
}
