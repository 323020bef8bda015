import * as fs from "node:fs";
import { type BackendReport, describeHolder, engineHome, identityAlive, inspectWriterLock } from "../engine";
import { Announcement, announcementFile } from "../state/cluster/announce";

/** One doctor finding (doctor.ts prints them). */
export interface LockFinding {
    check: string;
    ok: boolean;
    detail: string;
    fix?: string;
}

/**
 * Who is changing the stack right now: the writer lock egress processes take, the backend's own Pulumi
 * locks (files, or a PostgreSQL backend's lock rows: `backend`, from inspectBackend), and the service that
 * owns desired state. A live holder is fine (it is working); a dead
 * one's lock is a finding. Read-only: doctor reports, the next writer clears.
 */
export function lockFindings(stack: string, backend: BackendReport): LockFinding[] {
    const home = engineHome();
    const out: LockFinding[] = [];
    const w = inspectWriterLock(home.runDir, stack);
    if (!w) out.push({ check: "writer lock", ok: true, detail: `free (${stack})` });
    else if (w.alive)
        out.push({ check: "writer lock", ok: true, detail: `held by ${describeHolder(w.holder)} (${w.file})` });
    else
        out.push({
            check: "writer lock",
            ok: false,
            detail: `stale: left by ${describeHolder(w.holder)}, which is no longer running (${w.file})`,
            fix: "the next `egress up`, `scale`, `refresh`, `destroy` or `serve` clears it",
        });

    const holder = (l: { pid?: number; hostname?: string }) => `pid ${l.pid ?? "?"}@${l.hostname ?? "?"}`;
    for (const l of backend.locks ?? []) {
        if (l.alive)
            out.push({
                check: "pulumi lock",
                ok: true,
                detail: `held by ${holder(l)}: an update is running (${l.where})`,
            });
        else
            out.push({
                check: "pulumi lock",
                ok: false,
                detail: `stale: ${holder(l)} is gone (${l.where} in the ${backend.kind} backend)`,
                fix:
                    backend.kind === "file"
                        ? "`egress serve` removes it at start; or delete the file once no update runs"
                        : "the next `egress up`, `scale`, `refresh`, `destroy` or `serve` removes it (`pulumi cancel`)",
            });
    }
    if (backend.reachable && !backend.locks)
        out.push({
            check: "pulumi lock",
            ok: true,
            detail: `not listed: egress cannot list an object store's locks; the next operation removes one a dead process of this host left`,
        });

    const file = announcementFile(home.runDir, stack);
    if (fs.existsSync(file)) {
        try {
            const a = JSON.parse(fs.readFileSync(file, "utf8")) as Announcement;
            if (identityAlive(a))
                out.push({
                    check: "service",
                    ok: true,
                    detail: `egress serve pid ${a.pid} owns stack ${stack}'s desired state (${a.url}, socket ${a.socket}); \`egress scale\` goes through it`,
                });
            else
                out.push({
                    check: "service",
                    ok: false,
                    detail: `stale announcement of pid ${a.pid}, which is gone (${file})`,
                    fix: "the next `egress scale` or `serve` removes it",
                });
        } catch (e) {
            out.push({
                check: "service",
                ok: false,
                detail: `unreadable ${file}: ${(e as Error).message}`,
                fix: "remove it if no `egress serve` runs for this stack",
            });
        }
    }
    return out;
}
