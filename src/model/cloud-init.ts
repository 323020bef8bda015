import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";
import type { CloudInit } from "./pool";

/**
 * Reads cloud-init user-data byte for byte: inline text as written (UTF-8), or a file relative to the
 * project root exactly as stored — it may be binary (gzip, which cloud-init accepts), so never decoded.
 */
export function readCloudInit(ci: CloudInit, projectRoot: string): Buffer {
    if (ci.inline !== undefined) return Buffer.from(ci.inline, "utf8");
    return fs.readFileSync(path.resolve(projectRoot, ci.file!));
}

/**
 * User-data as a string that carries its bytes through Pulumi inputs and state (strings only):
 * text that survives a UTF-8 round trip stays as it is (so stacks created before keep identical
 * inputs), anything else travels as base64 with `encoding: "base64"`.
 */
export interface EncodedUserData {
    userData: string;
    encoding?: "base64";
}

export function encodeUserData(bytes: Buffer): EncodedUserData {
    const text = bytes.toString("utf8");
    return Buffer.from(text, "utf8").equals(bytes)
        ? { userData: text }
        : { userData: bytes.toString("base64"), encoding: "base64" };
}

export function decodeUserData(e: EncodedUserData): Buffer {
    return Buffer.from(e.userData, e.encoding === "base64" ? "base64" : "utf8");
}

/** gzip's magic number: cloud-init gunzips user-data that starts with it. */
export function isGzip(bytes: Uint8Array): boolean {
    return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * The text cloud-init will see (gunzipped when gzip), for rules that read it (squid's port, a pod's
 * squid.conf). Undefined when it is not UTF-8 text even then.
 */
export function userDataText(bytes: Buffer): string | undefined {
    let plain = bytes;
    if (isGzip(bytes)) {
        try {
            plain = zlib.gunzipSync(bytes);
        } catch {
            return undefined;
        }
    }
    const text = plain.toString("utf8");
    return Buffer.from(text, "utf8").equals(plain) ? text : undefined;
}

/** The user-data as text cloud-init reads (gunzipped when gzip); throws naming the source when it is not text. */
export function readCloudInitText(ci: CloudInit, projectRoot: string): string {
    const text = userDataText(readCloudInit(ci, projectRoot));
    if (text === undefined) throw new Error(`cloud-init ${ci.file ?? "inline"} is neither UTF-8 text nor gzip of it`);
    return text;
}

/**
 * Every squid `http_port` a cloud-init document configures, in order. Recognises squid.conf lines
 * carried by write_files/runcmd (`http_port 8080`, `http_port 10.0.0.1:8080 name=x`, `http_port
 * [::1]:8080`). Commented lines (squid's `#` and YAML's) configure nothing and are skipped.
 */
export function squidHttpPorts(userData: string): number[] {
    const ports: number[] = [];
    for (const raw of userData.split(/\r?\n/)) {
        // squid comments start a line; YAML comments start at a line start or after whitespace.
        const line = raw.replace(/(^|\s)#.*$/, "");
        for (const m of line.matchAll(/(?:^|[\s"'-])http_port\s+(?:\S*:)?(\d{1,5})(?=$|[\s"',;])/g))
            ports.push(Number(m[1]));
    }
    return ports;
}
