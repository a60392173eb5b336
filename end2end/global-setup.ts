import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync, createWriteStream, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";

const repo = resolve(__dirname, "..");

/** The site admin global setup creates (fixtures.ts signs in as it). */
export const SITE_ADMIN = {
  account: "site-admin",
  email: "admin@example.com",
  password: "the e2e site admin's password",
};

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => ok(port));
    });
  });
}

async function waitHealthy(url: string, deadline: number) {
  for (;;) {
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server at ${url} did not become healthy`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Kills the process groups of whatever still runs inside `dir`: the local
 * jobs, notebooks and serving replicas of a console that was just killed.
 * They run in process groups of their own, so they outlive it (its next
 * start would stop them, and a test run has none), and one left spinning
 * slows everything after the suite.
 */
function killLeftovers(dir: string) {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${entry}/cwd`);
    } catch {
      continue; // gone, or not ours to read
    }
    if (cwd !== dir && !cwd.startsWith(`${dir}/`)) continue;
    for (const target of [-Number(entry), Number(entry)]) {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // not a group leader, or already gone
      }
    }
  }
}

/** A console this setup started: its URL, and how to end it. */
type Started = { url: string; end: () => Promise<void> };

/**
 * Starts `bin serve` on a free port with the throwaway data directory
 * `dataDir` and `args` besides, its output appended to `logName` under end2end/.
 */
async function startConsole(bin: string, dataDir: string, env: NodeJS.ProcessEnv, args: string[], logName: string): Promise<Started> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = createWriteStream(join(__dirname, logName));
  const server = spawn(bin, ["serve", "--addr", `127.0.0.1:${port}`, "--data-dir", dataDir, ...args], {
    cwd: repo,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout.pipe(log);
  server.stderr.pipe(log);
  let exited = false;
  server.on("exit", () => (exited = true));
  await waitHealthy(url, Date.now() + 30_000).catch((e) => {
    server.kill("SIGKILL");
    throw new Error(`${e.message} (exited: ${exited}); see end2end/${logName}`);
  });
  return {
    url,
    end: async () => {
      server.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 200));
      if (!exited) server.kill("SIGKILL");
      killLeftovers(dataDir);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The people the sign-on console's identity provider knows (sso.spec.ts). */
export const SSO_PEOPLE = [
  { sub: "alice", password: "alice-pw", email: "alice@example.org", email_verified: true, name: "Alice", groups: ["ml-team", "ml-team-owners"] },
  { sub: "carol", password: "carol-pw", email: "carol@example.org", email_verified: true, name: "Carol", groups: [] },
];

/**
 * A third console for single sign-on (sso.spec.ts), with a real OpenID
 * Connect provider (scripts/oidc-provider) and, where slapd is installed,
 * a real LDAP directory (scripts/ldap-test-server.sh) beside it. Nothing
 * when the provider's packages are not installed (the spec skips).
 */
async function startSingleSignOn(bin: string, env: NodeJS.ProcessEnv): Promise<Started | null> {
  const providerDir = join(repo, "scripts/oidc-provider");
  if (!existsSync(join(providerDir, "node_modules/oidc-provider"))) return null;
  const providerPort = await freePort();
  const issuer = `http://127.0.0.1:${providerPort}`;
  const dataDir = mkdtempSync(join(tmpdir(), "paddlecloud-e2e-sso-"));
  const args = [
    "--oidc-issuer", issuer, "--oidc-client-id", "paddlecloud-console", "--oidc-client-secret", "e2e-secret",
    "--oidc-name", "Example IdP", "--oidc-group", "ml-team=vision:member", "--oidc-group", "ml-team-owners=vision:owner",
  ];
  let ldapDir: string | null = null;
  if (existsSync("/usr/sbin/slapd")) {
    const ldapPort = await freePort();
    ldapDir = mkdtempSync(join(tmpdir(), "paddlecloud-e2e-ldap-"));
    const started = spawnSync(join(repo, "scripts/ldap-test-server.sh"), ["start", ldapDir, String(ldapPort)], { encoding: "utf8" });
    if (started.status !== 0) throw new Error(`slapd did not start: ${started.stdout}${started.stderr}`);
    args.push("--ldap-url", `ldap://127.0.0.1:${ldapPort}`, "--ldap-name", "Example LDAP",
      "--ldap-user-dn", "uid={username},ou=people,dc=example,dc=org", "--ldap-group-base", "ou=groups,dc=example,dc=org",
      "--ldap-group", "ml-team=vision:member", "--ldap-group", "ml-team-owners=vision:owner");
    process.env.PADDLECLOUD_SSO_LDAP = "1";
  }
  const sso = await startConsole(bin, dataDir, env, args, "test-results-sso-server.log");
  const users = join(dataDir, "idp-users.json");
  writeFileSync(users, JSON.stringify(SSO_PEOPLE));
  const log = createWriteStream(join(__dirname, "test-results-idp.log"));
  const provider = spawn("node", [join(providerDir, "provider.mjs")], {
    env: {
      ...process.env, OIDC_PORT: String(providerPort), OIDC_CLIENT_ID: "paddlecloud-console",
      OIDC_CLIENT_SECRET: "e2e-secret", OIDC_REDIRECT_URIS: `${sso.url}/auth/oidc/callback`, OIDC_USERS: users,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  provider.stderr.pipe(log);
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("the identity provider did not start; see end2end/test-results-idp.log")), 30_000);
    provider.stdout.on("data", (chunk: Buffer) => {
      log.write(chunk);
      if (chunk.toString().includes("oidc-provider listening on")) {
        clearTimeout(timer);
        ok();
      }
    });
  });
  return {
    url: sso.url,
    end: async () => {
      provider.kill("SIGTERM");
      if (ldapDir) {
        spawnSync(join(repo, "scripts/ldap-test-server.sh"), ["stop", ldapDir]);
        rmSync(ldapDir, { recursive: true, force: true });
      }
      await sso.end();
    },
  };
}

/**
 * Starts the release server on a free port with a throwaway data directory,
 * unless PADDLECLOUD_URL points at one already running; and a second one
 * as `make run` runs it (PADDLECLOUD_DEFAULTS_URL, for make_run.spec.ts).
 */
export default async function globalSetup() {
  // The Python (with paddlepaddle) that runs the serving replicas, and that
  // serving.spec.ts exports its tiny model with: the one `scripts/setup.sh test`
  // makes for `make test` unless the shell names another. Set here so the
  // workers see it too.
  const tools = process.env.PADDLECLOUD_TOOLS ?? join(homedir(), ".cache/paddlecloud");
  const pyvenv = join(tools, "pyvenv/bin/python");
  if (!process.env.PADDLECLOUD_SERVING_PYTHON && existsSync(pyvenv)) {
    process.env.PADDLECLOUD_SERVING_PYTHON = pyvenv;
  }
  if (process.env.PADDLECLOUD_URL) return;
  const target = resolve(repo, process.env.CARGO_TARGET_DIR ?? "target");
  const bin = process.env.PADDLECLOUD_BIN ?? join(target, "release/paddlecloud");
  // `make run` runs `paddlecloud serve` and nothing else: no variable of
  // ours, no database URL. Only where it listens and keeps its data differ
  // here (a free port, a throwaway folder), so that a run of the tests
  // neither meets a console the user runs nor leaves data in ./data.
  const plain: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("PADDLECLOUD_") && k !== "DATABASE_URL"),
  );
  const defaults = await startConsole(bin, mkdtempSync(join(tmpdir(), "paddlecloud-e2e-defaults-")), plain, [],
    "test-results-defaults-server.log");
  process.env.PADDLECLOUD_DEFAULTS_URL = defaults.url;
  const dataDir = mkdtempSync(join(tmpdir(), "paddlecloud-e2e-"));
  // The embedded SQLite database in the throwaway dir, whatever the shell says.
  const env: NodeJS.ProcessEnv = { ...process.env, RUST_LOG: "info" };
  delete env.DATABASE_URL;
  // Passed on explicitly: without one the console would build its own.
  env.PADDLECLOUD_SERVING_PYTHON = process.env.PADDLECLOUD_SERVING_PYTHON ?? "python3";
  // Notebooks run that venv's jupyterlab (notebooks.spec.ts).
  env.PADDLECLOUD_NOTEBOOK_PYTHON = process.env.PADDLECLOUD_NOTEBOOK_PYTHON ?? env.PADDLECLOUD_SERVING_PYTHON;
  // Sample replicas every second so resource charts move within a test.
  // The executor claims 64 CPUs and 256 GiB: the specs' jobs (the dialog's
  // default alone asks for 5 CPUs), run two at a time, ask for more than a
  // 2-core CI machine has; the queue spec fills these on purpose.
  // A site admin exists before anyone signs up, as in a real deployment: the
  // specs' accounts are ordinary ones, and the admin sets their quotas.
  const admin = spawnSync(
    bin,
    ["admin", "create-account", "--site-admin", "--name", SITE_ADMIN.account, "--email", SITE_ADMIN.email,
      "--password-stdin", "--data-dir", dataDir],
    { cwd: repo, env, input: `${SITE_ADMIN.password}\n`, encoding: "utf8" },
  );
  if (admin.status !== 0) throw new Error(`creating the site admin failed: ${admin.stderr}`);
  // The specs read the mail the console writes to its outbox.
  process.env.PADDLECLOUD_E2E_DATA_DIR = dataDir;
  // Environments are built where the Rust tests keep theirs: the shipped
  // paddle-cpu, which batch scoring runs in, is built once per machine.
  env.PADDLECLOUD_ENVIRONMENTS_DIR = join(tools, "environments");
  const main = await startConsole(bin, dataDir, env,
    ["--sample-secs", "1", "--local-cpus", "64", "--local-memory", "256Gi", "--local-gpus", "2"],
    "test-results-server.log");
  process.env.PADDLECLOUD_URL = main.url;
  const sso = await startSingleSignOn(bin, env);
  if (sso) process.env.PADDLECLOUD_SSO_URL = sso.url;
  return async () => {
    await Promise.all([main.end(), defaults.end(), ...(sso ? [sso.end()] : [])]);
  };
}
