import { memberLabels } from "../../components/member";
import type { ProxyMember } from "../../components/member";

/** The label every resource of one member carries (components/member.ts `memberLabels`); the hooks match on it. */
export const MEMBER_LABEL = "egress-member";

/** The member's `egress-member` value, cleaned exactly as its resources were labelled (one home for the rule). */
export function memberLabelValue(project: string, stack: string, m: Pick<ProxyMember, "pool" | "id">): string {
    // Only project and stack feed the labels; the paths of StackContext do not.
    return memberLabels({ project, stack, projectRoot: "", stateDir: "" }, m.pool, m.id)[MEMBER_LABEL];
}
