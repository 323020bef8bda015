import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as tls from "node:tls";
import type { Logger } from "pino";

/**
 * The certificate and key the API and the gateway's TLS port serve (`--tls-cert`, `--tls-key`): read and
 * checked at start, and again on SIGHUP, when every TLS listener takes the new pair
 * (`tls.Server#setSecureContext`) without dropping a connection. A pair that fails to load is reported
 * naming the flag and the file, never with the key's content, and a failed reload keeps the pair in use.
 */

export interface TlsFiles {
    certFile: string;
    keyFile: string;
}

export interface TlsPair {
    cert: Buffer;
    key: Buffer;
    /** The certificate's SHA-256 fingerprint (public; what a client pinning it compares). */
    fingerprint: string;
    /** When the certificate expires (ISO 8601). */
    validTo: string;
}

/** Reads `files` and checks they are a PEM certificate (chain) and its own private key. */
export function readTlsPair(files: TlsFiles): TlsPair {
    const read = (flag: string, file: string) => {
        try {
            return fs.readFileSync(file);
        } catch (e) {
            const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
            throw new Error(`${flag} ${file}: the file cannot be read (${code})`);
        }
    };
    const cert = read("--tls-cert", files.certFile);
    const key = read("--tls-key", files.keyFile);
    let x509: crypto.X509Certificate;
    try {
        x509 = new crypto.X509Certificate(cert);
    } catch {
        throw new Error(
            `--tls-cert ${files.certFile} is not a PEM certificate: it must start with -----BEGIN CERTIFICATE----- (the server's certificate first, then any intermediates)`,
        );
    }
    try {
        crypto.createPrivateKey(key);
    } catch {
        // The parser's message is left out: it could quote the file.
        throw new Error(
            `--tls-key ${files.keyFile} is not an unencrypted PEM private key (-----BEGIN PRIVATE KEY----- or -----BEGIN RSA/EC PRIVATE KEY-----)`,
        );
    }
    if (!x509.checkPrivateKey(crypto.createPrivateKey(key)))
        throw new Error(
            `--tls-key ${files.keyFile} is not the private key of the certificate in --tls-cert ${files.certFile}`,
        );
    tls.createSecureContext({ cert, key }); // what the listeners will do: anything else it refuses, now
    return { cert, key, fingerprint: x509.fingerprint256, validTo: new Date(x509.validTo).toISOString() };
}

/** What a reload did: the pair in use now, or why the old one stays. */
export type TlsReload = { ok: true; fingerprint: string; validTo: string } | { ok: false; error: string };

/**
 * Reads `files` again and gives the pair to every listener in `servers`; logs the outcome (fingerprint
 * and expiry, or the error naming the file).
 */
export function reloadTls(files: TlsFiles, servers: () => tls.Server[], log: Logger): TlsReload {
    let pair: TlsPair;
    try {
        pair = readTlsPair(files);
    } catch (e) {
        const error = (e as Error).message;
        log.error({ error }, "TLS reload failed: the certificate and key in use stay");
        return { ok: false, error };
    }
    for (const server of servers()) server.setSecureContext({ cert: pair.cert, key: pair.key });
    log.info({ fingerprint: pair.fingerprint, validTo: pair.validTo }, "TLS certificate reloaded");
    return { ok: true, fingerprint: pair.fingerprint, validTo: pair.validTo };
}
