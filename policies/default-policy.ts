import type { PolicyDocument } from './policy-document.js';

/**
 * The policy every workbench of an organisation enforces until the organisation publishes its
 * own (answered with `published: false`). Permissive where a wrong guess would only get in the
 * way, careful where it would be hard to take back:
 *
 * - nothing is blocked outright: every runtime and provider, every network host, every
 *   transport for remote control, cloud agents (five at a time per person);
 * - credentials are masked before content leaves the workbench, personal data is flagged, and
 *   `restricted` content never leaves;
 * - a person approves what cannot be undone (destructive tools, medium and high risk remote
 *   requests, MCP servers nobody reviewed, reading the machine's environment or personal
 *   secrets);
 * - agents write only inside the workspace, never push to `main`/`master` directly, and cannot
 *   merge their own pull requests, which need one approval and passing checks;
 * - audit records keep no tool arguments, and memory reads keep only their label (the built-in
 *   rule of `policies/memory-reads.ts`, nothing added or excluded).
 */
export const DEFAULT_POLICY: PolicyDocument = {
  version: 1,
  allowedRuntimes: ['*'],
  allowedProviders: ['*'],
  inference: {},
  settings: {},
  settingsMode: {},
  dlp: {
    classify: true,
    classifier: { provider: '', model: '', endpoint: '', node: '', tags: [] },
    onSecrets: 'redact',
    onPii: 'warn',
    onPromptInjection: 'warn',
    onUnclassified: 'allow',
    blockSensitivity: ['restricted'],
    latencyBudgetMs: 1500,
  },
  approvals: {
    remoteApprovals: { low: 'allow', medium: 'ask', high: 'ask' },
    requireHumanReviewLabels: [],
    decisionApproval: 'none',
  },
  remote: {
    allowTransports: ['ipc', 'lan', 'relay'],
    maxScopes: ['*'],
    idleTimeoutMinutes: 30,
    requireTls: true,
    killSwitchLockedOn: false,
  },
  git: { protectedBranches: ['main', 'master'], requirePullRequest: true },
  agents: { sandbox: 'workspace' },
  network: { allowHosts: [], denyHosts: [], defaultAction: 'allow', enforcement: 'enforce', rules: [] },
  tools: {
    enforcement: 'enforce',
    unlistedServers: 'ask',
    defaults: { reads: 'allow', changes: 'allow', destroys: 'ask' },
    rules: [],
    recordArguments: 'none',
    servers: [],
  },
  secrets: { agentEnvironment: 'allow', machineEnvironment: 'ask', personalSecrets: 'ask' },
  teams: { allowGranted: true, allowPersonal: true, granted: [] },
  pullRequests: {
    requiredApprovals: 1,
    allowSelfMerge: false,
    mergeMethods: ['merge', 'squash', 'rebase'],
    requireChecks: true,
    agentsMayMerge: false,
  },
  audit: { memoryReads: { stores: [], include: [], exclude: [] } },
  cloudAgents: { allowed: true, maxConcurrent: 5 },
};
