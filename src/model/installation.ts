/**
 * The installation identity: a random id a stack gets at its first `up`, kept in its state (the
 * `egress:installation:Identity` resource) and carried by every name and label that two installations
 * could share. Two checkouts with a stack of the same name against one namespace, GCE project or
 * hypervisor then never see each other's members as their own. Pure: no Pulumi, no I/O but randomness.
 */
import * as crypto from "node:crypto";
import { type CatalogueEntry, EXIT } from "./error-catalogue";

/** The label (and metadata field) naming the installation on every managed thing. */
export const INSTALLATION_LABEL = "egress-installation";

/** A stack's installation: its id, and whether the id was adopted from a stack made before ids existed. */
export interface Installation {
    /** 8 lowercase hex digits. */
    id: string;
    /**
     * True when the id is the one a stack made before installation ids implies (legacyInstallationId):
     * its things were named after project and stack only, and immutable fields made then (a Deployment's
     * selector) do not carry the id. Kinds keep those fields as they were, so the upgrade replaces nothing.
     */
    legacy: boolean;
}

const ID = /^[0-9a-f]{8}$/;

/** True for a well-formed installation id. */
export function isInstallationId(s: unknown): s is string {
    return typeof s === "string" && ID.test(s);
}

/**
 * The id a stack made before installation ids has: the 8 hex digits its KVM names already carry
 * (`egress-<sha256(project \0 stack)[0:8]>-`, components/kvm/naming.ts). Adopting it keeps every name.
 */
export function legacyInstallationId(project: string, stack: string): string {
    return crypto.createHash("sha256").update(`${project}\0${stack}`).digest("hex").slice(0, 8);
}

/** A fresh id for a stack's first `up`: 32 random bits (names stay short; a clash needs ~65,000 installations in one place). */
export function newInstallationId(): string {
    return crypto.randomBytes(4).toString("hex");
}

/**
 * The error for a thing that has our name but belongs to another installation: never adopted, never
 * deleted. `thing` says what and where ("Deployment egress/web-0-abc"); `theirs` is undefined when the thing
 * carries no installation at all (made by hand, or by an egress from before installation ids).
 */
export class ForeignInstallationError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "ForeignInstallationError" };
    }
    constructor(
        readonly thing: string,
        readonly ours: string,
        readonly theirs: string | undefined,
    ) {
        super(foreignInstallationMessage(thing, ours, theirs));
        this.name = "ForeignInstallationError";
    }
}

/** ForeignInstallationError's message, for code serialized into a dynamic provider (which throws plain errors). */
export function foreignInstallationMessage(thing: string, ours: string, theirs: string | undefined): string {
    return (
        `${thing} belongs to ${theirs ? `installation ${theirs}` : "no egress installation (it carries no installation id)"}, not to this stack's installation ${ours}: ` +
        "egress leaves it alone. Two installations use the same names here; give one of them another stack name, namespace or host, " +
        "or remove the thing by hand if it is really garbage"
    );
}

/**
 * Whether a thing whose installation label (or metadata field) is `theirs` is ours. A legacy
 * installation also owns things with none: they predate ids (a pod template made before the upgrade).
 * Liveness checks use this; `egress gc` is stricter and removes only things carrying our id.
 */
export function ownedBy(theirs: string | undefined, ours: Installation): boolean {
    return theirs === ours.id || (ours.legacy && (theirs === undefined || theirs === ""));
}
