// Types of scripts/dev/idp.mjs for the TypeScript tests that use it.
export declare const DEV_PERSON: Readonly<{ email: string; password: string; name: string; role: string }>;
export declare const DEV_CLIENT_ID: string;
export declare const DEV_API_SCOPE: string;
export declare const DEV_AUDIENCE: string;
export declare const DEV_ROLE_CLAIM: string;
export interface DevIdp {
  issuer: string;
  configure: string;
  close(): Promise<void>;
}
export declare function startDevIdp(options?: { port?: number; platformOrigin?: string; host?: string }): Promise<DevIdp>;
export declare function banner(idp: DevIdp, platformOrigin: string): string;
