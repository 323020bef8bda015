/**
 * The member contract: what every proxy member publishes and the facts about the stack every kind needs.
 * The bottom layer: kinds build members to this shape, and program, engine, health and service read it.
 * No Pulumi, no config: only shapes and the label rules every kind and `egress gc` share.
 */
import { Installation, INSTALLATION_LABEL } from "./installation";

/** What every proxy member publishes, whatever runs it. This is one element of the stack output `proxies`. */
export interface ProxyMember {
    /** `<pool>-<index>`: stable across scaling. */
    id: string;
    pool: string;
    provider: string;
    /** The provider kind (`type` of the entry; components/registry.ts lists them). */
    kind: string;
    index: number;
    host: string;
    port: number;
    /** `http://host:port` — what a crawler sets as its proxy; "" while the host is not known yet. */
    url: string;
    zone: string;
    /**
     * Labels the member's kind knows beyond `zone` (`region`, `country`, where a provider says them). Its
     * pool's `labels` from the config come under these; crawlers select members by both (src/model/labels.ts).
     */
    labels?: Record<string, string>;
    /**
     * True when the proxy requires credentials: its pool's (pool `auth`), or its own (a bring-your-own
     * proxy listed with them). The credentials themselves are never part of a member: they travel only as the
     * secret stack outputs `credentials` (per pool) and `memberCredentials` (per member).
     */
    auth?: boolean;
}

/** A proxy username and password (proxy basic auth). Always a Pulumi secret in state; never logged. */
export interface ProxyCredentials {
    username: string;
    password: string;
}

/**
 * Every credential a stack's proxies require, as its secret outputs hold them: per pool (`auth`), and per
 * member for members whose proxy has its own (these win).
 */
export interface StackCredentials {
    pools: Record<string, ProxyCredentials>;
    members: Record<string, ProxyCredentials>;
}

/**
 * The credentials `member` requires: its own proxy's (a listed static proxy), else its pool's `auth`;
 * undefined when it requires none (or they are not known yet).
 */
export function credentialsOf(
    credentials: StackCredentials,
    member: Pick<ProxyMember, "id" | "pool" | "auth">,
): ProxyCredentials | undefined {
    return member.auth ? (credentials.members[member.id] ?? credentials.pools[member.pool]) : undefined;
}

/** Whose things these are: what every managed thing's labels name, and what `egress gc` and liveness hooks list by. */
export interface OwnerScope {
    project: string;
    stack: string;
    /** The stack's installation id (installation.ts): two installations with the same stack name differ here. */
    installation: string;
}

/** Facts about the stack every member needs (labels for `egress gc`, where local state lives). */
export interface StackContext {
    project: string;
    stack: string;
    /** The stack's installation, read from its state before the program runs (src/engine/installation.ts). */
    installation: Installation;
    /** Project root: cloud-init files are read relative to it. */
    projectRoot: string;
    /** Directory for machine-local runtime state (local proxy pid and log files). */
    stateDir: string;
}

/** A label value GCE and Kubernetes both accept; `egress gc` cleans its filters the same way. */
function labelValue(s: string): string {
    return s
        .toLowerCase()
        .replace(/[^a-z0-9_-]/g, "-")
        .slice(0, 63);
}

/** The owner scope of a stack context (what labels and listings need of it). */
export function ownerOf(ctx: StackContext): OwnerScope {
    return { project: ctx.project, stack: ctx.stack, installation: ctx.installation.id };
}

/**
 * Labels naming the stack and its installation: `egress gc` lists by these, so every managed resource
 * carries them. The installation label is what tells two installations' same-named stacks apart.
 */
export function stackLabels(owner: OwnerScope): Record<string, string> {
    return {
        "egress-project": labelValue(owner.project),
        "egress-stack": labelValue(owner.stack),
        [INSTALLATION_LABEL]: owner.installation,
    };
}

/** Labels of pool-level resources: those of a member without `egress-member`, so member selectors never match them. */
export function poolLabels(ctx: StackContext, pool: string): Record<string, string> {
    return { ...stackLabels(ownerOf(ctx)), "egress-pool": labelValue(pool) };
}

/** The label every resource of one member carries; liveness hooks match on it. */
export const MEMBER_LABEL = "egress-member";

/**
 * Labels carried by every managed resource so `egress gc` can find what state does not know.
 * Values are DNS-label safe (GCE and Kubernetes both restrict label values).
 */
export function memberLabels(ctx: StackContext, pool: string, member: string): Record<string, string> {
    return { ...poolLabels(ctx, pool), [MEMBER_LABEL]: labelValue(member) };
}

/** The member's `egress-member` value, cleaned exactly as its resources were labelled (one home for the rule). */
export function memberLabelValue(m: Pick<ProxyMember, "id">): string {
    return labelValue(m.id);
}

/**
 * Labels for fields a provider cannot change in place (a Deployment's selector and pod template, a GCE
 * boot disk's labels). A stack made before installation ids keeps them without the installation label:
 * a change would replace (or roll) every member, and the upgrade must replace nothing. Labels updated in
 * place carry the id either way.
 */
export function immutableLabels(installation: Installation, labels: Record<string, string>): Record<string, string> {
    if (!installation.legacy) return labels;
    const { [INSTALLATION_LABEL]: _, ...rest } = labels;
    return rest;
}
