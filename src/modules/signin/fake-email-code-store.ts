import type { EmailCodeStore } from './email-codes.js';
import type { EmailCodeRecord, LinkTicketRecord } from './entities.js';

/**
 * The email-code rows in memory, for unit tests of the emailed-code rules (email-codes.ts): the
 * same answers as SignInStore's queries, with no database.
 */
export class FakeEmailCodeStore implements EmailCodeStore {
  readonly codes: EmailCodeRecord[] = [];
  readonly tickets: LinkTicketRecord[] = [];

  async insertEmailCode(code: EmailCodeRecord): Promise<void> {
    if (this.codes.some((row) => row.id === code.id)) throw new Error(`duplicate email code ${code.id}`);
    this.codes.push({ ...code });
  }

  async deleteEmailCode(id: string): Promise<void> {
    this.remove((row) => row.id === id);
  }

  async emailCodesSince(addressHash: string, since: Date): Promise<EmailCodeRecord[]> {
    return this.ordered()
      .filter((row) => row.addressHash === addressHash && row.createdAt.getTime() > since.getTime())
      .map((row) => ({ ...row }));
  }

  async emailCodesSentSince(since: Date): Promise<{ count: number; oldest: Date | undefined }> {
    const rows = this.ordered().filter((row) => row.createdAt.getTime() > since.getTime());
    return { count: rows.length, oldest: rows[0]?.createdAt };
  }

  async purgeEmailCodes(before: Date): Promise<void> {
    this.remove((row) => row.createdAt.getTime() < before.getTime());
  }

  async spendOtherEmailCodes(addressHash: string, keepId: string, at: Date): Promise<void> {
    for (const row of this.codes) if (row.addressHash === addressHash && row.spentAt === null && row.id !== keepId) row.spentAt = at;
  }

  async currentEmailCode(addressHash: string): Promise<EmailCodeRecord | null> {
    const current = this.ordered()
      .reverse()
      .find((row) => row.addressHash === addressHash && row.spentAt === null);
    return current ? { ...current } : null;
  }

  async countTry(id: string, maxTries: number): Promise<boolean> {
    const row = this.codes.find((code) => code.id === id && code.spentAt === null && code.tries < maxTries);
    if (!row) return false;
    row.tries += 1;
    return true;
  }

  async spendEmailCode(id: string, at: Date): Promise<boolean> {
    const row = this.codes.find((code) => code.id === id && code.spentAt === null);
    if (!row) return false;
    row.spentAt = at;
    return true;
  }

  async findTicket(id: string): Promise<LinkTicketRecord | null> {
    const ticket = this.tickets.find((row) => row.id === id);
    return ticket ? { ...ticket } : null;
  }

  /** Oldest first, as the store orders them (created, then id). */
  private ordered(): EmailCodeRecord[] {
    return [...this.codes].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  private remove(matches: (row: EmailCodeRecord) => boolean): void {
    for (let index = this.codes.length - 1; index >= 0; index--) if (matches(this.codes[index]!)) this.codes.splice(index, 1);
  }
}
