/**
 * A throwaway Postgres for tests: Debian's `postgresql` package, a fresh cluster in a temp
 * directory, trust auth, stopped and deleted by `stop()`. As root (CI), the server runs as
 * the `postgres` user the package creates (Postgres refuses to run as root).
 *
 * It listens on a Unix-domain socket in that directory only, never on a TCP port: a port
 * probed free and bound seconds later (after `initdb`) may meanwhile be taken by any other
 * process on the machine, and the start then fails; a socket in a directory of its own
 * cannot clash.
 *
 * Guarantees: `startPostgres()` resolves once the server accepts connections, or rejects
 * with the command's output (e.g. no `postgresql` installed: `.ci/run` installs it).
 */
import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

export interface PostgresServer {
  /** `postgres://postgres@%2Ftmp%2Fshiftlock-pg-…/postgres`: the socket's directory as the host (`pg` reads it so). */
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
  // The command line of one of the server's programs, as the `postgres` user when root.
  const command = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, cmd), ...args]] : [join(bin, cmd), args];
  // Starting runs without blocking the event loop (initdb takes seconds on a loaded machine).
  const run = async (cmd: string, args: string[]): Promise<void> => {
    await execFileAsync(...command(cmd, args), { cwd: dir });
  };
  try {
    await run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
    await run("pg_ctl", [
      "-D",
      data,
      "-l",
      join(dir, "log"),
      "-w",
      "-o",
      // No TCP listener (`listen_addresses` empty); the socket is DIR/.s.PGSQL.5432.
      `-c listen_addresses= -k ${dir} -c fsync=off -c max_connections=50`,
      "start",
    ]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const output = (err as { stderr?: string }).stderr ?? "";
    throw new Error(`could not start Postgres: ${String(err)}\n${output}`);
  }
  return {
    url: `postgres://postgres@${encodeURIComponent(dir)}/postgres`,
    stop: () => {
      try {
        execFileSync(...command("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]), { stdio: "pipe", cwd: dir });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
