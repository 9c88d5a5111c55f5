import { isIP } from 'node:net';
import { InvalidArgumentError, type Command } from 'commander';
import { discover, DiscoveryError, type DiscoverOptions } from '../modules/discovery/client.js';

export interface DiscoverCommandDeps {
  /** Fixed options for every run (tests pass `allowHttpLoopback` and `cnamePort` here). */
  options?: Omit<DiscoverOptions, 'dnsServers'>;
  /** Where the JSON result goes; stdout by default. */
  write?: (text: string) => void;
}

/**
 * `discover <email> [--dns-server <host:port>]...`: what a workbench does at sign-in, from the
 * command line, so an administrator can check the domain's DNS before people depend on it.
 * Success prints `{ baseUrl, source, document }` as JSON on stdout; a refusal prints one line
 * on stderr and exits 1 (through `command.error`, so an `exitOverride` sees it).
 */
export function registerDiscoverCommand(program: Command, deps: DiscoverCommandDeps = {}): Command {
  const write = deps.write ?? ((text: string) => void process.stdout.write(text));
  return program
    .command('discover')
    .description("Find a work email's platform through DNS (platform-discover.<domain>) and print its discovery document")
    .argument('<email>', 'a work email address, e.g. someone@example.com')
    .option('--dns-server <host:port>', 'ask this DNS server instead of the system ones (an IP address, optionally with a port); repeatable', collectDnsServer, [])
    .action(async function (this: Command, email: string, flags: { dnsServer: string[] }) {
      const options: DiscoverOptions = { ...deps.options };
      if (flags.dnsServer.length > 0) options.dnsServers = flags.dnsServer;
      try {
        write(`${JSON.stringify(await discover(email, options), null, 2)}\n`);
      } catch (error) {
        if (!(error instanceof DiscoveryError)) throw error;
        this.error(`error: ${error.code}: ${error.message}`, { exitCode: 1, code: `discover.${error.code}` });
      }
    });
}

/** `node:dns` takes IP addresses only: `1.2.3.4`, `1.2.3.4:53`, `::1`, `[::1]`, `[::1]:53`. Refused here, before any lookup. */
function collectDnsServer(value: string, previous: string[]): string[] {
  if (!isDnsServer(value)) {
    throw new InvalidArgumentError('expected an IP address with an optional port, e.g. 127.0.0.1:5353 or [::1]:5353');
  }
  return [...previous, value];
}

function isDnsServer(value: string): boolean {
  if (isIP(value) !== 0) return true;
  const v6 = /^\[([^\]]+)\](?::(\d{1,5}))?$/u.exec(value);
  const v4 = /^([^:[\]]+):(\d{1,5})$/u.exec(value);
  const [address, port] = v6 ? [v6[1]!, v6[2]] : v4 ? [v4[1]!, v4[2]] : ['', undefined];
  const validPort = port === undefined || (Number(port) >= 1 && Number(port) <= 65_535);
  return validPort && isIP(address) === (v6 ? 6 : 4);
}
