import type { FromSchema } from 'json-schema-to-ts';

/**
 * The policy document a workbench enforces (spec 2.14), kept beside the default policy that is
 * one (policies/default-policy.ts); src/modules/policy/schemas.ts names its parts as components
 * of the OpenAPI document. This one schema validates every publish and describes every answer;
 * the enumerated values the spec leaves open are chosen here and listed in each field's
 * description. Every object is closed (`additionalProperties: false`) except the two the spec
 * calls free-form, `inference` and `settings`, and the maps keyed by name (`settingsMode`,
 * `tools.servers[].tools`): a typo in a publish is refused, naming the field, instead of being
 * stored and silently ignored by every workbench. No rule spans two fields, so a valid override
 * merged over a valid organisation policy is always valid.
 */

const MAX_LIST = 500;

const allowAskDeny = { type: 'string', enum: ['allow', 'ask', 'deny'] } as const;
const auditEnforce = { type: 'string', enum: ['audit', 'enforce'] } as const;
const token = { type: 'string', minLength: 1, maxLength: 200, pattern: '^\\S+$' } as const;
const label = { type: 'string', minLength: 1, maxLength: 200 } as const;

const tokenList = (description: string) =>
  ({ type: 'array', maxItems: MAX_LIST, uniqueItems: true, description, items: { ...token, description: 'One entry.' } }) as const;

export const networkRuleSchema = {
  type: 'object',
  description:
    'One network rule. Rules are tried in order after `denyHosts`; the first whose `host` (and `ports`, when given) matches decides.',
  required: ['host', 'action'],
  properties: {
    host: {
      ...token,
      description: 'Host name (`api.example.com`), wildcard suffix (`*.example.com`, any depth below it), IP address or CIDR block; `*` matches every host.',
    },
    ports: {
      type: 'array',
      maxItems: 100,
      uniqueItems: true,
      description: 'TCP ports the rule applies to; absent or empty: every port.',
      items: { type: 'integer', minimum: 1, maximum: 65535, description: 'A TCP port.' },
    },
    action: { type: 'string', enum: ['allow', 'deny'], description: '`allow` lets the connection through; `deny` blocks it (under `enforcement: audit`, only records it).' },
    comment: { type: 'string', maxLength: 500, description: 'Why the rule exists, for people reading the policy.' },
  },
  additionalProperties: false,
} as const;

export const toolRuleSchema = {
  type: 'object',
  description:
    'One tool rule. Rules are tried in order before the server list and `defaults`; the first whose `server` and `tool` match decides.',
  required: ['server', 'tool', 'action'],
  properties: {
    server: { ...token, description: 'MCP server id (as in `servers[].id`), or `*` for every server.' },
    tool: { ...token, description: 'Tool name; a trailing `*` matches any name with that prefix (`delete_*`), `*` alone every tool.' },
    action: { ...allowAskDeny, description: '`allow`: the agent calls the tool; `ask`: a person approves each call; `deny`: the call is refused.' },
    comment: { type: 'string', maxLength: 500, description: 'Why the rule exists, for people reading the policy.' },
  },
  additionalProperties: false,
} as const;

export const toolServerSchema = {
  type: 'object',
  description: 'An MCP server the organisation has reviewed.',
  required: ['id', 'name', 'fingerprint', 'status', 'tools'],
  properties: {
    id: { ...token, description: 'Stable id of the server, used by `rules[].server`.' },
    name: { ...label, description: 'Display name.' },
    fingerprint: {
      type: 'string',
      maxLength: 200,
      description: 'Fingerprint of the reviewed server (e.g. `sha256:<hex>` of its package or manifest); a server that presents another one counts as unlisted. Empty: not pinned.',
    },
    status: {
      type: 'string',
      enum: ['published', 'pending', 'blocked'],
      description: '`published`: reviewed and usable under this policy; `pending`: under review, treated as unlisted; `blocked`: never started.',
    },
    tools: {
      type: 'object',
      maxProperties: 1000,
      description: 'The reviewed tools of the server, by tool name. A tool not named here is governed by `defaults` under its own class, or `ask` when its class is unknown.',
      propertyNames: { maxLength: 200 },
      additionalProperties: {
        type: 'object',
        description: 'What a tool does and, optionally, what this policy decides for it.',
        required: ['kind'],
        properties: {
          kind: { type: 'string', enum: ['reads', 'changes', 'destroys'], description: 'The class of the tool, which picks its entry in `tools.defaults`.' },
          action: { ...allowAskDeny, description: 'Overrides `tools.defaults` for this tool; absent: the default of its `kind` applies.' },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const;

export const teamGrantSchema = {
  type: 'object',
  description: "An agent provider's team or workspace the organisation grants its members for work under this policy.",
  required: ['provider', 'team', 'members'],
  properties: {
    provider: { ...token, description: 'Provider id (as in `allowedProviders`).' },
    team: { ...label, description: "The provider's id of the team or workspace." },
    members: {
      type: 'array',
      maxItems: MAX_LIST,
      uniqueItems: true,
      description: 'Person ids (`usr_…`) the grant is for; empty: every member of the organisation.',
      items: { type: 'string', pattern: '^usr_[0-9a-z]+$', description: 'A person id.' },
    },
    comment: { type: 'string', maxLength: 500, description: 'What the grant is for, for people reading the policy.' },
  },
  additionalProperties: false,
} as const;

export const policyDocumentSchema = {
  type: 'object',
  description:
    'The effective policy a workbench enforces (spec 2.14). Published whole for an organisation; a project override is a part of it, merged over the organisation\'s (objects key by key, arrays and values replaced).',
  required: [
    'version',
    'allowedRuntimes',
    'allowedProviders',
    'inference',
    'settings',
    'settingsMode',
    'dlp',
    'approvals',
    'remote',
    'git',
    'agents',
    'network',
    'tools',
    'secrets',
    'teams',
    'pullRequests',
    'cloudAgents',
  ],
  properties: {
    version: { type: 'integer', const: 1, description: 'Version of the document format: `1`.' },
    source: {
      type: 'string',
      enum: ['default', 'organisation', 'project'],
      description:
        "Set by the service on every answer, ignored in a publish: `default` (nothing published; the service's defaults), `organisation` (the organisation's published policy), `project` (a project's override merged over it).",
    },
    allowedRuntimes: tokenList('Agent runtimes a workbench may start (runtime ids); `*` allows every runtime, empty allows none.'),
    allowedProviders: tokenList('Model and agent providers a workbench may use (provider ids); `*` allows every provider, empty allows none.'),
    inference: {
      type: 'object',
      description: 'Inference settings handed to the workbench as they are (free-form; the service does not read them).',
      additionalProperties: true,
    },
    settings: {
      type: 'object',
      description: 'Workbench settings by name, handed to the workbench as they are (free-form).',
      additionalProperties: true,
    },
    settingsMode: {
      type: 'object',
      maxProperties: 1000,
      description: 'How each setting of `settings` applies, by setting name; a setting not named here is `default`.',
      propertyNames: { maxLength: 200 },
      additionalProperties: {
        type: 'string',
        enum: ['default', 'locked'],
        description: '`default`: the value is where the workbench starts and the person may change it; `locked`: the value applies and the person cannot change it.',
      },
    },
    dlp: {
      type: 'object',
      description: 'Data loss prevention: what is done with content before it leaves the workbench.',
      required: ['classify', 'classifier', 'onSecrets', 'onPii', 'onPromptInjection', 'onUnclassified', 'blockSensitivity', 'latencyBudgetMs'],
      properties: {
        classify: { type: 'boolean', description: 'Classify outgoing content (sensitivity and tags) before it is sent.' },
        classifier: {
          type: 'object',
          description: 'The classifier used when `classify` is on. Empty strings mean "not set": the workbench uses its built-in classifier.',
          required: ['provider', 'model', 'endpoint', 'node', 'tags'],
          properties: {
            provider: { type: 'string', maxLength: 200, description: 'Provider id that runs the classifier; empty: built in.' },
            model: { type: 'string', maxLength: 200, description: 'Model the classifier uses; empty: the provider\'s default.' },
            endpoint: {
              type: 'string',
              maxLength: 2000,
              pattern: '^(https?://\\S+)?$',
              description: 'HTTP(S) address of a classifier service; empty: none.',
            },
            node: { type: 'string', maxLength: 200, description: 'Id of an organisation node that runs the classifier; empty: none.' },
            tags: tokenList('Tags the classifier may assign to content (e.g. `source-code`, `customer-data`).'),
          },
          additionalProperties: false,
        },
        onSecrets: {
          type: 'string',
          enum: ['allow', 'warn', 'redact', 'block'],
          description: 'Content holding credentials: `allow` sends it; `warn` sends it and tells the person; `redact` sends it with the secrets masked; `block` does not send it.',
        },
        onPii: {
          type: 'string',
          enum: ['allow', 'warn', 'redact', 'block'],
          description: 'Content holding personal data; values as for `onSecrets`.',
        },
        onPromptInjection: {
          type: 'string',
          enum: ['allow', 'warn', 'redact', 'block'],
          description: 'Content that looks like a prompt injection; `redact` removes the suspicious part; values otherwise as for `onSecrets`.',
        },
        onUnclassified: {
          type: 'string',
          enum: ['allow', 'warn', 'redact', 'block'],
          description: 'Content the classifier could not classify within `latencyBudgetMs` (or at all); values as for `onSecrets`.',
        },
        blockSensitivity: {
          type: 'array',
          maxItems: 4,
          uniqueItems: true,
          description: 'Sensitivity levels whose content is never sent.',
          items: {
            type: 'string',
            enum: ['public', 'internal', 'confidential', 'restricted'],
            description: 'A sensitivity level, from least to most sensitive: `public`, `internal`, `confidential`, `restricted`.',
          },
        },
        latencyBudgetMs: {
          type: 'integer',
          minimum: 0,
          maximum: 60000,
          description: 'Longest the classifier may take per item, in milliseconds, before the content counts as unclassified.',
        },
      },
      additionalProperties: false,
    },
    approvals: {
      type: 'object',
      description: 'Who approves what an agent wants to do.',
      required: ['remoteApprovals', 'requireHumanReviewLabels', 'decisionApproval'],
      properties: {
        remoteApprovals: {
          type: 'object',
          description: 'Requests that arrive over a remote session (mobile app, relay), by risk level.',
          required: ['low', 'medium', 'high'],
          properties: {
            low: { ...allowAskDeny, description: 'Low-risk requests: `allow` runs them; `ask` waits for the person to approve remotely; `deny` refuses them (they must be done at the workbench).' },
            medium: { ...allowAskDeny, description: 'Medium-risk requests; values as for `low`.' },
            high: { ...allowAskDeny, description: 'High-risk requests; values as for `low`.' },
          },
          additionalProperties: false,
        },
        requireHumanReviewLabels: tokenList('Labels that, on a task or pull request, require a person to review the agent\'s work before it goes further.'),
        decisionApproval: {
          type: 'string',
          enum: ['none', 'self', 'peer'],
          description: 'Approval of decisions an agent records: `none` needs none; `self` the person who runs the agent confirms; `peer` another member of the organisation confirms.',
        },
      },
      additionalProperties: false,
    },
    remote: {
      type: 'object',
      description: 'Remote control of a workbench.',
      required: ['allowTransports', 'maxScopes', 'idleTimeoutMinutes', 'requireTls', 'killSwitchLockedOn'],
      properties: {
        allowTransports: {
          type: 'array',
          maxItems: 3,
          uniqueItems: true,
          description: 'Transports a remote session may use; empty: remote control is off.',
          items: {
            type: 'string',
            enum: ['ipc', 'lan', 'relay'],
            description: '`ipc`: local processes on the same machine; `lan`: the local network; `relay`: through this service.',
          },
        },
        maxScopes: tokenList('The most a remote session may be granted (Control API scopes, e.g. `tasks:read`, `tasks:write`); `*`: no limit beyond the person\'s own.'),
        idleTimeoutMinutes: { type: 'integer', minimum: 1, maximum: 10080, description: 'A remote session idle this long ends.' },
        requireTls: { type: 'boolean', description: 'Refuse remote sessions that are not encrypted with TLS (`lan`).' },
        killSwitchLockedOn: { type: 'boolean', description: 'The remote kill switch is on and the person cannot turn it off: no remote session is accepted.' },
      },
      additionalProperties: false,
    },
    git: {
      type: 'object',
      description: 'What agents may do with git.',
      required: ['protectedBranches', 'requirePullRequest'],
      properties: {
        protectedBranches: tokenList('Branches (names, or patterns with `*`) agents never push to directly.'),
        requirePullRequest: { type: 'boolean', description: 'Agent changes reach protected branches only through pull requests.' },
      },
      additionalProperties: false,
    },
    agents: {
      type: 'object',
      description: 'How agents run.',
      required: ['sandbox'],
      properties: {
        sandbox: {
          type: 'string',
          enum: ['off', 'workspace', 'isolated'],
          description: '`off`: agents run with the person\'s rights; `workspace`: agents write only inside the workspace; `isolated`: agents run in an isolated environment (container or VM) with no access to the host.',
        },
      },
      additionalProperties: false,
    },
    network: {
      type: 'object',
      description:
        'Outgoing connections of agents and tools. A connection is decided by the first of: a `denyHosts` match (deny), the first matching rule, an `allowHosts` match (allow), `defaultAction`.',
      required: ['allowHosts', 'denyHosts', 'defaultAction', 'enforcement', 'rules'],
      properties: {
        allowHosts: tokenList('Hosts always allowed (forms as in `rules[].host`).'),
        denyHosts: tokenList('Hosts always denied, before anything else (forms as in `rules[].host`).'),
        defaultAction: { type: 'string', enum: ['allow', 'deny'], description: 'Connections nothing else decided: `allow` or `deny`.' },
        enforcement: { ...auditEnforce, description: '`audit`: denied connections are recorded but go through; `enforce`: they are blocked.' },
        rules: { type: 'array', maxItems: MAX_LIST, description: 'Network rules, tried in order.', items: networkRuleSchema },
      },
      additionalProperties: false,
    },
    tools: {
      type: 'object',
      description:
        'MCP tools. A call is decided by the first of: a server with status `blocked` (deny), the first matching rule, the tool\'s own `action` in `servers`, `unlistedServers` for a server not published here, `defaults` by the tool\'s class.',
      required: ['enforcement', 'unlistedServers', 'defaults', 'rules', 'recordArguments', 'servers'],
      properties: {
        enforcement: { ...auditEnforce, description: '`audit`: refusals are recorded but the calls go through; `enforce`: they are applied.' },
        unlistedServers: { ...allowAskDeny, description: 'Servers not published in `servers`: `allow` uses them; `ask` asks the person before the first use; `deny` never starts them.' },
        defaults: {
          type: 'object',
          description: 'Tool calls no rule or server entry decided, by the class of the tool.',
          required: ['reads', 'changes', 'destroys'],
          properties: {
            reads: { ...allowAskDeny, description: 'Tools that only read: `allow`, `ask` (a person approves each call) or `deny`.' },
            changes: { ...allowAskDeny, description: 'Tools that change things; values as for `reads`.' },
            destroys: { ...allowAskDeny, description: 'Tools that delete or cannot be undone; values as for `reads`.' },
          },
          additionalProperties: false,
        },
        rules: { type: 'array', maxItems: MAX_LIST, description: 'Tool rules, tried in order.', items: toolRuleSchema },
        recordArguments: {
          type: 'string',
          enum: ['none', 'redacted', 'full'],
          description: 'What audit records keep of tool call arguments: `none`; `redacted` (with secrets and personal data masked); `full`.',
        },
        servers: { type: 'array', maxItems: MAX_LIST, description: 'MCP servers the organisation has reviewed.', items: toolServerSchema },
      },
      additionalProperties: false,
    },
    secrets: {
      type: 'object',
      description: 'Which secrets an agent may read.',
      required: ['agentEnvironment', 'machineEnvironment', 'personalSecrets'],
      properties: {
        agentEnvironment: { ...allowAskDeny, description: 'Secrets configured for agents in the workspace: `allow`, `ask` (the person approves each use) or `deny`.' },
        machineEnvironment: { ...allowAskDeny, description: "The machine's environment variables; values as for `agentEnvironment`." },
        personalSecrets: { ...allowAskDeny, description: "The person's own stored secrets (keychain, vault); values as for `agentEnvironment`." },
      },
      additionalProperties: false,
    },
    teams: {
      type: 'object',
      description: 'Which provider accounts agents may run under.',
      required: ['allowGranted', 'allowPersonal', 'granted'],
      properties: {
        allowGranted: { type: 'boolean', description: 'Members may use the teams the organisation grants in `granted`.' },
        allowPersonal: { type: 'boolean', description: "Members may use their personal provider accounts." },
        granted: { type: 'array', maxItems: MAX_LIST, description: 'Teams the organisation grants.', items: teamGrantSchema },
      },
      additionalProperties: false,
    },
    pullRequests: {
      type: 'object',
      description: 'Pull requests that agents open.',
      required: ['requiredApprovals', 'allowSelfMerge', 'mergeMethods', 'requireChecks', 'agentsMayMerge'],
      properties: {
        requiredApprovals: { type: 'integer', minimum: 0, maximum: 10, description: 'Approvals by people needed before merging.' },
        allowSelfMerge: { type: 'boolean', description: 'The person who ran the agent may merge its pull request themselves.' },
        mergeMethods: {
          type: 'array',
          minItems: 1,
          maxItems: 3,
          uniqueItems: true,
          description: 'Merge methods allowed.',
          items: { type: 'string', enum: ['merge', 'squash', 'rebase'], description: '`merge` (a merge commit), `squash` or `rebase`.' },
        },
        requireChecks: { type: 'boolean', description: 'Required checks must pass before merging.' },
        agentsMayMerge: { type: 'boolean', description: 'An agent may merge a pull request itself once the other conditions hold.' },
      },
      additionalProperties: false,
    },
    audit: {
      type: 'object',
      description:
        'What the service keeps of the audit records workbenches upload. Optional: a document published without it gets the built-in rule of `policies/memory-reads.ts` alone.',
      required: ['memoryReads'],
      properties: {
        memoryReads: {
          type: 'object',
          description:
            'Which audit actions are memory reads, kept by their label only (their `details` and `target` are dropped on receipt). ' +
            'Built in: an action naming a memory store (`memory`, `knowledge`, `kb`, `vector`, `embedding`, `rag`, `semantic`, …, or a provider such as `mem0`, `zep`, `letta`, `langmem`) and a read verb (`read`, `get`, `search`, `query`, `list`, `recall`, `retrieve`, `fetch`, `lookup`, `export`, `dump`, …), read as words in any order, case, separators and glued words ignored (an action that also writes, `memory.get_or_create`, is a read): `memory.read`, `read_memory`, `memory.lookUp`, `memory.retrieval`, `mem0.search`, `kb.search`, `export.memories`. ' +
            'Patterns are written like actions; `*` stands for any run of characters (`kb.*`, `*recall*`). `exclude` wins over `include`, which wins over the built-in rule.',
          required: ['stores', 'include', 'exclude'],
          properties: {
            stores: {
              type: 'array',
              maxItems: 100,
              uniqueItems: true,
              description: 'Further words naming memory-like stores whose reads count as memory reads, e.g. `journal`.',
              items: { type: 'string', minLength: 1, maxLength: 50, pattern: '^[A-Za-z0-9]+$', description: 'A word (letters and digits).' },
            },
            include: {
              type: 'array',
              maxItems: 100,
              uniqueItems: true,
              description: 'Action patterns that are always memory reads, e.g. `assistant.context.get`, `notes.search`.',
              items: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9*._:/ -]+$', description: 'An action pattern.' },
            },
            exclude: {
              type: 'array',
              maxItems: 100,
              uniqueItems: true,
              description: "Action patterns that are never memory reads, whatever their words say (their content is kept, redacted of credentials), e.g. `memory.list_sizes`.",
              items: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9*._:/ -]+$', description: 'An action pattern.' },
            },
          },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    cloudAgents: {
      type: 'object',
      description: "Runs sent to providers' cloud agents (`POST /cloud-agents/v1/runs` checks these).",
      required: ['allowed', 'maxConcurrent'],
      properties: {
        allowed: { type: 'boolean', description: 'Cloud agent runs may be registered at all.' },
        maxConcurrent: {
          type: 'integer',
          minimum: 1,
          maximum: 1000,
          description: 'Most runs one person may have going at once (registered, not ended, not expired).',
        },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

export type PolicyDocument = FromSchema<typeof policyDocumentSchema>;
