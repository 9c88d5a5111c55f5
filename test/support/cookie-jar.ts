import request, { type Response, type Test } from 'supertest';

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

  /** Every cookie's value (secrets a test proves never reach a log). */
  values(): string[] {
    return [...this.cookies.values()];
  }

  /** The `Cookie` header this browser sends (nothing when it holds none). */
  headers(): Record<string, string> {
    return this.cookies.size ? { Cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') } : {};
  }
}

/**
 * A browser on the server-rendered pages of the in-process app (supertest): every answer's cookies
 * kept in its jar and sent on its next request. `host` is the organisation it visits (self-hosted
 * tenancy by host); none on Cloud. Headers are sent as given: the caller adds `Origin` where a
 * browser would.
 */
export class PageBrowser {
  constructor(
    private readonly app: Parameters<typeof request>[0],
    readonly host?: string,
    readonly cookies = new CookieJar(),
  ) {}

  /** Another browser holding this one's cookies now, at `host`. */
  copy(host = this.host): PageBrowser {
    return new PageBrowser(this.app, host, this.cookies.copy());
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.keep(await this.prepare(request(this.app).get(path)).set(headers));
  }

  /** A form post (`application/x-www-form-urlencoded`), as the pages' forms send. */
  async post(path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    return this.keep(await this.prepare(request(this.app).post(path)).type('form').set(headers).send(form));
  }

  private prepare(test: Test): Test {
    if (this.host) test.set('Host', this.host);
    return test.set(this.cookies.headers());
  }

  private keep(res: Response): Response {
    this.cookies.store(res.headers['set-cookie']);
    return res;
  }
}
