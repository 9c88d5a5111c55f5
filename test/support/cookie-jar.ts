/**
 * One browser's cookies, as far as the service's flows need them (the sign-in flow's binding, the
 * approval page's session): what answers set, sent back on the next requests. Two jars are two
 * browsers. Attributes are read only as far as a browser would drop a cookie: `Max-Age=0` (or a
 * past `Expires`) removes it.
 */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  /** Keeps what an answer sets: supertest's `set-cookie` array, or fetch's `getSetCookie()`. */
  store(setCookie: string | string[] | undefined): this {
    for (const line of typeof setCookie === 'string' ? [setCookie] : (setCookie ?? [])) {
      const [pair = '', ...attributes] = line.split(';');
      const index = pair.indexOf('=');
      if (index <= 0) continue;
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      const gone = attributes.some((attribute) => /^\s*max-age\s*=\s*0\s*$/i.test(attribute)) || value === '';
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return this;
  }

  /** Another browser holding the same cookies now (what it stores later is its own). */
  copy(): CookieJar {
    const copy = new CookieJar();
    for (const [name, value] of this.cookies) copy.cookies.set(name, value);
    return copy;
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** The `Cookie` header this browser sends (nothing when it holds none). */
  headers(): Record<string, string> {
    return this.cookies.size ? { Cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') } : {};
  }
}
