import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/**
 * Headless Chromium for the browser suite (Debian's `chromium` package; playwright-core drives
 * it). Each browser has a fresh profile of its own; console errors of the platform's own pages
 * (a CSP violation would be one) are collected for the test to judge.
 */

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A browser starts, and pages load, in seconds; a wait that fails says which one. */
export const PAGE_TIMEOUT_MS = 15_000;

export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  /** Console errors the platform's pages reported. */
  errors: string[];
  close(): Promise<void>;
}

/** Browsers for one test file: `open()` starts one, `closeAll()` (in afterEach) ends them. */
export function browsers(platformOrigin: () => string) {
  const started: BrowserSession[] = [];
  return {
    async open(): Promise<BrowserSession> {
      const profile = await mkdtemp(join(tmpdir(), 'platform-browser-'));
      const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
      const page = context.pages()[0] ?? (await context.newPage());
      page.setDefaultTimeout(PAGE_TIMEOUT_MS);
      const errors: string[] = [];
      // Only the platform's pages are ours to judge (the provider's development pages ask for web fonts).
      page.on('console', (message) => {
        if (message.type() === 'error' && page.url().startsWith(platformOrigin())) errors.push(`${message.text()} (${message.location().url})`);
      });
      page.on('pageerror', (error) => errors.push(error.message));
      const session: BrowserSession = {
        context,
        page,
        errors,
        close: async () => {
          await context.close();
          await rm(profile, { recursive: true, force: true });
        },
      };
      started.push(session);
      return session;
    },
    async closeAll(): Promise<void> {
      await Promise.all(started.splice(0).map((session) => session.close()));
    },
  };
}
