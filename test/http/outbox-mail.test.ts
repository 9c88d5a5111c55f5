import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { OutboxMailer } from '../../adapters/mail/outbox.js';
import { createLogger } from '../../src/logger.js';
import { ManualClock } from '../../src/util/clock.js';

/**
 * The development outbox (MAIL_OUTBOX_DIR): a person trying the service reads their sign-in code
 * from a file, so each mail written says which file in one `info` line, and nothing more of it.
 */
const dir = await mkdtemp(join(tmpdir(), 'outbox-log-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('the outbox mailer', () => {
  it('leaves one info line per mail naming its file, never the address, subject or text', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const outbox = join(dir, 'outbox');
    const mailer = new OutboxMailer(outbox, 'Platform <no-reply@platform.test>', new ManualClock(), logger);
    await mailer.send({ kind: 'sign_in_code', to: 'secret.person@example.test', subject: '123456 is your code', text: 'Your code: 123456' });

    const files = await readdir(outbox);
    expect(files).toHaveLength(1);
    expect(lines).toEqual([expect.objectContaining({ level: 30, kind: 'sign_in_code', file: join(outbox, files[0]!), msg: 'mail written to the outbox' })]);
    const text = JSON.stringify(lines);
    for (const secret of ['secret.person', '123456']) expect(text).not.toContain(secret);
  });
});
