import dns2 from 'dns2';

const { Packet } = dns2;

export interface ZoneEntry {
  /**
   * With `txt` beside it, this is what RFC 2181 10.1 forbids and some providers serve anyway:
   * each question then gets its own record type, no alias is followed.
   */
  cname?: string;
  /** One entry per TXT record; an array is a record sent as several character-strings. */
  txt?: (string | string[])[];
  /** Answer every question about this name with this failure instead. */
  fail?: 'SERVFAIL' | 'REFUSED';
}

/** Names (lower-case, no trailing dot) to their records; a name that is absent is NXDOMAIN. */
export type Zone = Record<string, ZoneEntry>;

export interface TestDnsServer {
  /** For `setServers` / `--dns-server`: `127.0.0.1:<port>`. */
  address: string;
  /** Every question asked since the last `serve`, as `TYPE name`. */
  questions: string[];
  serve(zone: Zone): void;
  close(): Promise<void>;
}

// RFC 1035 4.1.1 response codes (dns2 has them at run time as Packet.RCODE, its types do not).
const RCODE = { NXDOMAIN: 3, SERVFAIL: 2, REFUSED: 5 } as const;

const TYPE_NAMES = new Map(Object.entries(Packet.TYPE).map(([name, value]) => [value as number, name]));

/**
 * A real DNS server (UDP, dns2) on loopback and a free port, answering from a zone the test sets.
 * It answers as a recursive resolver would: a question about an alias gets the CNAME record and,
 * unless the question is for the CNAME itself, the target's records of the asked type too.
 */
export async function startDnsServer(): Promise<TestDnsServer> {
  let zone: Zone = {};
  const questions: string[] = [];
  const server = dns2.createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      if (!question) return void send(response);
      questions.push(`${TYPE_NAMES.get(question.type) ?? question.type} ${question.name}`);
      let name = question.name;
      let entry = zone[name.toLowerCase()];
      if (!entry) {
        response.header.rcode = RCODE.NXDOMAIN;
        return void send(response);
      }
      if (entry.fail) {
        response.header.rcode = RCODE[entry.fail];
        return void send(response);
      }
      const record = { class: Packet.CLASS.IN, ttl: 60 };
      for (let hops = 0; entry && hops < 8; hops += 1) {
        if (question.type === Packet.TYPE.TXT && entry.txt) {
          for (const data of entry.txt) response.answers.push(new Packet.Resource({ ...record, name, type: Packet.TYPE.TXT, data }));
          break;
        }
        if (!entry.cname) break;
        response.answers.push(new Packet.Resource({ ...record, name, type: Packet.TYPE.CNAME, domain: entry.cname }));
        if (question.type === Packet.TYPE.CNAME) break;
        name = entry.cname;
        entry = zone[name.toLowerCase()];
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const udp = addresses.udp;
  if (!udp) throw new Error('the test DNS server did not start on UDP');
  return {
    address: `127.0.0.1:${udp.port}`,
    questions,
    serve(next) {
      zone = next;
      questions.length = 0;
    },
    close: async () => {
      await server.close();
    },
  };
}
