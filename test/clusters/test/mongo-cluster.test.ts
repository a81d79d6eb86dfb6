// Real-MongoDB clusters (target `mongo`), as far as they can be tested without a mongod: the
// providers' availability reasons, option/env/URI handling, the pure command documents, and the
// order of commands the cluster sends, against a scripted stand-in for the servers. None of this
// proves how a real mongod answers: UNTESTED HERE against a server (none on these machines).

import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Document, MongoServerError, Timestamp } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AdminRunner,
  containerMongo,
  containerScripts,
  DEFAULT_IMAGE,
  directUrl,
  externalMongo,
  forcedConfig,
  formatOpTime,
  hasMajority,
  imageFromEnv,
  initiateConfig,
  localMongo,
  type MemberProcess,
  MongoReplicaSet,
  makeMember,
  memberCount,
  membersFromStatus,
  mongodArgs,
  nodeUrl,
  parseCommandText,
  parseMongodVersion,
  parseMongoUri,
  preferConfig,
  type ReplSetConfig,
  RUN_DIR_PREFIX,
  redactUri,
  splitHost,
  uriFromEnv,
  withVoter,
} from '../src/mongo/index.js';
import { hostRuntime } from '../src/runtime.js';

function withEnv(vars: Record<string, string | undefined>): () => void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  set(vars);
  return () => set(saved);
}

const NONE = { TIDEMARK_MONGOD: undefined, TIDEMARK_MONGO_URI: undefined };

describe('availability without a server', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tidemark-mongo-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function script(name: string, body: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, `#!/bin/sh\n${body}\n`);
    await chmod(path, 0o755);
    return path;
  }

  it('local: fails fast naming every way to get MongoDB when nothing is configured', async () => {
    const restore = withEnv(NONE);
    try {
      const started = Date.now();
      const a = await localMongo.available();
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(a.ok).toBe(false);
      const reason = a.ok ? '' : a.reason;
      expect(reason).toMatch(/^TIDEMARK_MONGOD is not set/);
      expect(reason).toContain('TIDEMARK_MONGO_URI');
      expect(reason).toContain('Docker engine');
      await expect(localMongo.start({})).rejects.toThrow(/TIDEMARK_MONGOD is not set/);
    } finally {
      restore();
    }
  });

  it('local: rejects a missing file, a failing binary and one that is not mongod', async () => {
    const failing = await script('failing', 'echo boom >&2; exit 2');
    const other = await script('other', 'echo "some other tool 1.0"');
    const cases: Array<[string, RegExp]> = [
      [join(dir, 'missing'), /is not an executable file/],
      [failing, /does not run: .*boom/s],
      [other, /printed no "db version" line/],
    ];
    for (const [bin, reason] of cases) {
      const restore = withEnv({ TIDEMARK_MONGOD: bin });
      try {
        const a = await localMongo.available();
        expect(a.ok ? 'ok' : a.reason).toMatch(reason);
      } finally {
        restore();
      }
    }
  });

  it('local: a mongod that answers --version is available; one that exits fails start() and leaves nothing', async () => {
    const fake = await script(
      'mongod',
      'if [ "$1" = "--version" ]; then echo "db version v8.0.4"; exit 0; fi\necho "fake mongod args: $*"; exit 3',
    );
    const restore = withEnv({ TIDEMARK_MONGOD: fake });
    const runDirs = async () =>
      (await readdir(hostRuntime.tempRoot)).filter((e) => e.startsWith(RUN_DIR_PREFIX));
    try {
      expect(await localMongo.available()).toEqual({ ok: true });
      const before = await runDirs();
      const err = await localMongo.start({}).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/server exited during start-up/);
      // The log shows the flags the member was started with.
      expect(err?.message).toMatch(/--replSet tidemark-\d+-\d+ --port \d+ --bind_ip 127\.0\.0\.1/);
      expect(err?.message).toContain('--setParameter enableTestCommands=1');
      expect(await runDirs()).toEqual(before);
      await expect(localMongo.start({ replicas: 7 })).rejects.toThrow(/from 0 to 6/);
    } finally {
      restore();
    }
  });

  it('external: explains a missing, unusable or unreachable TIDEMARK_MONGO_URI', async () => {
    const reasonFor = async (uri: string | undefined) => {
      const restore = withEnv({ ...NONE, TIDEMARK_MONGO_URI: uri });
      try {
        const a = await externalMongo.available();
        return a.ok ? 'ok' : a.reason;
      } finally {
        restore();
      }
    };
    expect(await reasonFor(undefined)).toMatch(/^TIDEMARK_MONGO_URI is not set.*TIDEMARK_MONGOD/);
    expect(await reasonFor('mongodb+srv://c.example/?replicaSet=rs')).toMatch(
      /must list the hosts/,
    );
    expect(await reasonFor('postgres://h/')).toMatch(/not a mongodb:\/\/host/);
    expect(await reasonFor('mongodb://u:secret@h1,h2/')).toMatch(/u:\*\*\*@.*no replicaSet=<name>/);
    const started = Date.now();
    // Nothing listens on port 1; the reason comes after the 5 s server selection timeout.
    expect(await reasonFor('mongodb://127.0.0.1:1/?replicaSet=rs')).toMatch(
      /^cannot reach the replica set at mongodb:\/\/127\.0\.0\.1:1/,
    );
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('testcontainers: fails fast without a container engine', async () => {
    const started = Date.now();
    const a = await containerMongo.available();
    if (a.ok) {
      // A machine with an engine: this check has nothing to show; say so instead of passing quietly.
      console.warn(
        'SKIPPED: a container engine is available, so mongo has no fast failure to check',
      );
      return;
    }
    // No engine at all, or an engine whose containers cannot share this machine's network
    // (mongo members need host networking): either way a clear reason, fast.
    expect(a.reason).toMatch(/^no container runtime: |^the container engine runs on /);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('options, environment and URIs', () => {
  it('builds the mongod flags', () => {
    expect(mongodArgs({ setName: 'rs', port: 41000, dbPath: '/d/n0' })).toEqual([
      '--replSet',
      'rs',
      '--port',
      '41000',
      '--bind_ip',
      '127.0.0.1',
      '--dbpath',
      '/d/n0',
      '--setParameter',
      'enableTestCommands=1',
      '--oplogSize',
      '64',
      '--wiredTigerCacheSizeGB',
      '0.25',
      '--nounixsocket',
    ]);
    expect(parseMongodVersion('db version v8.0.4\nBuild Info: {}')).toBe('8.0.4');
    expect(parseMongodVersion('db version v7.0.12-rc1')).toBe('7.0.12-rc1');
    expect(parseMongodVersion('mysqld  Ver 8.0')).toBeUndefined();
  });

  it('counts members and picks the image', () => {
    expect(memberCount({})).toBe(3);
    expect(memberCount({ replicas: 0 })).toBe(1);
    expect(() => memberCount({ replicas: 1.5 })).toThrow(/integer from 0 to 6/);
    expect(imageFromEnv({})).toBe(DEFAULT_IMAGE);
    expect(imageFromEnv({ TIDEMARK_TC_IMAGE_MONGO: 'mongo:7.0' })).toBe('mongo:7.0');
  });

  it('parses and rebuilds mongodb:// URIs', () => {
    const u = parseMongoUri(
      'mongodb://app:p%40ss@h1:27017,h2:27018,[::1]:27019/test?replicaSet=rs&tls=true',
    );
    expect(u.auth).toBe('app:p%40ss');
    expect(u.hosts).toEqual(['h1:27017', 'h2:27018', '[::1]:27019']);
    expect(u.db).toBe('test');
    expect(nodeUrl('h2:27018', 'rs', u)).toBe(
      'mongodb://app:p%40ss@h2:27018/test?replicaSet=rs&tls=true',
    );
    // The convention the conformance target parses:
    expect(nodeUrl('127.0.0.1:41000', 'tidemark-1-1')).toBe(
      'mongodb://127.0.0.1:41000/?replicaSet=tidemark-1-1',
    );
    expect(directUrl('mongodb://127.0.0.1:41000/?replicaSet=rs')).toBe(
      'mongodb://127.0.0.1:41000/?directConnection=true',
    );
    expect(directUrl('mongodb://u:p@h1,h2/admin?replicaSet=rs&tls=true')).toBe(
      'mongodb://u:p@h1/admin?tls=true&directConnection=true',
    );
    expect(splitHost('127.0.0.1:41000')).toEqual({ host: '127.0.0.1', port: 41000 });
    expect(splitHost('[::1]:41000')).toEqual({ host: '[::1]', port: 41000 });
    expect(splitHost('db.example')).toEqual({ host: 'db.example', port: 27017 });
    expect(redactUri('mongodb://u:secret@h/')).toBe('mongodb://u:***@h/');
    const env = uriFromEnv({ TIDEMARK_MONGO_URI: ' mongodb://h1,h2,h3/?replicaSet=rs ' });
    expect(typeof env === 'string' ? env : env.parsed.hosts).toEqual(['h1', 'h2', 'h3']);
  });

  it('parses exec() commands as Extended JSON and refuses what is not a command', () => {
    const doc = parseCommandText('{"find": "c", "filter": {"n": {"$numberLong": "5"}}}');
    expect(doc).toEqual({ find: 'c', filter: { n: 5 } });
    expect(Object.keys(doc)[0]).toBe('find');
    expect(() => parseCommandText('{find: c}')).toThrow(/not a JSON document/);
    expect(() => parseCommandText('[1]')).toThrow(/first key names it/);
    expect(() => parseCommandText('{}')).toThrow(/first key names it/);
  });

  it('formats hello lastWrite.opTime as seconds:increment/term', () => {
    expect(formatOpTime({ ts: new Timestamp({ t: 1700000000, i: 7 }), t: 3 })).toBe(
      '1700000000:7/3',
    );
    expect(() => formatOpTime(undefined)).toThrow(/no lastWrite/);
  });

  it('maps replSetGetStatus members to a primary and secondaries, or says why not', () => {
    const member = (name: string, stateStr: string, health = 1) => ({ name, stateStr, health });
    expect(
      membersFromStatus({
        set: 'rs',
        members: [
          member('h3:1', 'SECONDARY'),
          member('h1:1', 'PRIMARY'),
          member('h2:1', 'SECONDARY'),
        ],
      }),
    ).toEqual({ setName: 'rs', primary: 'h1:1', secondaries: ['h2:1', 'h3:1'] });
    expect(membersFromStatus({ set: 'rs', members: [member('h1:1', 'SECONDARY')] })).toEqual({
      error: 'the replica set has no primary (h1:1 SECONDARY)',
    });
    const oneDown = membersFromStatus({
      set: 'rs',
      members: [
        member('h1:1', 'PRIMARY'),
        member('h2:1', 'SECONDARY'),
        member('h3:1', 'SECONDARY', 0),
      ],
    });
    expect(oneDown).toEqual({ error: expect.stringMatching(/at least 2 healthy secondaries/) });
  });

  it('writes the container scripts around mongod --fork', () => {
    const s = containerScripts(['--replSet', 'rs', '--port', '41000']);
    expect(s.start).toBe(
      'mongod --replSet rs --port 41000 --fork --logpath /tmp/mongod.log --logappend --pidfilepath /tmp/mongod.pid',
    );
    expect(s.boot).toContain(`${s.start}\necho TIDEMARK-READY\nwhile :; do sleep 1; done`);
    expect(s.kill).toMatch(/^kill -9 "\$\(cat \/tmp\/mongod.pid\)"/);
    expect(s.waitGone(1_000)).toMatch(/^for i in \$\(seq 10\)/);
  });
});

describe('replica-set configuration documents', () => {
  const hosts = ['a:1', 'b:1', 'c:1'];
  const initial = { ...initiateConfig('rs', hosts), term: 4 };

  it('initiates with n0 at priority 2', () => {
    expect(initiateConfig('rs', hosts)).toEqual({
      _id: 'rs',
      version: 1,
      members: [
        { _id: 0, host: 'a:1', priority: 2 },
        { _id: 1, host: 'b:1', priority: 1 },
        { _id: 2, host: 'c:1', priority: 1 },
      ],
    });
  });

  it('counts a majority of voters only', () => {
    expect(hasMajority(initial, ['b:1', 'c:1'])).toBe(true);
    expect(hasMajority(initial, ['b:1'])).toBe(false);
    expect(hasMajority(forcedConfig(initial, 'b:1', ['b:1'])!, ['b:1'])).toBe(true);
  });

  it('prefers the promoted member, and changes nothing when it already is preferred', () => {
    const next = preferConfig(initial, 'b:1')!;
    expect(next.version).toBe(2);
    expect(next).not.toHaveProperty('term');
    expect(next.members.map((m) => m.priority)).toEqual([1, 2, 1]);
    expect(preferConfig(next, 'b:1')).toBeUndefined();
  });

  it('forces a config where the running members form the majority', () => {
    const forced = forcedConfig(initial, 'b:1', ['b:1'])!;
    expect(forced.members.map((m) => [m.host, m.priority, m.votes])).toEqual([
      ['a:1', 0, 0],
      ['b:1', 2, 1],
      ['c:1', 0, 0],
    ]);
    expect(forced).not.toHaveProperty('term');
    const back = withVoter(forced, 'c:1')!;
    expect(back.members.map((m) => [m.host, m.priority, m.votes])).toEqual([
      ['a:1', 0, 0],
      ['b:1', 2, 1],
      ['c:1', 1, 1],
    ]);
    expect(withVoter(back, 'c:1')).toBeUndefined();
    // A running member that had lost its vote gets it back in the next forced config.
    const again = forcedConfig(forced, 'b:1', ['b:1', 'c:1'])!;
    expect(again.members.map((m) => [m.host, m.priority, m.votes])).toEqual([
      ['a:1', 0, 0],
      ['b:1', 2, 1],
      ['c:1', 1, 1],
    ]);
    expect(again.version).toBe(forced.version + 1);
  });
});

/**
 * A scripted stand-in for three mongod: enough replica-set behaviour (elections need a majority
 * of voters up, reconfig needs a primary unless forced, shutdown drops the connection) to check
 * what the cluster sends and in which order. It is not MongoDB.
 */
class ScriptedSet {
  readonly log: string[] = [];
  readonly up = new Map<string, boolean>();
  config: ReplSetConfig | undefined;
  primary: string | undefined;
  term = 1;
  testCommands = true;
  private writes = 0;

  proc(host: string): MemberProcess {
    this.up.set(host, true);
    return {
      start: async () => void this.up.set(host, true),
      kill: async () => this.down(host),
      exited: async () => !this.up.get(host),
      running: () => this.up.get(host) === true,
      context: () => `scripted ${host}`,
    };
  }

  private down(host: string): void {
    this.up.set(host, false);
    if (this.primary === host) this.primary = undefined;
  }

  private error(code: number, message: string): MongoServerError {
    return new MongoServerError({ message, errmsg: message, code, ok: 0 });
  }

  run: AdminRunner = async (url, doc) => {
    const host = parseMongoUri(url).hosts[0]!;
    if (!this.up.get(host)) throw new Error(`connect ECONNREFUSED ${host}`);
    const name = Object.keys(doc)[0]!;
    if (name !== 'hello') this.log.push(`${host} ${name}${this.detail(doc)}`);
    const voters = () => this.config!.members.filter((m) => (m.votes ?? 1) > 0);
    switch (name) {
      case 'hello':
        return {
          isWritablePrimary: this.primary === host,
          secondary: this.config !== undefined && this.primary !== host,
          ...(this.primary ? { primary: this.primary } : {}),
          lastWrite: {
            opTime: { ts: new Timestamp({ t: 1700000000, i: ++this.writes }), t: this.term },
          },
        };
      case 'replSetInitiate':
        this.config = doc['replSetInitiate'] as ReplSetConfig;
        return { ok: 1 };
      case 'replSetGetConfig':
        return { config: structuredClone(this.config) };
      case 'replSetStepUp': {
        const upVoters = voters().filter((m) => this.up.get(m.host)).length;
        if (upVoters * 2 <= voters().length) throw this.error(125, 'election failed');
        this.primary = host;
        this.term++;
        return { ok: 1 };
      }
      case 'replSetReconfig': {
        const next = doc['replSetReconfig'] as ReplSetConfig;
        if (!doc['force'] && this.primary !== host) throw this.error(10107, 'not primary');
        if (!doc['force'] && next.version <= this.config!.version) throw this.error(103, 'version');
        this.config = next;
        return { ok: 1 };
      }
      case 'shutdown':
        this.down(host);
        throw new Error('connection closed');
      case 'configureFailPoint':
        if (!this.testCommands) throw this.error(59, "no such command: 'configureFailPoint'");
        return { count: 7, ok: 1 };
      case 'buildInfo':
        return { version: '8.0.4', ok: 1 };
      default:
        return { ok: 1, echo: doc };
    }
  };

  private detail(doc: Document): string {
    if (doc['replSetReconfig']) {
      const c = doc['replSetReconfig'] as ReplSetConfig;
      const members = c.members.map((m) => `${m.host}=${m.priority}/${m.votes ?? 1}`).join(',');
      return `${doc['force'] ? ' force' : ''} v${c.version} ${members}`;
    }
    if (doc['configureFailPoint']) return ` ${doc['configureFailPoint']} ${doc['mode']}`;
    if (doc['waitForFailPoint']) return ` ${doc['waitForFailPoint']} ${doc['timesEntered']}`;
    if (doc['shutdown']) return ` force=${doc['force']}`;
    return '';
  }
}

describe('command sequences (scripted stand-in, not MongoDB)', () => {
  const hosts = ['127.0.0.1:41000', '127.0.0.1:41001', '127.0.0.1:41002'];
  let disposed = 0;

  async function cluster(): Promise<{ set: ScriptedSet; rs: MongoReplicaSet }> {
    const set = new ScriptedSet();
    const members = hosts.map((h, i) => makeMember(i, h, 'rs', set.proc(h)));
    const dispose = async () => {
      disposed++;
      for (const h of hosts) set.up.set(h, false);
    };
    const rs = new MongoReplicaSet('mongo', members, dispose, set.run);
    await rs.initiate('rs');
    set.log.length = 0;
    return { set, rs };
  }

  it('initiates on n0, steps it up, reads the version', async () => {
    const set = new ScriptedSet();
    const members = hosts.map((h, i) => makeMember(i, h, 'rs', set.proc(h)));
    const rs = new MongoReplicaSet('mongo', members, async () => {}, set.run);
    await rs.initiate('rs');
    expect(set.log).toEqual([
      `${hosts[0]} replSetInitiate`,
      `${hosts[0]} replSetStepUp`,
      `${hosts[0]} buildInfo`,
    ]);
    expect(set.config?.members.map((m) => m.priority)).toEqual([2, 1, 1]);
    expect(rs.version).toBe('8.0.4');
    expect(rs.primary().name).toBe('n0');
    expect(rs.replicas().map((n) => n.url)).toEqual([
      'mongodb://127.0.0.1:41001/?replicaSet=rs',
      'mongodb://127.0.0.1:41002/?replicaSet=rs',
    ]);
  });

  it('pauses with the fail point and waits until it was entered once more', async () => {
    const { set, rs } = await cluster();
    await rs.pauseReplay('n1');
    await rs.resumeReplay('n1');
    expect(set.log).toEqual([
      `${hosts[1]} configureFailPoint rsSyncApplyStop alwaysOn`,
      `${hosts[1]} waitForFailPoint rsSyncApplyStop 8`,
      `${hosts[1]} configureFailPoint rsSyncApplyStop off`,
    ]);
    await expect(rs.pauseReplay('n0')).rejects.toThrow('n0 is not a replica');
    set.testCommands = false;
    await expect(rs.pauseReplay('n2')).rejects.toThrow(/enableTestCommands=1/);
  });

  it('promotes with a majority up: stop the old primary, step up, then prefer the new one', async () => {
    const { set, rs } = await cluster();
    await rs.pauseReplay('n1');
    set.log.length = 0;
    await rs.promote('n1');
    expect(set.log).toEqual([
      `${hosts[0]} shutdown force=true`,
      `${hosts[1]} configureFailPoint rsSyncApplyStop off`,
      `${hosts[1]} replSetGetConfig`,
      `${hosts[1]} replSetStepUp`,
      `${hosts[1]} replSetGetConfig`,
      `${hosts[1]} replSetReconfig v2 ${hosts[0]}=1/1,${hosts[1]}=2/1,${hosts[2]}=1/1`,
    ]);
    expect(rs.primary().name).toBe('n1');
    expect(rs.nodes().map((n) => [n.name, n.role, n.running])).toEqual([
      ['n0', 'replica', false],
      ['n1', 'primary', true],
      ['n2', 'replica', true],
    ]);
    expect(Object.keys(await rs.positions())).toEqual(['n1', 'n2']);
    expect((await rs.positions())['n1']).toMatch(/^1700000000:\d+\/3$/);
  });

  it('promotes without a majority by a forced reconfig, and gives votes back on start', async () => {
    const { set, rs } = await cluster();
    await rs.kill('n0');
    await rs.kill('n2');
    await rs.promote('n1');
    expect(set.log).toEqual([
      `${hosts[1]} replSetGetConfig`,
      `${hosts[1]} replSetGetConfig`,
      `${hosts[1]} replSetReconfig force v2 ${hosts[0]}=0/0,${hosts[1]}=2/1,${hosts[2]}=0/0`,
      `${hosts[1]} replSetStepUp`,
    ]);
    set.log.length = 0;
    await rs.start('n2');
    expect(set.log).toEqual([
      `${hosts[1]} replSetGetConfig`,
      `${hosts[1]} replSetGetConfig`,
      `${hosts[1]} replSetReconfig v3 ${hosts[0]}=0/0,${hosts[1]}=2/1,${hosts[2]}=1/1`,
    ]);
    expect(rs.nodes().map((n) => n.running)).toEqual([false, true, true]);
  });

  it('runs exec() commands on the member, and tears down once', async () => {
    const { rs } = await cluster();
    expect(await rs.exec('n2', '{"ping": 1}')).toEqual([{ ok: 1, echo: { ping: 1 } }]);
    await expect(rs.exec('n9', '{"ping": 1}')).rejects.toThrow(/no node 'n9'.*n0, n1, n2/);
    const before = disposed;
    await Promise.all([rs.teardown(), rs.teardown()]);
    await rs.teardown();
    expect(disposed - before).toBe(1);
    expect(rs.nodes().every((n) => !n.running)).toBe(true);
  });
});
