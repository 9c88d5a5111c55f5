import { describe, expect, it } from '@jest/globals';
import { DockerfileParser, type From, type Instruction } from 'dockerfile-ast';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';

// No Docker engine here: the image's rules are checked on the parsed Dockerfile.
const root = join(import.meta.dirname, '..', '..');
const text = readFileSync(join(root, 'Dockerfile'), 'utf8');
const dockerfile = DockerfileParser.parse(text);
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };

interface Stage {
  from: From;
  name: string | null;
  instructions: Instruction[];
}

/** The build stages, each with the instructions up to the next FROM. */
function stages(): Stage[] {
  const result: Stage[] = [];
  for (const instruction of dockerfile.getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const from = instruction as From;
      result.push({ from, name: from.getBuildStage(), instructions: [] });
    } else {
      result.at(-1)?.instructions.push(instruction);
    }
  }
  return result;
}

const all = stages();
const final = all.at(-1)!;
const byName = new Map(all.filter((stage) => stage.name).map((stage) => [stage.name!, stage]));

function keyword(stage: Stage, name: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.getKeyword() === name);
}

function args(instruction: Instruction): string[] {
  return instruction.getArguments().map((argument) => argument.getValue());
}

/** The FROM chain of a stage down to its external base image. */
function baseImageOf(stage: Stage): From {
  const seen = new Set<Stage>();
  let current = stage;
  for (;;) {
    const parent = byName.get(current.from.getImage() ?? '');
    if (!parent || seen.has(parent)) return current.from;
    seen.add(parent);
    current = parent;
  }
}

/** The `npm ci`/`npm install` commands a stage runs. */
function npmInstalls(stage: Stage): string[] {
  return keyword(stage, 'RUN')
    .map((run) => run.getArgumentsContent() ?? '')
    .flatMap((command) => command.split(/&&|;|\n/))
    .map((part) => part.replace(/\\\s*$/, '').trim())
    .filter((part) => /^npm\s+(ci|install|i)\b/.test(part));
}

describe('the Dockerfile', () => {
  it('has several stages and builds FROM pinned images only: an exact version tag and a sha256 digest', () => {
    expect(all.length).toBeGreaterThanOrEqual(3);
    for (const stage of all) {
      if (byName.has(stage.from.getImage() ?? '')) continue;
      expect(stage.from.getImageTag()).toMatch(/^\d+\.\d+\.\d+(-[a-z0-9.-]+)?$/);
      expect(stage.from.getImageDigest()).toMatch(/^sha256:[a-f0-9]{64}$/);
    }
  });

  it('runs a supported Node.js LTS that package.json engines names', () => {
    const base = baseImageOf(final);
    expect(base.getImageName()).toBe('node');
    const version = /^(\d+\.\d+\.\d+)/.exec(base.getImageTag() ?? '')?.[1] ?? '';
    const major = semver.major(version);
    expect(major % 2).toBe(0);
    expect(major).toBeGreaterThanOrEqual(22);
    expect(semver.satisfies(version, packageJson.engines.node)).toBe(true);
  });

  it('runs as a numeric non-root user in the final stage', () => {
    const users = keyword(final, 'USER');
    expect(users).toHaveLength(1);
    const [user, group] = args(users[0]!)[0]!.split(':');
    // Numeric, so Kubernetes can check runAsNonRoot without a user database.
    expect(user).toMatch(/^\d+$/);
    expect(Number(user)).toBeGreaterThan(0);
    expect(group === undefined || Number(group) > 0).toBe(true);
    // Nothing after USER runs as root again.
    const userIndex = final.instructions.indexOf(users[0]!);
    expect(final.instructions.slice(userIndex).filter((instruction) => instruction.getKeyword() === 'RUN')).toEqual([]);
  });

  it("gives that user a writable data directory where the embedded SQLite default lands", () => {
    const setup = keyword(final, 'RUN').map((run) => run.getArgumentsContent() ?? '').join('\n');
    const [user] = args(keyword(final, 'USER')[0]!)[0]!.split(':');
    expect(setup).toMatch(/mkdir -p \/app\/data/);
    expect(setup).toContain(`chown ${user}:`);
    expect(setup).toMatch(/chown \S+ \/app\/data/);
    // WORKDIR /app comes from the base stage: DATABASE_URL's default (./data/…) is /app/data.
    expect(keyword(final, 'WORKDIR')).toEqual([]);
    expect(keyword(all[0]!, 'WORKDIR').map((workdir) => args(workdir)[0])).toEqual(['/app']);
    expect(keyword(final, 'VOLUME').flatMap((volume) => volume.getArgumentsContent() ?? '')).toEqual(['["/app/data"]']);
  });

  it('copies no development dependency into the final stage', () => {
    const copies = keyword(final, 'COPY');
    const fromStages = new Map<string, string[]>();
    for (const copy of copies) {
      const source = (copy as unknown as { getFromFlag(): { getValue(): string | null } | null }).getFromFlag()?.getValue();
      const paths = args(copy).filter((value) => !value.startsWith('--'));
      const sources = paths.slice(0, -1);
      if (!source) {
        // From the build context: only the manifest that says "type": "module".
        expect(sources).toEqual(['package.json']);
        continue;
      }
      fromStages.set(source, [...(fromStages.get(source) ?? []), ...sources]);
    }
    // node_modules only from a stage that installed with --omit=dev and nothing else.
    const dependencyStages = [...fromStages].filter(([, sources]) => sources.some((path) => path.includes('node_modules')));
    expect(dependencyStages).toHaveLength(1);
    const [dependencyStage] = dependencyStages[0]!;
    const installs = npmInstalls(byName.get(dependencyStage)!);
    expect(installs.length).toBeGreaterThan(0);
    for (const install of installs) expect(install).toMatch(/--omit=dev\b/);
    // Every other copy is compiled output, never a whole stage or its node_modules.
    for (const [, sources] of fromStages) {
      for (const path of sources) expect(path).toMatch(/^\/app\/(node_modules|dist)$/);
    }
    // The final stage installs nothing itself.
    expect(npmInstalls(final)).toEqual([]);
  });

  it('compiles everything the service build compiles', () => {
    const build = byName.get('build')!;
    const copied = keyword(build, 'COPY').flatMap((copy) => args(copy).slice(0, -1));
    const tsconfigBuild = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
    for (const path of tsconfigBuild.include) expect(copied).toContain(path);
    for (const path of copied) expect(existsSync(join(root, path))).toBe(true);
  });

  it('has a HEALTHCHECK that asks /healthz with node (no curl in a slim image)', () => {
    const healthchecks = keyword(final, 'HEALTHCHECK');
    expect(healthchecks).toHaveLength(1);
    const content = healthchecks[0]!.getArgumentsContent() ?? '';
    const command = JSON.parse(content.slice(content.indexOf('CMD') + 3).trim()) as string[];
    expect(command[0]).toBe('node');
    expect(command.join(' ')).toContain('/healthz');
    expect(command.join(' ')).toMatch(/AbortSignal\.timeout/);
  });

  it('runs the compiled service with node itself, in exec form, so signals reach it', () => {
    expect(keyword(final, 'ENTRYPOINT')).toEqual([]);
    const commands = dockerfile.getCMDs();
    expect(commands).toHaveLength(1);
    const command = commands[0]!.getJSONStrings().map((part) => part.getJSONValue());
    expect(command).toEqual(['node', 'dist/src/main.js']);
  });

  it('removes the package managers from the final stage', () => {
    const setup = keyword(final, 'RUN').map((run) => run.getArgumentsContent() ?? '').join('\n');
    for (const path of ['/usr/local/lib/node_modules', '/usr/local/bin/npm', '/usr/local/bin/npx']) expect(setup).toContain(path);
  });
});

describe('the .dockerignore', () => {
  const rules = readFileSync(join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  it('is an allow-list: everything is left out, then only what the Dockerfile copies comes back', () => {
    expect(rules[0]).toBe('*');
    const allowed = rules.slice(1).map((rule) => {
      expect(rule.startsWith('!')).toBe(true);
      return rule.slice(1).replace(/\/$/, '');
    });
    const fromContext = all
      .flatMap((stage) => keyword(stage, 'COPY'))
      .filter((copy) => !(copy as unknown as { getFromFlag(): unknown }).getFromFlag())
      .flatMap((copy) => args(copy).slice(0, -1));
    expect(new Set(allowed)).toEqual(new Set(fromContext));
    for (const secret of ['.env', 'data', 'node_modules', 'dist', '.git']) expect(allowed).not.toContain(secret);
  });
});
