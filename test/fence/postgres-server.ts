/**
 * A throwaway Postgres for tests: Debian's `postgresql` package, a fresh cluster in a temp
 * directory, listening on 127.0.0.1 at a free port, trust auth, stopped and deleted by
 * `stop()`. As root (CI), the server runs as the `postgres` user the package creates
 * (Postgres refuses to run as root).
 *
 * Guarantees: `startPostgres()` resolves once the server accepts connections, or rejects
 * with the command's output (e.g. no `postgresql` installed: `.ci/run` installs it).
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string;
  stop(): void;
}

/** The newest installed server's bin directory (`/usr/lib/postgresql/N/bin`). */
function binDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined)
    throw new Error("no Postgres server under /usr/lib/postgresql (apt-get install postgresql)");
  return join(root, newest, "bin");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

function ids(user: string): { uid: number; gid: number } {
  const uid = Number(execFileSync("id", ["-u", user], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", user], { encoding: "utf8" }).trim());
  return { uid, gid };
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), "shiftlock-pg-"));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = ids("postgres");
    chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]): void => {
    const [file, argv] = asRoot
      ? ["runuser", ["-u", "postgres", "--", join(bin, cmd), ...args]]
      : [join(bin, cmd), args];
    execFileSync(file, argv, { stdio: "pipe", cwd: dir });
  };
  const port = await freePort();
  try {
    run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
    run("pg_ctl", [
      "-D",
      data,
      "-l",
      join(dir, "log"),
      "-w",
      "-o",
      `-h 127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c max_connections=50`,
      "start",
    ]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const output = (err as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new Error(`could not start Postgres: ${String(err)}\n${output}`);
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
