/**
 * The member contract: what every proxy member publishes and the facts about the stack every kind needs.
 * The bottom layer: kinds build members to this shape, and program, engine, health and service read it.
 * No Pulumi, no config: only shapes and the label rules every kind and `egress gc` share.
 */

/** What every proxy member publishes, whatever runs it. This is one element of the stack output `proxies`. */
export interface ProxyMember {
    /** `<pool>-<index>`: stable across scaling. */
    id: string;
    pool: string;
    provider: string;
    /** The provider kind (`type` of the entry; kinds/registry.ts lists them). */
    kind: string;
    index: number;
    host: string;
    port: number;
    /** `http://host:port` — what a crawler sets as its proxy; "" while the host is not known yet. */
    url: string;
    zone: string;
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

/** Facts about the stack every member needs (labels for `egress gc`, where local state lives). */
export interface StackContext {
    project: string;
    stack: string;
    /** Project root: cloud-init files are read relative to it. */
    projectRoot: string;
    /** Directory for machine-local runtime state (local proxy pid and log files). */
    stateDir: string;
}

/** A label value GCE and Kubernetes both accept; `egress gc` cleans its filters the same way. */
function labelValue(s: string): string {
    return s.toLowerCase().replace(/[^a-z0-9_-]/g, "-").slice(0, 63);
}

/** Labels naming the stack: `egress gc` lists by these, so every managed resource carries them. */
export function stackLabels(project: string, stack: string): Record<string, string> {
    return { "egress-project": labelValue(project), "egress-stack": labelValue(stack) };
}

/** Labels of pool-level resources: those of a member without `egress-member`, so member selectors never match them. */
export function poolLabels(ctx: StackContext, pool: string): Record<string, string> {
    return { ...stackLabels(ctx.project, ctx.stack), "egress-pool": labelValue(pool) };
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
export function memberLabelValue(project: string, stack: string, m: Pick<ProxyMember, "pool" | "id">): string {
    // Only project and stack feed the labels; the paths of StackContext do not.
    return memberLabels({ project, stack, projectRoot: "", stateDir: "" }, m.pool, m.id)[MEMBER_LABEL];
}
