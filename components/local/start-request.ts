/**
 * What starting a local member takes and gives, shared by the one-process path (process.ts) and the
 * shared hosts (hosts.ts) without an import circle between them.
 */
import type { Installation } from "../../src/model/installation";

export interface StartRequest {
    id: string;
    /** Port to bind; 0 lets the kernel choose a free one. */
    port: number;
    stateDir: string;
    serverScript: string;
    nodePath: string;
    /** Credentials the proxy requires; handed over in a 0600 file the proxy reads and removes at start. */
    auth?: { username: string; password: string };
    /**
     * The stack's installation: carried in the proxy's argv and ready file. A running proxy with this id but
     * another installation is never stopped: the start fails naming both. Unset: no check (tests only).
     */
    installation?: Installation;
    /** More than 1: the member shares a host process with up to this many (hosts.ts). Unset: a process of its own. */
    membersPerProcess?: number;
}

export interface Started {
    pid: number;
    port: number;
}
