import { randomBytes } from 'node:crypto';

/** Type prefixes of the service's ids; a prefix says what an id names wherever it shows up. */
export type IdPrefix = 'org' | 'usr' | 'prj' | 'dev' | 'run' | 'inv' | 'idn' | 'tok' | 'dca' | 'jk' | 'pol' | 'ver' | 'sim' | 'ses' | 'sgc' | 'emc' | 'lnk' | 'sk';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** A prefixed random id: 16 characters of base 36 (about 82 bits), e.g. `org_3k9x…`. */
export function newId(prefix: IdPrefix): string {
  const bytes = randomBytes(16);
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % 36];
  return `${prefix}_${out}`;
}
