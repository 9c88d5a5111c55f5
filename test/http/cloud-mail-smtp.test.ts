import { readdir } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SMTPServer } from 'smtp-server';
import { CONSOLE_REDIRECT, parseMail, pkce, startCloud, type CloudPlatform, type Mail } from '../support/cloud.js';
import { call } from '../support/platform.js';

/**
 * With `SMTP_URL` the mails go to an SMTP server (nodemailer): here an `smtp-server` sink on
 * loopback that keeps what it is given. The outbox stays empty.
 */

let platform: CloudPlatform;
let sink: SMTPServer;
const received: { envelopeTo: string[]; mail: Mail }[] = [];

beforeAll(async () => {
  sink = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    // close() waits this long for connections still open (the last mail's, when the client has
    // not quit yet) before ending them; its default of 30 s is the test's whole timeout.
    closeTimeout: 200,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        void parseMail(Buffer.concat(chunks)).then((mail) => {
          received.push({ envelopeTo: session.envelope.rcptTo.map((rcpt) => rcpt.address), mail });
          callback();
        });
      });
    },
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const port = (sink.server.address() as AddressInfo).port;
  platform = await startCloud({ env: { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Platform sign-in <auth@platform.test>' } });
});

afterAll(async () => {
  await platform?.close();
  await new Promise<void>((resolve) => (sink ? sink.close(() => resolve()) : resolve()));
});

const start = async (email: string) =>
  call(platform, 'post', '/auth/v1/email/start', { body: { email, client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: (await pkce()).challenge } });

describe('mail over SMTP', () => {
  it('sends the code to the SMTP server, from MAIL_FROM, with a plain-text part; nothing goes to the outbox', async () => {
    expect((await start('smtp@example.test')).status).toBe(202);
    expect(received).toHaveLength(1);
    const [{ envelopeTo, mail }] = received as [{ envelopeTo: string[]; mail: Mail }];
    expect(envelopeTo).toEqual(['smtp@example.test']);
    expect(mail.from).toContain('auth@platform.test');
    expect(mail.digits).toMatch(/^\d{6}$/);
    expect(mail.text).toContain('Your code to sign in to Platform:');
    const verified = await call(platform, 'post', '/auth/v1/email/verify', { body: { email: 'smtp@example.test', code: mail.digits } });
    expect(verified.status).toBe(200);
    expect(await readdir(platform.outbox)).toEqual([]);
  });

  it('answers 202 all the same when the SMTP server is away, and logs the failure without the address or the code', async () => {
    // A port nothing listens on: the connection is refused at once (closing the sink instead
    // would wait on the client's last connection, which made this test slow and flaky).
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const closedPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const away = await startCloud({ env: { SMTP_URL: `smtp://127.0.0.1:${closedPort}`, MAIL_FROM: 'Platform sign-in <auth@platform.test>' } });
    try {
      const res = await call(away, 'post', '/auth/v1/email/start', {
        body: { email: 'unlucky@example.test', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: (await pkce()).challenge },
      });
      expect(res.status).toBe(202);
      const failure = away.logs.find((line) => line.msg === 'a sign-in code could not be mailed');
      expect(failure).toBeDefined();
      expect(JSON.stringify(failure)).not.toContain('unlucky@example.test');
    } finally {
      await away.close();
    }
  });
});
