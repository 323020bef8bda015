import * as fs from "node:fs";
import * as path from "node:path";
import type { CloudInit } from "./schema";

/** Reads cloud-init user-data byte for byte: inline text as written, or a file relative to the project root. */
export function readCloudInit(ci: CloudInit, projectRoot: string): string {
    if (ci.inline !== undefined) return ci.inline;
    const file = path.resolve(projectRoot, ci.file!);
    return fs.readFileSync(file, "utf8");
}

/**
 * The squid `http_port` a cloud-init document configures, if any. Recognises the port in squid.conf
 * lines carried by write_files/runcmd (`http_port 8080`, `http_port 0.0.0.0:8080`).
 */
export function squidHttpPort(userData: string): number | undefined {
    const m = /(?:^|[\s"'])http_port\s+(?:[\w.\[\]:]*:)?(\d{1,5})\b/m.exec(userData);
    return m ? Number(m[1]) : undefined;
}
