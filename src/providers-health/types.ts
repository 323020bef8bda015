import type { Logger } from "pino";
import type { Installation, ProxyMember } from "../model";

/** One verdict about one target of a provider entry (a KVM host, a GCE zone, a Kubernetes namespace). */
export interface CheckVerdict {
    /** What was checked, e.g. the host name, `zone/europe-west1-b`, `namespace/egress`. */
    target: string;
    ok: boolean;
    /** The stage that failed (e.g. `key`, `tcp`, `ssh-auth`, `libvirt`, `credentials`, `rbac`, `api`). Unset when ok. */
    stage?: string;
    /** One sentence an operator can act on. */
    message: string;
    /** Facts gathered on the way (versions, free bytes, counts). Never secrets. */
    details?: Record<string, unknown>;
    /**
     * How long this target's own check took (set by `checkEach`, timed.ts). Unset: the provider's whole
     * check is its time (a checker with one target, or one call for all of them).
     */
    durationMs?: number;
}

/** Checks that one provider entry can do its job. One Checker per entry in `egress:providers`. */
export interface Checker {
    readonly provider: string;
    /** The entry's kind (kinds/registry.ts). */
    readonly kind: string;
    /**
     * Never throws for a failing target: failures are verdicts. Should end when `signal` aborts (the
     * check timeout). A checker with several targets may hand each verdict to `onVerdict` as soon as it
     * is known, so one silent target does not hold back the verdicts of the others.
     */
    check(signal?: AbortSignal, onVerdict?: (verdict: CheckVerdict) => void): Promise<CheckVerdict[]>;
}

/**
 * Builds the Checker for an entry. `entry` comes from the decrypted stack config: secret fields are
 * plain strings here and must never be logged or put into verdicts.
 */
export type CheckerFactory<E = unknown> = (providerName: string, entry: E, options?: CheckerOptions) => Checker;

export interface CheckerOptions {
    /** Per-target timeout in milliseconds (`egress serve --provider-check-timeout`). @default 10000 */
    timeoutMs?: number;
    /** Overrides the API endpoint (tests point GCP/Kubernetes clients at a local server). */
    endpoint?: string;
    /** Where the check's debug lines go (a KVM check logs each virsh call). */
    log?: Logger;
}

/**
 * "Is this member gone?" per kind, for the service's reconcile loop: a cheap look at what really runs,
 * without an engine run. Answers member id → why it is gone, in words; members not in the map are
 * there as far as the hook can tell (their health still comes from probes). Never throws for a member:
 * a hook that cannot tell says nothing about it.
 */
export type GoneCheck = (members: readonly ProxyMember[], signal?: AbortSignal) => Promise<Map<string, string>>;

export interface GoneCheckContext<E = { type: string }> {
    /** The service's run dir (local proxies keep their files under `<runDir>/local/<stack>`). */
    runDir: string;
    /** The Pulumi project (libvirt object names and GCE/Kubernetes labels carry it). */
    project: string;
    stack: string;
    /** The stack's installation: only things it owns (model `ownedBy`) count as a member's. */
    installation: Installation;
    /** The provider entry, decrypted (secret fields are plain strings: never log them). */
    entry: E;
    /** Where the hook's debug lines go (KVM: each virsh call). */
    log?: Logger;
}
